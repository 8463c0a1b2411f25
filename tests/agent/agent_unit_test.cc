// The agent's pure parts: event lines, wait statuses, the Slurm task
// variables, and the rank and survivor filters over hand-written /proc snapshots.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/agent/agent.h"
#include "harness/agent/agent_event.h"
#include "harness/agent/node_procs.h"
#include "harness/agent/slurm_task_env.h"
#include "harness/model/run_layout.h"

namespace faultline::agent {
namespace {

int exitedStatus(int code) { return (code & 0xff) << 8; }  // as waitpid reports exit(code)

TEST(AgentEvent, CommonFieldsFirstThenTheEventsOwnOneLine) {
  const std::string line = agentEventLine({"n2", "vm", 42}, 123, "rank_start", {{"rank", 2}, {"pid", 7}});
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(line.rfind("{\"t_ns\":123,\"node\":\"n2\",\"host\":\"vm\",\"agent_pid\":42,\"event\":\"rank_start\"", 0), 0u)
      << line;
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["rank"], 2);
  EXPECT_EQ(j["pid"], 7);
}

TEST(AgentEvent, InvalidUtf8InACommandIsReplacedNotThrown) {
  const std::string bad = std::string("python\xff") + "x";
  const std::string line = agentEventLine({"n1", "h", 1}, 0, "agent_start", {{"command", {bad}}});
  nlohmann::json j;
  EXPECT_NO_THROW(j = nlohmann::json::parse(line));
  EXPECT_EQ(j["event"], "agent_start");
}

TEST(AgentEvent, WaitStatusIsAnExitCodeOrASignalName) {
  EXPECT_EQ(waitStatusFields(exitedStatus(3)), nlohmann::json({{"exit_code", 3}}));
  EXPECT_EQ(waitStatusFields(SIGKILL), nlohmann::json({{"signal", "SIGKILL"}}));
  EXPECT_EQ(exitStatusFor(exitedStatus(0)), 0);
  EXPECT_EQ(exitStatusFor(exitedStatus(7)), 7);
  EXPECT_EQ(exitStatusFor(SIGTERM), 143);
  EXPECT_EQ(exitStatusFor(SIGKILL), 137);
}

TEST(SlurmTaskEnv, MapsTheStepsVariablesToTorchs) {
  const EnvMap env = {{"SLURM_PROCID", "3"},  {"SLURM_LOCALID", "1"},           {"SLURM_NTASKS", "4"},
                      {"SLURM_NODEID", "1"},  {"SLURM_NTASKS_PER_NODE", "2"},  {"SLURM_TASKS_PER_NODE", "3(x2)"}};
  const auto got = slurmTaskEnv(env);
  ASSERT_TRUE(got) << got.error().str();
  const std::map<std::string, std::string> m(got->begin(), got->end());
  EXPECT_EQ(m, (std::map<std::string, std::string>{{"RANK", "3"},
                                                    {"LOCAL_RANK", "1"},
                                                    {"WORLD_SIZE", "4"},
                                                    {"LOCAL_WORLD_SIZE", "2"},
                                                    {"GROUP_RANK", "1"}}));
}

TEST(SlurmTaskEnv, LocalWorldSizeFallsBackToThisNodesCountAndWorldSizeToNprocs) {
  const EnvMap env = {{"SLURM_PROCID", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_NPROCS", "3"},
                      {"SLURM_NODEID", "1"}, {"SLURM_TASKS_PER_NODE", "2,1"}};
  const auto got = slurmTaskEnv(env);
  ASSERT_TRUE(got) << got.error().str();
  const std::map<std::string, std::string> m(got->begin(), got->end());
  EXPECT_EQ(m.at("WORLD_SIZE"), "3");
  EXPECT_EQ(m.at("LOCAL_WORLD_SIZE"), "1");
}

TEST(SlurmTaskEnv, OutsideAStepIsBadUsageNamingTheVariable) {
  const auto none = slurmTaskEnv({});
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ErrorCode::kBadUsage);
  EXPECT_NE(none.error().message.find("SLURM_PROCID is not set"), std::string::npos) << none.error().message;
  const auto bad = slurmTaskEnv({{"SLURM_PROCID", "x"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("SLURM_PROCID='x' is not a number"), std::string::npos) << bad.error().message;
  const auto no_ntasks = slurmTaskEnv({{"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"}});
  ASSERT_FALSE(no_ntasks);
  EXPECT_NE(no_ntasks.error().message.find("SLURM_NTASKS"), std::string::npos);
}

TEST(SlurmTaskEnv, TasksPerNodeRepeatsAndLists) {
  EXPECT_EQ(tasksOnNode("2(x3),1", 0), 2);
  EXPECT_EQ(tasksOnNode("2(x3),1", 2), 2);
  EXPECT_EQ(tasksOnNode("2(x3),1", 3), 1);
  EXPECT_EQ(tasksOnNode("2(x3),1", 4), std::nullopt);
  EXPECT_EQ(tasksOnNode("4", 0), 4);
  EXPECT_EQ(tasksOnNode("2(x", 0), std::nullopt);
  EXPECT_EQ(tasksOnNode("a", 0), std::nullopt);
  EXPECT_EQ(tasksOnNode("", 0), std::nullopt);
  EXPECT_EQ(tasksOnNode("2", -1), std::nullopt);
}

TEST(ResolveNode, OptionFirstThenTheSlurmNodeInTaskMode) {
  AgentOptions o;
  EXPECT_EQ(resolveNode(o, "n2"), "");
  o.slurm_task = true;
  EXPECT_EQ(resolveNode(o, "n2"), "n2");
  EXPECT_EQ(resolveNode(o, nullptr), "");
  o.node = "n1";
  EXPECT_EQ(resolveNode(o, "n2"), "n1");
}

ProcInfo proc(pid_t pid, pid_t ppid, std::map<std::string, std::string> env = {}, char state = 'S') {
  ProcInfo p;
  p.pid = pid;
  p.ppid = ppid;
  p.state = state;
  p.env = std::move(env);
  return p;
}

TEST(RanksBelow, TheTopmostDescendantsCarryingRank) {
  // agent 10 -> torchrun 11 -> workers 12 (RANK 0), 13 (RANK 1) -> 14 (a
  // worker's own child, RANK inherited); 20 is elsewhere with a RANK.
  const std::vector<ProcInfo> procs = {
      proc(10, 1, {{"RANK", "9"}}),
      proc(11, 10),
      proc(12, 11, {{"RANK", "0"}, {"LOCAL_RANK", "0"}}),
      proc(13, 11, {{"RANK", "1"}}),
      proc(14, 13, {{"RANK", "1"}}),
      proc(15, 11, {{"RANK", "not-a-number"}}),
      proc(20, 1, {{"RANK", "5"}}),
  };
  const auto ranks = ranksBelow(procs, 10);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].pid, 12);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[0].local_rank, 0);
  EXPECT_EQ(ranks[1].pid, 13);
  EXPECT_EQ(ranks[1].rank, 1);
  EXPECT_EQ(ranks[1].local_rank, std::nullopt);
}

TEST(RanksBelow, TheChildItselfCanBeTheRank) {
  const auto ranks = ranksBelow({proc(10, 1), proc(11, 10, {{"RANK", "3"}})}, 10);
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].pid, 11);
}

TEST(SurvivorsAmong, ThisRunThisNodeThisAgentNotItselfNotAZombie) {
  const std::map<std::string, std::string> mine = {
      {"FAULTLINE_RUN_ID", "r1"}, {"FAULTLINE_NODE", "n1"}, {"FAULTLINE_AGENT_PID", "10"}};
  auto other_agent = mine;
  other_agent["FAULTLINE_AGENT_PID"] = "30";
  auto other_node = mine;
  other_node["FAULTLINE_NODE"] = "n2";
  auto other_run = mine;
  other_run["FAULTLINE_RUN_ID"] = "r2";
  const std::vector<ProcInfo> procs = {
      proc(10, 1, mine),                    // the agent itself
      proc(11, 1, mine),                    // an orphan of its child: a survivor
      proc(12, 1, mine, 'Z'),               // a zombie holds nothing
      proc(13, 1, other_agent),             // another task's on the same node
      proc(14, 1, other_node),
      proc(15, 1, other_run),
      proc(16, 1, {}),
  };
  const auto s = survivorsAmong(procs, std::string("r1"), "n1", 10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pid, 11);
}

TEST(SurvivorsAmong, NoRunIdMatchesNoRunId) {
  const std::vector<ProcInfo> procs = {
      proc(11, 1, {{"FAULTLINE_NODE", "n1"}, {"FAULTLINE_AGENT_PID", "10"}}),
      proc(12, 1, {{"FAULTLINE_NODE", "n1"}, {"FAULTLINE_AGENT_PID", "10"}, {"FAULTLINE_RUN_ID", "r"}}),
  };
  const auto s = survivorsAmong(procs, std::nullopt, "n1", 10);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pid, 11);
}

TEST(RunLayoutNodes, OneFilePerAgentBesideTheSupervisors) {
  const RunLayout l("/o");
  EXPECT_EQ(l.nodesDir(), "/o/nodes");
  EXPECT_EQ(l.nodeDir("n2"), "/o/nodes/n2");
  EXPECT_EQ(l.nodeAgentEvents("n2", 77), "/o/nodes/n2/agent-77.jsonl");
  EXPECT_EQ(l.nodeSupervisorEvents("n2"), "/o/nodes/n2/supervisor.jsonl");
  const auto dirs = l.previousRunDirs();
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), "/o/nodes"), dirs.end());
}

}  // namespace
}  // namespace faultline::agent
