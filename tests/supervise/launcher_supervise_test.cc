// What the launcher did, as the supervisor records it: who tore the job down
// and how long from the first failure until every process was gone (issue
// #16), and a launcher brought by the test itself behind launch::Launcher
// (issue #15: supervision asks the launcher, it does not branch on a kind).
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "harness/launch/observed_launcher.h"
#include "harness/supervise/supervisor.h"
#include "tests/supervise/test_support.h"

namespace faultline::supervise {
namespace {

using faultline::testing::fileExists;
using faultline::testing::hostilePath;
using faultline::testing::LeakGuard;
using faultline::testing::TempDir;

SuperviseOptions options(const TempDir& dir, const std::string& launcher, std::vector<std::string> command) {
  SuperviseOptions o;
  o.launch.launcher = launcher;
  o.launch.command = std::move(command);
  o.out_dir = dir / "run";
  o.grace_s = 1;
  o.deadline_s = 90;
  o.launcher_allowance_s = 15;
  return o;
}

// A shell launcher with two ranks: sh -c SCRIPT launch.sh HOSTILE ARGS...
std::string writeScript(const TempDir& dir, const std::string& body) {
  const std::string path = dir / "launch.sh";
  {
    std::ofstream s(path);
    s << "#!/bin/sh\n" << body;
  }
  ::chmod(path.c_str(), 0755);
  return path;
}

bool isRoot() { return ::geteuid() == 0; }

TEST(LauncherTeardown, ALauncherThatEndsItsJobItselfIsNamedAndTimedFromTheFailure) {
  if (!isRoot()) GTEST_SKIP() << "exit statuses of a launcher's ranks need the proc connector (root)";
  LeakGuard guard;
  TempDir dir;
  // Like torchrun: rank 1 fails, the launcher notices a while later, stops
  // rank 0 itself and exits non-zero. Faultline signals nothing.
  const std::string script = writeScript(dir,
                                         "RANK=0 WORLD_SIZE=2 \"$@\" & p0=$!\n"
                                         "RANK=1 WORLD_SIZE=2 \"$@\" & p1=$!\n"
                                         "wait $p1\nsleep 1.5\nkill -TERM $p0\nwait $p0\nexit 1\n");
  auto o = options(dir, "external", {script, hostilePath(), "delay=0.3", "1=exit:3", "*=sleep:60"});
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_EQ(rec.teardown.report.by, TeardownBy::kLauncher);
  EXPECT_EQ(rec.teardown.report.escalation, Escalation::kNone);
  EXPECT_TRUE(rec.teardown.report.clean);
  // Today's main read 0 here: the job took the launcher 1.5 s to end.
  EXPECT_GE(rec.teardown.report.duration_ms, 1400);
  EXPECT_LT(rec.teardown.report.duration_ms, 15000);
  ASSERT_TRUE(rec.launcher_process);
  EXPECT_EQ(rec.launcher_process->exit_code, 1);
  // In supervisor.json too.
  EXPECT_EQ(toJson(rec)["teardown"]["by"], "launcher");
}

// Issue #16 as reported: torchrun tore the job down itself, and
// teardown.duration_ms read 0 although that took it a while.
TEST(LauncherTeardown, TorchrunEndingItsJobIsTimedFromTheCrashToItsLastWorker) {
  if (!fileExists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  if (!isRoot()) GTEST_SKIP() << "exit statuses of torchrun's ranks need the proc connector (root)";
  LeakGuard guard;
  TempDir dir;
  auto o = options(dir, "torchrun",
                   {"/usr/bin/torchrun", testing::freeTorchrunPortFlag(), "--no_python", "--nproc_per_node=2", "--redirects", "2",
                    "--tee", "2", "--log_dir", dir / "torchrun-logs", hostilePath(), "delay=0.5", "1=segv", "*=sleep:60"});
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.teardown.report.by, TeardownBy::kLauncher);
  std::optional<int64_t> crash, last;
  for (const auto& r : rec.ranks) {
    ASSERT_TRUE(r.exit_ns) << "rank " << r.rank;
    if (r.rank == 1) crash = r.exit_ns;
    last = std::max(last.value_or(0), *r.exit_ns);
  }
  ASSERT_TRUE(crash);
  ASSERT_GT(*last, *crash);
  EXPECT_GE(rec.teardown.report.duration_ms, (*last - *crash) / 1000000);
  EXPECT_GT(rec.teardown.report.duration_ms, 0);
  EXPECT_TRUE(rec.teardown.report.clean);
}

TEST(LauncherTeardown, FaultlineTearingTheJobDownIsNamed) {
  LeakGuard guard;
  TempDir dir;
  auto o = options(dir, "builtin", {hostilePath(), "1=exit:3", "*=sleep:60"});
  o.launch.nproc = 2;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.teardown.report.by, TeardownBy::kFaultline);
  EXPECT_EQ(rec.teardown.report.escalation, Escalation::kSigterm);
  EXPECT_GT(rec.teardown.started_ns, 0);
}

TEST(LauncherTeardown, ARunThatEndsByItselfNeedsNoTeardown) {
  LeakGuard guard;
  TempDir dir;
  auto o = options(dir, "builtin", {hostilePath(), "*=ok"});
  o.launch.nproc = 2;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kNone);
  EXPECT_EQ(rec.teardown.report.by, TeardownBy::kNone);
  EXPECT_EQ(rec.teardown.report.duration_ms, 0);
  EXPECT_EQ(toJson(rec)["teardown"]["by"], "none");
}

TEST(LauncherTeardown, AnUnknownLauncherIsBadUsage) {
  TempDir dir;
  auto run = superviseRun(options(dir, "flux", {hostilePath()}));
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kBadUsage);
  EXPECT_NE(run.error().message.find("unknown launcher 'flux'"), std::string::npos) << run.error().message;
}

// A launcher of the test's own that wants the SIGTERM first and passes it on
// to its ranks (as srun does): the supervisor signals only the launcher.
class ForwardingLauncher final : public launch::ObservedLauncher {
 public:
  std::string name() const override { return "forwarding"; }
  tl::expected<launch::PlannedStart, launch::Unsupported> plan(const launch::PlanInput& in) const override {
    return launch::PlannedStart{in.trainer, 1};
  }
  launch::StackOffer offer(const launch::TorchInstall*, const std::string&) const override { return {}; }
  launch::StopOrder stopOrder() const override { return launch::StopOrder::kLauncherFirst; }
  double launcherGraceS() const override { return 5; }
};

// The forwarding launcher over a shell script of two ranks that sleep,
// ended by its 1.5-s deadline.
Result<SupervisedRun> runForwardingLauncher(TempDir& dir, const std::string& script_body, std::string* out_dir) {
  const std::string script = writeScript(dir, script_body);
  auto o = options(dir, "forwarding", {script, hostilePath(), "*=sleep:60"});
  static const ForwardingLauncher launcher{};
  o.launcher = &launcher;
  o.deadline_s = 1.5;
  o.gdb_stacks = false;
  *out_dir = o.out_dir;
  return superviseRun(o);
}

TEST(LauncherTeardown, ALauncherThatIsStoppedFirstPassesTheStopOn) {
  LeakGuard guard;
  TempDir dir;
  std::string out_dir;
  auto run = runForwardingLauncher(dir,
                                   "trap 'touch \"$FAULTLINE_RUN_DIR/launcher-term\"; kill -TERM $p0 $p1; wait; exit 143' TERM\n"
                                   "RANK=0 WORLD_SIZE=2 \"$@\" & p0=$!\n"
                                   "RANK=1 WORLD_SIZE=2 \"$@\" & p1=$!\n"
                                   "wait\n",
                                   &out_dir);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kDeadline);
  ASSERT_TRUE(rec.launcher_process);
  EXPECT_TRUE(fileExists(out_dir + "/launcher-term"));
  // Faultline sent one SIGTERM, to the launcher; the launcher ended its ranks.
  std::vector<SignalSent> stops;
  for (const auto& s : rec.teardown.signals) {
    if (s.signal == "SIGTERM" || s.signal == "SIGKILL") stops.push_back(s);
  }
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].pid, rec.launcher_process->pid);
  EXPECT_EQ(rec.launcher_process->exit_code, 143);
  EXPECT_EQ(rec.teardown.report.by, TeardownBy::kFaultline);
  EXPECT_TRUE(rec.teardown.report.clean);
  EXPECT_EQ(rec.launcher, "external");
}

// A stopped rank (a freeze) holds the launcher's SIGTERM pending: unless the
// teardown ends it, a launcher that waits for its ranks (torch's agent, 30 s)
// outlives its grace and is SIGKILLed. The teardown kills it: continued, it
// would run its own code first.
TEST(LauncherTeardown, AStoppedRankIsEndedBesideTheLaunchersStop) {
  LeakGuard guard;
  TempDir dir;
  std::string out_dir;
  auto run = runForwardingLauncher(dir,
                                   "trap 'kill -TERM $p0 $p1; wait $p0; wait $p1; exit 143' TERM\n"
                                   "RANK=0 WORLD_SIZE=2 \"$@\" & p0=$!\n"
                                   "RANK=1 WORLD_SIZE=2 \"$@\" & p1=$!\n"
                                   // rank 1 once it runs the rank's program, not the shell's fork before exec
                                   "while [ \"$(readlink /proc/$p1/exe)\" = \"$(readlink /proc/$$/exe)\" ]; do sleep 0.01; done\n"
                                   "kill -STOP $p1\n"
                                   "wait\n",
                                   &out_dir);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_TRUE(rec.launcher_process);
  EXPECT_EQ(rec.launcher_process->exit_code, 143);
  // Faultline's SIGTERM went to the launcher alone, and a SIGKILL to the
  // stopped rank 1 alone (continued, a rank with a SIGTERM handler of its
  // own would run on); the launcher ended rank 0 within its grace: the
  // ladder's SIGTERM to every process was never needed.
  std::set<int> killed_ranks;
  for (const auto& s : rec.teardown.signals) {
    if (s.signal == "SIGTERM") EXPECT_EQ(s.pid, rec.launcher_process->pid);
    if (s.signal == "SIGKILL") {
      ASSERT_TRUE(s.rank) << "pid " << s.pid;
      killed_ranks.insert(*s.rank);
    }
  }
  EXPECT_EQ(killed_ranks, std::set<int>{1});
  EXPECT_TRUE(rec.teardown.report.survivors.empty());
  EXPECT_TRUE(rec.teardown.report.clean);
}

}  // namespace
}  // namespace faultline::supervise
