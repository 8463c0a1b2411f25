// The node files of docs/MULTINODE.md: each line read, folded per node, and a
// run directory's nodes gathered (bad lines named by file:line:col).
#include "harness/diagnose/node_input.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/diagnose/run_input.h"
#include "harness/model/run_layout.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

namespace fs = std::filesystem;

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(NodeInput, ParsesEveryAgentEvent) {
  auto e = parseNodeEventLine(R"({"t_ns":5,"node":"n2","host":"h2","agent_pid":9,"event":"rank_start","rank":2,"local_rank":0,"pid":77})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->event, "rank_start");
  EXPECT_EQ(e->t_ns, 5);
  EXPECT_EQ(e->host, "h2");
  EXPECT_EQ(e->agent_pid, 9);
  EXPECT_EQ(e->rank, 2);
  EXPECT_EQ(e->local_rank, 0);
  EXPECT_EQ(e->pid, 77);
  auto l = parseNodeEventLine(R"({"t_ns":6,"event":"link","ifname":"fl-n2","state":"down","previous":"up"})");
  ASSERT_TRUE(l);
  EXPECT_EQ(l->ifname, "fl-n2");
  EXPECT_EQ(l->state, "down");
  auto s = parseNodeEventLine(R"({"t_ns":7,"event":"survivors","processes":[{"pid":5,"cmdline":"python x"}]})");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->processes.size(), 1u);
  EXPECT_EQ(s->processes[0].second, "python x");
  auto f = parseNodeEventLine(R"({"t_ns":8,"node":"n2","event":"fault","kind":"node_loss","point":"step=3","rule":"r","source":"supervisor","processes":[1,2]})");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, "node_loss");
  EXPECT_EQ(f->processes.size(), 2u);
  auto x = parseNodeEventLine(R"({"t_ns":9,"event":"rank_exit","rank":1,"pid":3,"signal":9})");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->signal, "SIGKILL");
}

TEST(NodeInput, RejectsWhatIsNoEvent) {
  std::string why;
  int col = 0;
  EXPECT_FALSE(parseNodeEventLine(R"({"t_ns":1,"event":)", &why, &col));
  EXPECT_EQ(why, "not JSON");
  EXPECT_GT(col, 0);
  EXPECT_FALSE(parseNodeEventLine(R"({"t_ns":1})", &why, &col));
  EXPECT_FALSE(parseNodeEventLine("[1,2]", &why, &col));
}

TEST(NodeInput, FoldsAnAgentIntoItsNode) {
  NodeInput n;
  n.name = "n2";
  AgentRecord a;
  a.pid = 9;
  for (const char* l : {R"({"t_ns":1,"host":"h2","event":"agent_start"})",
                        R"({"t_ns":2,"event":"rank_start","rank":2,"local_rank":0,"pid":20})",
                        R"({"t_ns":3,"event":"link","ifname":"fl-n2","state":"down","previous":"up"})",
                        R"({"t_ns":4,"event":"link","ifname":"fl-n2","state":"up","previous":"down"})",
                        R"({"t_ns":5,"event":"rank_exit","rank":2,"pid":20,"exit_code":1})",
                        R"({"t_ns":6,"event":"survivors","processes":[]})"}) {
    a.events.push_back(*parseNodeEventLine(l));
  }
  addAgent(n, a);
  EXPECT_EQ(n.host, "h2");
  ASSERT_EQ(n.ranks.count(2), 1u);
  EXPECT_EQ(n.ranks[2].pid, 20);
  EXPECT_EQ(n.ranks[2].exit_code, 1);
  EXPECT_EQ(n.link_down_ns, 3);
  EXPECT_EQ(n.link_down_ifname, "fl-n2");
  EXPECT_EQ(n.link_up_ns, 4);
  // No agent_exit: the agent is gone, its exit code unknown.
  EXPECT_TRUE(n.agentGone());
  EXPECT_FALSE(n.agentExitCode());
  AgentRecord b;
  b.pid = 10;
  b.events.push_back(*parseNodeEventLine(R"({"t_ns":7,"event":"agent_exit","exit_code":0})"));
  NodeInput m;
  addAgent(m, b);
  EXPECT_FALSE(m.agentGone());
  EXPECT_EQ(m.agentExitCode(), 0);
}

TEST(NodeInput, ReadsEveryNodeDirectoryAndNamesBadLines) {
  const std::string dir = ::testing::TempDir() + "/nodes_run";
  fs::remove_all(dir);
  const RunLayout L(dir);
  write(L.nodeAgentEvents("n1", 100),
        R"({"t_ns":1,"node":"n1","host":"h1","agent_pid":100,"event":"agent_start"})" "\n"
        R"({"t_ns":2,"node":"n1","host":"h1","agent_pid":100,"event":"rank_start","rank":0,"local_rank":0,"pid":10})" "\n"
        R"({"t_ns":3,"node":"n1","host":"h1","agent_pid":100,"event":"rank_exit","rank":0,"pid":10,"signal":"SIGKILL"})" "\n"
        R"({"t_ns":4,"node":"n1","host":"h1","agent_pid":100,"event":"agent_exit","exit_code":137})" "\n");
  write(L.nodeAgentEvents("n2", 200),
        R"({"t_ns":1,"node":"n2","host":"h2","agent_pid":200,"event":"agent_start"})" "\n"
        "{not json\n"
        R"({"t_ns":2,"node":"n2","host":"h2","agent_pid":200,"event":"rank_start","rank":1,"local_rank":0,"pid":11})" "\n");
  write(L.nodeSupervisorEvents("n2"),
        R"({"t_ns":5,"node":"n2","event":"fault","kind":"node_loss","point":"step=3","rule":"node_loss:node=n2","source":"supervisor","processes":[11,200]})" "\n");
  std::vector<NodeProblem> problems;
  auto nodes = readNodes(dir, &problems);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes["n1"].host, "h1");
  EXPECT_EQ(nodes["n1"].agentExitCode(), 137);
  EXPECT_TRUE(nodes["n2"].agentGone());
  ASSERT_NE(nodes["n2"].fault("node_loss"), nullptr);
  EXPECT_EQ(nodes["n2"].fault("node_loss")->t_ns, 5);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 2);
  EXPECT_GT(problems[0].col, 0);
  EXPECT_NE(problems[0].file.find("agent-200.jsonl"), std::string::npos);
  // The run input: each rank's node and host, the exit its agent saw.
  const RunInput in = loadRun(dir);
  ASSERT_EQ(in.ranks.count(0), 1u);
  EXPECT_EQ(in.ranks.at(0).node, "n1");
  EXPECT_EQ(in.ranks.at(0).host, "h1");
  EXPECT_EQ(in.ranks.at(0).signal, "SIGKILL");
  EXPECT_EQ(in.ranks.at(1).node, "n2");
  EXPECT_FALSE(in.ranks.at(1).exit_known);
  EXPECT_EQ(in.node_problems.size(), 1u);
  fs::remove_all(dir);
}

TEST(NodeInput, ASecondNodesTorchrunLogsAreItsGlobalRanks) {
  // torchrun-multinode: node n2's agent logs by local rank in
  // OUT/nodes/n2/logs; local rank 1 there is global rank 3 (its agent's
  // rank_start says so; without it, n2's place does).
  const std::string dir = ::testing::TempDir() + "/node_logs_run";
  fs::remove_all(dir);
  const RunLayout L(dir);
  write(L.nodeAgentEvents("n1", 100),
        R"({"t_ns":1,"node":"n1","host":"h","agent_pid":100,"event":"agent_start"})" "\n");
  write(L.nodeAgentEvents("n2", 200),
        R"({"t_ns":1,"node":"n2","host":"h","agent_pid":200,"event":"agent_start"})" "\n"
        R"({"t_ns":2,"node":"n2","host":"h","agent_pid":200,"event":"rank_start","rank":3,"local_rank":1,"pid":13})" "\n");
  const std::string attempt = L.nodeLogsDir("n2") + "/none_abc/attempt_0";
  write(attempt + "/1/stderr.log",
        "Traceback (most recent call last):\n"
        "  File \"/work/train.py\", line 12, in <module>\n"
        "    b = c\n"
        "NameError: name 'c' is not defined\n");
  write(attempt + "/0/stderr.log", "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer\n");
  // A restart's logs (n2's agent restarted its ranks) are a later attempt's:
  // the root cause is read from the first, whatever the restart met.
  write(L.nodeLogsDir("n2") + "/none_abc/attempt_1/1/stderr.log",
        "RuntimeError: Gloo connectFullMesh failed with [pair.cc:152] timed out connecting: SO_ERROR: Connection refused\n");
  RunInput in = loadRun(dir);
  ASSERT_EQ(in.ranks.count(3), 1u);
  ASSERT_EQ(in.ranks.at(3).errors.size(), 1u);
  EXPECT_EQ(in.ranks.at(3).errors.front().type, "NameError");
  EXPECT_EQ(in.ranks.at(3).node, "n2");
  // Local rank 0 has no rank_start, and with no world size known (no
  // supervisor.json) n2's place says nothing: its log is no rank's.
  EXPECT_EQ(in.ranks.count(2), 0u);
  EXPECT_EQ(in.ranks.count(0), 0u);
  fs::remove_all(dir);
}

// spawn across nodes: each node's program names a process of its own, and
// its agent's copy of its output (OUT/nodes/NAME/launcher.stderr) says which
// node's: "Process 0" of n2 is rank 2. Every node's output together, in
// OUT/launcher/stderr, ends with n2's report, which read alone named rank 0.
TEST(RunInput, ASpawnReportAcrossNodesNamesAProcessOfItsOwnNode) {
  const RunInput in = loadRun(testing::fixture("mn213_spawn_rank2_exception"));
  ASSERT_TRUE(in.launcher);
  EXPECT_EQ(in.launcher->claimed_root_rank, 1) << "the first node's report: n1's process 1";
  const auto origin = [&](int rank, const std::string& type) {
    for (const Evidence& e : in.ranks.at(rank).errors) {
      if (e.type == type && e.origin.find("launcher") != std::string::npos) return e.origin;
    }
    return std::string();
  };
  EXPECT_EQ(origin(2, "NameError"), "nodes/n2/launcher.stderr");
  EXPECT_EQ(origin(1, "RuntimeError"), "nodes/n1/launcher.stderr");
  EXPECT_EQ(origin(0, "NameError"), "") << "n2's process 0 is not rank 0";
}

// One node too: a launcher's log file per rank (deepspeed's
// --enable_each_rank_log, STAMP_rankR.log) is that rank's output, where a
// rank's last words before exiting are (argparse's error, the loader's).
TEST(RunInput, ALaunchersLogFilePerRankIsThatRanksOutput) {
  const std::string dir = ::testing::TempDir() + "/rank_log_files_run";
  fs::remove_all(dir);
  const RunLayout L(dir);
  write(L.launcherRankLogsDir() + "/20261206080000_rank1.log",
        "usage: train.py [-h] --data DATA\ntrain.py: error: the following arguments are required: --data\n");
  write(L.launcherRankLogsDir() + "/20261206080000_rank0.log", "step 0\n");
  write(L.launcherRankLogsDir() + "/notes.txt", "no rank's\n");
  const RunInput in = loadRun(dir);
  ASSERT_EQ(in.ranks.count(1), 1u);
  EXPECT_NE(in.ranks.at(1).stderr_tail.find("the following arguments are required: --data"), std::string::npos);
  ASSERT_EQ(in.ranks.count(0), 1u);
  EXPECT_EQ(in.ranks.size(), 2u);
  fs::remove_all(dir);
}

// faultline's own launcher, restarting, writes each later attempt's output
// and error file in OUT/ranks/R/attempt_K: that attempt's, never the first's
// (whose failure is the root cause).
TEST(RunInput, ARestartedRanksFilesAreItsAttempts) {
  const std::string dir = ::testing::TempDir() + "/restarted_rank_files_run";
  fs::remove_all(dir);
  const RunLayout L(dir);
  write(L.rankStderr(1), "Traceback (most recent call last):\n  File \"/t/train.py\", line 40, in <module>\n"
                         "NameError: name 'c' is not defined\n");
  write(L.rankStderr(1, 1), "Traceback (most recent call last):\n  File \"/t/train.py\", line 9, in <module>\n"
                            "EOFError: Ran out of input\n");
  write(L.rankAttemptDir(1, 1) + "/../attempt_x/stderr", "KeyError: 'not an attempt'\n");
  const RunInput in = loadRun(dir);
  ASSERT_EQ(in.ranks.count(1), 1u);
  EXPECT_NE(in.ranks.at(1).stderr_tail.find("NameError"), std::string::npos);
  EXPECT_EQ(in.ranks.at(1).stderr_tail.find("EOFError"), std::string::npos);
  ASSERT_EQ(in.attempts.size(), 1u);
  EXPECT_EQ(in.attempts[0].attempt, 1);
  ASSERT_EQ(in.attempts[0].ranks.count(1), 1u);
  const RankInput& again = in.attempts[0].ranks.at(1);
  EXPECT_NE(again.stderr_tail.find("EOFError: Ran out of input"), std::string::npos);
  ASSERT_FALSE(again.errors.empty());
  EXPECT_EQ(again.errors.back().type, "EOFError");
  fs::remove_all(dir);
}

TEST(NodeInput, NoNodesDirectoryIsASingleNodeRun) {
  const std::string dir = ::testing::TempDir() + "/no_nodes_run";
  fs::create_directories(dir);
  EXPECT_TRUE(readNodes(dir).empty());
  EXPECT_TRUE(loadRun(dir).nodes.empty());
}

}  // namespace
}  // namespace faultline::diagnose
