// The watch loop when its system calls fail (harness/os/sys.h): EINTR from
// waitpid loses no exit, a SIGTERM the kernel refuses is said and the ladder
// goes on to SIGKILL, /proc unreadable for want of descriptors (EMFILE) takes
// no live process for dead, and nothing of the run is left either way.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <gtest/gtest.h>

#include "harness/supervise/proc_fs.h"
#include "harness/supervise/supervisor.h"
#include "tests/support/faulty_sys.h"
#include "tests/supervise/run_fixtures.h"
#include "tests/supervise/test_support.h"

namespace faultline::supervise {
namespace {

using faultline::testing::FaultySys;
using faultline::testing::LeakGuard;
using faultline::testing::TempDir;
using faultline::testing::expectNothingLeft;
using Call = FaultySys::Call;

// Rank 1 fails once the others have shown life; the others are torn down.
SuperviseOptions threeRanksOneFails(const TempDir& dir) {
  SuperviseOptions o = builtin(dir, 3, {"1=exit:3@0.3", "*=sleep:60"});
  o.launch.run_id = newRunId();
  return o;
}

// The run with SYS in force, and only the run.
Result<SupervisedRun> superviseWith(FaultySys& sys, const SuperviseOptions& o) {
  os::ScopedSys scoped(sys);
  return superviseRun(o);
}

// The reaper stopped at the first EINTR; a rank whose SIGCHLD was spent on
// it went unseen until some later exit (or the deadline).
TEST(WatchLoopSeam, EintrFromWaitpidLosesNoExit) {
  LeakGuard guard;
  TempDir dir;
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kWaitpid, EINTR, 5));
  const auto o = threeRanksOneFails(dir);
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(sys.failed(Call::kWaitpid), 5);
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_EQ(rankOf(rec, 1).exit_code, 3);
  for (int r : {0, 2}) {
    EXPECT_EQ(rankOf(rec, r).signal, "SIGTERM");
  }
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

// kill(SIGTERM) refused (EPERM, as for a process that changed its
// credentials): the run's notes say so, the grace passes, SIGKILL ends the
// ranks, and the record shows the escalation.
TEST(WatchLoopSeam, ARefusedSigtermIsSaidAndTheLadderKills) {
  LeakGuard guard;
  TempDir dir;
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kKill, EPERM, -1).onSignal(SIGTERM));
  const auto o = threeRanksOneFails(dir);
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_GE(sys.failed(Call::kKill), 2);
  const auto& rec = run->record;
  EXPECT_EQ(rec.teardown.report.escalation, Escalation::kSigkill);
  for (int r : {0, 2}) {
    EXPECT_EQ(rankOf(rec, r).signal, "SIGKILL");
    EXPECT_TRUE(rankOf(rec, r).killed_by_teardown);
  }
  const bool said = std::any_of(run->notes.begin(), run->notes.end(), [](const std::string& n) {
    return n.find("SIGTERM) failed: Operation not permitted") != std::string::npos;
  });
  EXPECT_TRUE(said) << ::testing::PrintToString(run->notes);
  expectNothingLeft(o.launch.run_id);
}

// isAlive read /proc/PID/stat and took any failure for the process's end: a
// harness out of descriptors would have taken every rank for dead, and a
// teardown would have ended none.
TEST(ProcSeam, AProcessIsNotTakenForDeadWhenProcCannotBeRead) {
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kOpen, EMFILE, -1).onPath("/proc/"));
  os::ScopedSys scoped(sys);
  EXPECT_TRUE(isAlive(::getpid()));
  EXPECT_GE(sys.failed(Call::kOpen), 1);
  EXPECT_FALSE(isAlive(0x3ffffff0));  // no such pid: kill(pid, 0) says ESRCH
}

// Without a cgroup the run's processes are the harness's descendants, listed
// from /proc: with /proc unreadable the list was empty, and the teardown
// ended nothing (two ranks left running, "zombie" leaks). The ranks it knows
// are members whatever /proc says.
TEST(WatchLoopSeam, ProcUnreadableForWantOfDescriptorsEndsTheRunAsUsual) {
  LeakGuard guard;
  TempDir dir;
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kOpen, EMFILE, -1).onPath("/proc/"));
  const auto o = threeRanksOneFails(dir);
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_GE(sys.failed(Call::kOpen), 1);
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rankOf(rec, 1).exit_code, 3);
  for (int r : {0, 2}) {
    EXPECT_EQ(rankOf(rec, r).signal, "SIGTERM");
    EXPECT_TRUE(rankOf(rec, r).killed_by_teardown);
  }
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

}  // namespace
}  // namespace faultline::supervise
