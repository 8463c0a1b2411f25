// The real `faultline agent` around real children: a shell that forks a rank,
// a child that outlives it, a stop signal passed on, a Slurm task's variables.
// Every child waits for what it needs to see (a file, an event), never a clock.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/process.h"

namespace faultline::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr auto kLimit = 60000ms;

std::vector<std::string> agentFiles(const std::string& out, const std::string& node) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(out + "/nodes/" + node, ec)) {
    const std::string name = e.path().filename();
    if (name.rfind("agent-", 0) == 0) files.push_back(e.path());
  }
  return files;
}

std::vector<json> events(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    out.push_back(json::parse(line));  // a line that is not JSON fails the test here
  }
  return out;
}

std::vector<json> ofKind(const std::vector<json>& ev, const std::string& kind) {
  std::vector<json> out;
  for (const auto& e : ev) {
    if (e.at("event") == kind) out.push_back(e);
  }
  return out;
}

// The one events file of `node`, parsed, with the fields every event has checked.
std::vector<json> onlyEvents(const std::string& out, const std::string& node, pid_t agent) {
  const auto files = agentFiles(out, node);
  EXPECT_EQ(files.size(), 1u);
  if (files.empty()) return {};
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "agent-" + std::to_string(agent) + ".jsonl");
  auto ev = events(files[0]);
  for (const auto& e : ev) {
    EXPECT_TRUE(e.contains("t_ns") && e["t_ns"].is_number_integer()) << e;
    EXPECT_EQ(e.value("node", ""), node) << e;
    EXPECT_TRUE(e.contains("host")) << e;
    EXPECT_EQ(e.value("agent_pid", 0), agent) << e;
  }
  if (!ev.empty()) {
    EXPECT_EQ(ev.front()["event"], "agent_start");
    EXPECT_EQ(ev.back()["event"], "agent_exit");
  }
  return ev;
}

// A script that waits until the agent has recorded an event with `field`
// (matched with its JSON quotes, which the agent_start line's copy of a command
// line never has unescaped), so a child lives exactly until it has been seen.
std::string waitForEventScript(const TempDir& dir, const std::string& out, const std::string& node,
                               const std::string& field) {
  const std::string path = dir / "wait-for-event.sh";
  std::ofstream(path) << "until grep -q '\"" << field << "\":' " << out << "/nodes/" << node
                      << "/agent-*.jsonl 2>/dev/null; do sleep 0.01; done\n";
  return path;
}

bool isTestVar(std::string_view key) {
  return key.rfind("SLURM", 0) == 0 || key == "RANK" || key == "LOCAL_RANK" || key == "FAULTLINE_RUN_DIR" ||
         key == "FAULTLINE_NODE" || key == "FAULTLINE_RUN_ID";
}

pid_t startAgent(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                 const std::string& stderr_path) {
  SpawnOptions o;
  o.argv = {FL_FAULTLINE, "agent"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = environmentWith(env, isTestVar);
  o.stderr_path = stderr_path;
  return spawnChild(o);
}

TEST(Agent, FindsARankItsShellForksAndReportsTheChildsExit) {
  TempDir dir;
  const std::string out = dir / "out";
  // The rank (a descendant carrying RANK) lives until the agent has seen it.
  const std::string script = "RANK=1 LOCAL_RANK=1 sh " + waitForEventScript(dir, out, "n1", "rank") + " & wait; exit 5";
  const pid_t agent = startAgent({"--out", out, "--node", "n1", "--", "sh", "-c", script},
                                 {{"FAULTLINE_RUN_ID", "agent-test-1"}}, dir / "err");
  ASSERT_GT(agent, 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 5) << o.str() << readFile(dir / "err");

  const auto ev = onlyEvents(out, "n1", agent);
  const auto start = ofKind(ev, "agent_start");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0]["command"][0], "sh");
  EXPECT_FALSE(start[0].contains("link"));
  const auto rank_start = ofKind(ev, "rank_start");
  ASSERT_EQ(rank_start.size(), 1u) << readFile(agentFiles(out, "n1")[0]);
  EXPECT_EQ(rank_start[0]["rank"], 1);
  EXPECT_EQ(rank_start[0]["local_rank"], 1);
  const auto rank_exit = ofKind(ev, "rank_exit");
  ASSERT_EQ(rank_exit.size(), 1u);
  EXPECT_EQ(rank_exit[0]["pid"], rank_start[0]["pid"]);
  EXPECT_EQ(rank_exit[0]["gone"], true);
  const auto child_exit = ofKind(ev, "child_exit");
  ASSERT_EQ(child_exit.size(), 1u);
  EXPECT_EQ(child_exit[0]["exit_code"], 5);
  const auto survivors = ofKind(ev, "survivors");
  ASSERT_EQ(survivors.size(), 1u);
  EXPECT_EQ(survivors[0]["processes"], json::array());
  EXPECT_EQ(ev.back()["exit_code"], 5);
}

// What the node's launcher writes goes on to the agent's own stdout and
// stderr (the run's launcher output) and into the node's copy of each, its
// children's included, all of it by the time the agent exits.
TEST(Agent, PassesItsCommandsOutputOnAndCopiesItToTheNodesFiles) {
  TempDir dir;
  const std::string out = dir / "out";
  const std::string script = "echo to-out; echo to-err >&2; sh -c 'seq 1 20000 >&2'; echo last-out";
  SpawnOptions o;
  o.argv = {FL_FAULTLINE, "agent", "--out", out, "--node", "n2", "--", "sh", "-c", script};
  o.env = environmentWith({{"FAULTLINE_RUN_ID", "agent-test-out"}}, isTestVar);
  o.stdout_path = dir / "agent.out";
  o.stderr_path = dir / "agent.err";
  const pid_t agent = spawnChild(o);
  ASSERT_GT(agent, 0);
  const Outcome r = waitChild(agent, kLimit);
  EXPECT_EQ(r.code(), 0) << r.str() << readFile(dir / "agent.err");
  std::string seq;
  for (int i = 1; i <= 20000; ++i) seq += std::to_string(i) + "\n";
  EXPECT_EQ(readFile(dir / "agent.out"), "to-out\nlast-out\n");
  EXPECT_EQ(readFile(out + "/nodes/n2/launcher.stdout"), "to-out\nlast-out\n");
  EXPECT_EQ(readFile(out + "/nodes/n2/launcher.stderr"), "to-err\n" + seq);
  EXPECT_EQ(readFile(dir / "agent.err"), "to-err\n" + seq) << "more than a pipe's 64 KiB, passed on whole";
}

TEST(Agent, RecordsTheProcessOfItsRunAndNodeThatOutlivesItsChild) {
  TempDir dir;
  const std::string out = dir / "out";
  const std::string flag = dir / "release";
  // The orphan waits for a file the test creates after the agent has ended.
  const std::string script = "sh -c 'until [ -e " + flag + " ]; do sleep 0.01; done' & exit 0";
  // Released whatever the test finds, so that no process outlives the test.
  struct Release {
    std::string flag;
    ~Release() { std::ofstream(flag).put('x'); }
  } release{flag};
  const pid_t agent = startAgent({"--out", out, "--node", "n1", "--", "sh", "-c", script},
                                 {{"FAULTLINE_RUN_ID", "agent-test-2"}}, dir / "err");
  ASSERT_GT(agent, 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 0) << o.str() << readFile(dir / "err");
  const auto ev = onlyEvents(out, "n1", agent);
  const auto survivors = ofKind(ev, "survivors");
  ASSERT_EQ(survivors.size(), 1u);
  // The loop, and perhaps the `sleep` it runs at that moment.
  pid_t orphan = 0;
  for (const auto& s : survivors[0]["processes"]) {
    if (s["cmdline"].get<std::string>().find(flag) != std::string::npos) orphan = s["pid"].get<pid_t>();
  }
  ASSERT_NE(orphan, 0) << survivors[0];
  std::ofstream(flag).put('x');
  // Gone or a zombie waiting for init: either way it no longer runs.
  EXPECT_TRUE(waitFor(
      [&] {
        const std::string stat = readFile("/proc/" + std::to_string(orphan) + "/stat");
        return stat.empty() || stat.find(") Z ") != std::string::npos;
      },
      kLimit))
      << "the orphan did not end";
}

TEST(Agent, PassesAStopSignalToItsChildsGroupAndExitsAsTheChildDid) {
  TempDir dir;
  const std::string out = dir / "out";
  // The child's own child is in the same group and must be stopped too.
  const pid_t agent = startAgent({"--out", out, "--node", "n2", "--", "sh", "-c", "sleep 600 & wait"},
                                 {{"FAULTLINE_RUN_ID", "agent-test-3"}}, dir / "err");
  ASSERT_GT(agent, 0);
  ASSERT_TRUE(waitFor([&] { return agentFiles(out, "n2").size() == 1 &&
                                   readFile(agentFiles(out, "n2")[0]).find("agent_start") != std::string::npos; },
                      kLimit));
  ASSERT_EQ(::kill(agent, SIGTERM), 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 128 + SIGTERM) << o.str() << readFile(dir / "err");
  const auto ev = onlyEvents(out, "n2", agent);
  const auto sig = ofKind(ev, "signal");
  ASSERT_GE(sig.size(), 1u);
  EXPECT_EQ(sig[0]["signal"], "SIGTERM");
  const auto child_exit = ofKind(ev, "child_exit");
  ASSERT_EQ(child_exit.size(), 1u);
  EXPECT_EQ(sig[0]["forwarded_to"], child_exit[0]["pid"]);
  EXPECT_EQ(child_exit[0]["signal"], "SIGTERM");
  EXPECT_EQ(ofKind(ev, "survivors")[0]["processes"], json::array()) << "the sleep of the child's group survived";
}

// The supervisor's teardown signals every process of the run itself: a stop
// it sends the agent is not passed on (a second SIGTERM into torch's agent's
// own shutdown hung it). One from anyone else is.
TEST(Agent, LeavesTheSupervisorsStopUnforwardedAndPassesOnAnyOther) {
  TempDir dir;
  const std::string out = dir / "out";
  // The child is the sleep itself: a non-interactive shell's background job
  // ignores SIGINT, and a sleep left behind holds ctest's pipe open.
  const pid_t agent = startAgent({"--out", out, "--node", "n2", "--", "sleep", "600"},
                                 {{"FAULTLINE_RUN_ID", "agent-test-5"}, {"FAULTLINE_SUPERVISOR_PID", std::to_string(::getpid())}},
                                 dir / "err");
  ASSERT_GT(agent, 0);
  const auto events = [&] { return agentFiles(out, "n2").empty() ? std::string() : readFile(agentFiles(out, "n2")[0]); };
  ASSERT_TRUE(waitFor([&] { return events().find("agent_start") != std::string::npos; }, kLimit));
  ASSERT_EQ(::kill(agent, SIGTERM), 0);  // from this process, the "supervisor"
  ASSERT_TRUE(waitFor([&] { return events().find("from_supervisor") != std::string::npos; }, kLimit));
  // Not passed on: the child still runs, and so does the agent.
  ::usleep(200 * 1000);
  EXPECT_EQ(events().find("child_exit"), std::string::npos);
  // From another process (kill(1), as a user or Slurm's step signal): passed on.
  ASSERT_EQ(std::system(("kill -INT " + std::to_string(agent)).c_str()), 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 128 + SIGINT) << o.str() << readFile(dir / "err");
  const auto sig = ofKind(onlyEvents(out, "n2", agent), "signal");
  ASSERT_EQ(sig.size(), 2u);
  EXPECT_EQ(sig[0]["signal"], "SIGTERM");
  EXPECT_EQ(sig[0]["from_supervisor"], true);
  EXPECT_FALSE(sig[0].contains("forwarded_to"));
  EXPECT_EQ(sig[1]["signal"], "SIGINT");
  EXPECT_TRUE(sig[1].contains("forwarded_to"));
}

TEST(Agent, SlurmTaskSetsTheRankVariablesAndTheChildIsTheRank) {
  TempDir dir;
  const std::string out = dir / "out";
  const std::string env_file = dir / "env";
  const std::map<std::string, std::string> slurm = {
      {"SLURM_PROCID", "3"},   {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "4"},   {"SLURM_NODEID", "1"},
      {"SLURM_TASKS_PER_NODE", "2(x2)"}, {"SLURMD_NODENAME", "n2"}, {"SLURM_JOB_ID", "41"}, {"SLURM_STEP_ID", "0"},
      {"FAULTLINE_RUN_DIR", out}, {"FAULTLINE_RUN_ID", "agent-test-4"}};
  const pid_t agent = startAgent({"--slurm-task", "--link", "lo", "--", "sh", "-c", "env > " + env_file + "; exit 2"},
                                 slurm, dir / "err");
  ASSERT_GT(agent, 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 2) << o.str() << readFile(dir / "err");
  const std::string env = readFile(env_file);
  for (const char* kv : {"RANK=3\n", "LOCAL_RANK=1\n", "WORLD_SIZE=4\n", "LOCAL_WORLD_SIZE=2\n", "GROUP_RANK=1\n",
                         "FAULTLINE_NODE=n2\n"}) {
    EXPECT_NE(env.find(std::string("\n") + kv), std::string::npos) << kv << " not in\n" << env;
  }
  const auto ev = onlyEvents(out, "n2", agent);
  const auto start = ofKind(ev, "agent_start");
  ASSERT_EQ(start.size(), 1u);
  EXPECT_EQ(start[0]["slurm_job"], "41");
  EXPECT_EQ(start[0]["slurm_step"], "0");
  EXPECT_EQ(start[0]["link"], "lo");
  const auto rank_start = ofKind(ev, "rank_start");
  ASSERT_EQ(rank_start.size(), 1u);
  EXPECT_EQ(rank_start[0]["rank"], 3);
  EXPECT_EQ(rank_start[0]["local_rank"], 1);
  const auto rank_exit = ofKind(ev, "rank_exit");
  ASSERT_EQ(rank_exit.size(), 1u);
  EXPECT_EQ(rank_exit[0]["exit_code"], 2);
  EXPECT_FALSE(rank_exit[0].contains("gone"));
  const auto link = ofKind(ev, "link");
  ASSERT_GE(link.size(), 1u);
  EXPECT_EQ(link[0]["ifname"], "lo");
  EXPECT_FALSE(link[0].contains("previous"));
  EXPECT_TRUE(link[0]["state"].is_string());
}

TEST(Agent, BadUsageIsExitTwoSayingWhy) {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--out", dir / "o", "--", "true"}, {}, "no node name"},
      {{"--node", "n1", "--", "true"}, {}, "no run directory"},
      {{"--out", dir / "o", "--node", "n1"}, {}, "no command given"},
      {{"--out", dir / "o", "--node", "../x", "--", "true"}, {}, "not a valid node name"},
      {{"--out", dir / "o", "--slurm-task", "--", "true"}, {{"SLURMD_NODENAME", "n1"}}, "SLURM_PROCID is not set"},
  };
  for (const auto& c : cases) {
    const pid_t agent = startAgent(c.args, c.env, dir / "err");
    ASSERT_GT(agent, 0);
    const Outcome o = waitChild(agent, kLimit);
    EXPECT_EQ(o.code(), 2) << c.says;
    EXPECT_NE(readFile(dir / "err").find(c.says), std::string::npos) << readFile(dir / "err");
  }
}

TEST(Agent, ACommandThatCannotRunIs127AndStillRecorded) {
  TempDir dir;
  const std::string out = dir / "out";
  const pid_t agent = startAgent({"--out", out, "--node", "n1", "--", "/nonexistent/trainer"}, {}, dir / "err");
  ASSERT_GT(agent, 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 127);
  EXPECT_NE(readFile(dir / "err").find("cannot run /nonexistent/trainer"), std::string::npos);
  const auto ev = onlyEvents(out, "n1", agent);
  EXPECT_EQ(ofKind(ev, "child_exit").at(0)["exit_code"], 127);
}

// Started through the launch stage now (launch::spawnProcess): a command
// that is there but cannot be run is 126, as from a shell, and recorded too.
TEST(Agent, ACommandThatIsNotExecutableIs126AndStillRecorded) {
  TempDir dir;
  const std::string out = dir / "out";
  const std::string script = dir / "train.sh";
  std::ofstream(script) << "#!/bin/sh\nexit 0\n";  // no execute bit
  const pid_t agent = startAgent({"--out", out, "--node", "n1", "--", script}, {}, dir / "err");
  ASSERT_GT(agent, 0);
  const Outcome o = waitChild(agent, kLimit);
  EXPECT_EQ(o.code(), 126);
  EXPECT_NE(readFile(dir / "err").find("cannot run " + script), std::string::npos) << readFile(dir / "err");
  const auto ev = onlyEvents(out, "n1", agent);
  EXPECT_EQ(ofKind(ev, "child_exit").at(0)["exit_code"], 126);
  EXPECT_TRUE(ofKind(ev, "child_exit").at(0)["pid"].is_null());
  EXPECT_EQ(ofKind(ev, "agent_exit").at(0)["exit_code"], 126);
}

}  // namespace
}  // namespace faultline::testing
