// Launchers whose ranks carry no RANK, end to end through `faultline exec`:
// Lightning's (the user's script is rank 0 and re-runs itself for the others
// with LOCAL_RANK) and torch.multiprocessing.spawn's (children named by the
// shim). The ranks must be found, by their environment or by the shim's
// word, and a scripted fault must be struck on the rank it names.
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/launch/rank_env.h"
#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

using faultline::testing::LeakGuard;
using faultline::testing::readFile;
using faultline::testing::TempDir;

constexpr const char* kFrameworks = "/opt/faultline/frameworks-2.13/bin/python";  // ci/deps
constexpr const char* kTorch2 = "/opt/faultline/torch-2.13/bin/python";

int runFaultline(const std::vector<std::string>& args, const std::string& log) {
  testing::SpawnOptions o;
  o.argv = {FL_FAULTLINE};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::waitChild(testing::spawnChild(o)).code();
}

std::string fixture(const std::string& name) { return std::string(FL_SOURCE_DIR) + "/scenarios/python/" + name; }

std::set<int> ranksOf(const SupervisorRecord& s) {
  std::set<int> out;
  for (const auto& r : s.ranks) out.insert(r.rank);
  return out;
}

int pidOfRank(const SupervisorRecord& s, int rank) {
  for (const auto& r : s.ranks) {
    if (r.rank == rank) return r.pid;
  }
  return 0;
}

TEST(LightningCli, WithoutTheShimRankZeroIsTheScriptAndTheOthersItsReRuns) {
  if (::access(kFrameworks, X_OK) != 0) GTEST_FAIL() << kFrameworks << " missing: ci/deps installs it";
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--launcher", "lightning", "--no-instrument", "--deadline", "120", "-o", out, "--",
                               kFrameworks, fixture("frameworks/lightning_ddp.py"), "--devices", "3", "--steps", "4"},
                              dir / "log");
  EXPECT_EQ(rc, 0) << readFile(dir / "log");
  auto s = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(s) << s.error().str();
  EXPECT_EQ(ranksOf(*s), (std::set<int>{0, 1, 2})) << readFile(out + "/supervisor.json");
  ASSERT_TRUE(s->launcher_process);
  // Lightning's launcher is rank 0 itself, not a process above it.
  EXPECT_EQ(pidOfRank(*s, 0), s->launcher_process->pid);
  for (const auto& r : s->ranks) {
    EXPECT_EQ(r.exit_code, 0) << "rank " << r.rank;
  }
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_TRUE(report->teardown.clean);
}

TEST(LightningCli, TheShimStrikesAChildRankAtItsStep) {
  if (::access(kFrameworks, X_OK) != 0) GTEST_FAIL() << kFrameworks << " missing: ci/deps installs it";
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--launcher", "lightning", "--hang-timeout", "20", "--deadline", "120", "-o", out,
                               "--fault", "exception:rank=2:step=3", "--", kFrameworks,
                               fixture("frameworks/lightning_ddp.py"), "--devices", "3", "--steps", "8"},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
  EXPECT_EQ(report->root_cause->rank, 2);
  EXPECT_EQ(report->root_cause->exception_type, "NameError");
  ASSERT_TRUE(report->root_cause->location);
  // The user's script, never Lightning's loop that called it.
  EXPECT_NE(report->root_cause->location->file.find("lightning_ddp.py"), std::string::npos)
      << report->root_cause->location->file;
  ASSERT_EQ(report->faults.size(), 1u);
  EXPECT_TRUE(report->faults[0].struck) << readFile(out + "/report.json");
  auto s = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(s);
  EXPECT_EQ(ranksOf(*s), (std::set<int>{0, 1, 2}));
}

// DeepSpeed all-reduces the gradients itself, on a group of every rank, from
// its engine's backward(): the shim's steps (the engine's forwards) and that
// group's collectives, numbered with the default group's, let a fault at a
// step strike in the gradient all-reduce and the hang name its rank. Its CPU
// all-reduce leaves a /dev/shm file per rank: named, then removed.
TEST(DeepSpeedCli, AHungGradientAllReduceIsNamedAndTheShmItLeavesIsRemoved) {
  if (::access(kFrameworks, X_OK) != 0) GTEST_FAIL() << kFrameworks << " missing: ci/deps installs it";
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const std::string deepspeed = "/opt/faultline/frameworks-2.13/bin/deepspeed";
  auto port = launch::findFreePort();
  ASSERT_TRUE(port);
  const int rc = runFaultline({"exec", "--launcher", "deepspeed", "--hang-timeout", "8", "--deadline", "120", "-o", out,
                               "--fault", "hung_collective:rank=1:step=3", "--", deepspeed, "--num_gpus", "2",
                               "--master_port", std::to_string(*port), fixture("frameworks/deepspeed_ddp.py"),
                               "--steps", "8"},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
  EXPECT_EQ(report->root_cause->kind, Kind::kHungCollective) << report->root_cause->summary;
  EXPECT_EQ(report->root_cause->rank, 1) << report->root_cause->summary;
  ASSERT_EQ(report->faults.size(), 1u);
  EXPECT_TRUE(report->faults[0].struck) << readFile(out + "/report.json");
  std::vector<std::string> shm;
  for (const auto& leak : report->teardown.leaks) {
    if (leak.rfind("shm:/dev/shm/deepspeed_allreduce_buffer_", 0) == 0) shm.push_back(leak);
  }
  EXPECT_EQ(shm.size(), 2u) << readFile(out + "/report.json");
  EXPECT_FALSE(report->teardown.clean);
  for (const auto& leak : shm) {
    const std::string path = leak.substr(4, leak.find(' ') - 4);
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << path << " is still there";
  }
}

// accelerate launch --cpu runs one process whatever --num_processes says:
// refused up front with why and what to run instead, not a run that ends
// "diagnosed" with no rank found.
TEST(AccelerateCli, TheCpuPathIsRefusedWithWhy) {
  if (::access(kFrameworks, X_OK) != 0) GTEST_FAIL() << kFrameworks << " missing: ci/deps installs it";
  TempDir dir;
  const std::string accelerate = "/opt/faultline/frameworks-2.13/bin/accelerate";
  const int rc = runFaultline({"exec", "--launcher", "accelerate", "--deadline", "60", "-o", dir / "run", "--", accelerate,
                               "launch", "--cpu", "--num_processes", "3", fixture("frameworks/accelerate_ddp.py"),
                               "--steps", "2"},
                              dir / "log");
  EXPECT_EQ(rc, 2) << readFile(dir / "log");
  EXPECT_NE(readFile(dir / "log").find("accelerate launch --cpu starts one process whatever --num_processes says"),
            std::string::npos)
      << readFile(dir / "log");
}

// accelerate at a c10d rendezvous: its agent meets at localhost:29400
// whatever the run, so each run gets a network namespace of its own. Two at
// once both pass only if the port is each one's alone.
TEST(AccelerateCli, TwoC10dRunsAtOnceEachHaveThePortToThemselves) {
  if (::access(kFrameworks, X_OK) != 0) GTEST_FAIL() << kFrameworks << " missing: ci/deps installs it";
  if (::geteuid() != 0) GTEST_SKIP() << "network namespaces need root";
  TempDir dir;
  const std::string scenario = std::string(FL_SOURCE_DIR) + "/scenarios/recovery/crash-loop-exception.toml";
  std::vector<pid_t> runs;
  for (const std::string name : {"a", "b"}) {
    testing::SpawnOptions o;
    o.argv = {FL_FAULTLINE, "run", scenario, "--stack", "accelerate", "--strict", "-o", dir / name};
    o.stdout_path = dir / (name + ".log");
    o.stderr_to_stdout = true;
    runs.push_back(testing::spawnChild(o));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string name = i == 0 ? "a" : "b";
    // Its expectations passed, teardown.clean among them: a namespace or
    // hosts file left would be a teardown leak ("netns: ...").
    EXPECT_EQ(testing::waitChild(runs[i]).code(), 0) << readFile(dir / (name + ".log"));
    const std::string sup = readFile(dir / (name + "/supervisor.json"));
    EXPECT_NE(sup.find("\"c10d\""), std::string::npos) << "run " << name << " met at a c10d rendezvous";
  }
}

TEST(SpawnCli, ChildrenWithoutRankAreFoundByTheShimsWord) {
  if (::access(kTorch2, X_OK) != 0) GTEST_FAIL() << kTorch2 << " missing: ci/deps installs it";
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--launcher", "external", "--deadline", "120", "-o", out, "--", kTorch2,
                               fixture("spawn_name_error.py")},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto s = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(s) << s.error().str();
  EXPECT_EQ(ranksOf(*s), (std::set<int>{0, 1})) << readFile(out + "/supervisor.json");
  EXPECT_NE(pidOfRank(*s, 1), s->launcher_process ? s->launcher_process->pid : 0);
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report);
  ASSERT_TRUE(report->root_cause);
  EXPECT_EQ(report->root_cause->rank, 1);
}

}  // namespace
}  // namespace faultline
