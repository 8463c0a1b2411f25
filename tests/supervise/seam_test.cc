// The watch loop when its system calls fail (harness/os/sys.h): EINTR from
// waitpid loses no exit, a SIGTERM the kernel refuses is said and the ladder
// goes on to SIGKILL, /proc unreadable for want of descriptors (EMFILE) takes
// no live process for dead, inotify refused loses no event, no proc
// connector or pidfd loses no rank's end, and nothing of the run is left
// either way.
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

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

bool noted(const SupervisedRun& run, const std::string& what) {
  return std::any_of(run.notes.begin(), run.notes.end(), [&](const std::string& n) { return n.find(what) != std::string::npos; });
}

// Without inotify (inotify_init1 out of descriptors) the ranks' events were
// never read: no hang in a collective could be named, and the run waited for
// its deadline. The same files are read on a timer instead.
TEST(WatchLoopSeam, WithoutInotifyTheRanksEventsAreStillRead) {
  LeakGuard guard;
  TempDir dir;
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kInotifyInit, EMFILE, -1));
  auto o = builtin(dir, 2, {"0=coll-wait:60", "1=coll-skip:60"});
  o.launch.run_id = newRunId();
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(sys.failed(Call::kInotifyInit), 1);
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kHang) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("rank 0 in allreduce seq 1"), std::string::npos) << rec.trigger.detail;
  EXPECT_TRUE(noted(*run, "inotify_init1 failed: Too many open files; the run's files are read every 50 ms instead"))
      << ::testing::PrintToString(run->notes);
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

// One watch refused (ENOSPC: past fs.inotify.max_user_watches) on a rank's
// directory: that rank's events are read on the timer, the others' by inotify.
TEST(WatchLoopSeam, ARefusedWatchIsReadOnATimer) {
  LeakGuard guard;
  TempDir dir;
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kInotifyAddWatch, ENOSPC, -1).onPath("/ranks/0"));
  auto o = builtin(dir, 2, {"0=coll-wait:60", "1=coll-skip:60"});
  o.launch.run_id = newRunId();
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_GE(sys.failed(Call::kInotifyAddWatch), 1);
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kHang) << run->record.trigger.detail;
  EXPECT_NE(run->record.trigger.detail.find("rank 0 in allreduce seq 1"), std::string::npos) << run->record.trigger.detail;
  EXPECT_TRUE(noted(*run, "No space left on device; read every 50 ms instead")) << ::testing::PrintToString(run->notes);
  expectNothingLeft(o.launch.run_id);
}

// A launcher's ranks, found without the proc connector (its socket refused)
// and without pidfds (out of descriptors): a pidfd that could not be opened
// was taken for a rank already gone, so every rank "ended" the moment it was
// found, and the run's failure went unseen. Their ends are looked for on the
// rescan instead, and rank 1's failure is the trigger. (The launcher never
// reaps, so that a failed rank's status stays readable as a zombie's.)
TEST(WatchLoopSeam, NoPidfdIsNoEndOfTheRank) {
  LeakGuard guard;
  TempDir dir;
  const std::string script = dir / "launch.sh";
  {
    std::ofstream sh(script);
    sh << "#!/bin/sh\nfor r in 0 1 2; do RANK=$r WORLD_SIZE=3 \"$@\" & done\nexec sleep 60\n";
  }
  ::chmod(script.c_str(), 0755);
  FaultySys sys;
  sys.add(FaultySys::Rule(Call::kSocket, EMFILE, -1));
  sys.add(FaultySys::Rule(Call::kPidfdOpen, EMFILE, -1));
  SuperviseOptions o;
  o.launch.launcher = "external";
  o.launch.command = {script, testing::hostilePath(), "delay=0.3", "1=exit:3@1", "*=sleep:60"};
  o.launch.run_id = newRunId();
  o.out_dir = dir / "run";
  o.grace_s = 1;
  o.deadline_s = 60;
  o.launcher_allowance_s = 1;
  Result<SupervisedRun> run = superviseWith(sys, o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_GE(sys.failed(Call::kSocket), 1);
  EXPECT_GE(sys.failed(Call::kPidfdOpen), 3);
  const auto& rec = run->record;
  ASSERT_EQ(rec.ranks.size(), 3u);
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure) << rec.trigger.detail;
  EXPECT_EQ(rec.trigger.rank, 1);
  for (int r : {0, 2}) EXPECT_TRUE(rankOf(rec, r).killed_by_teardown) << r;
  EXPECT_TRUE(noted(*run, "proc connector unavailable")) << ::testing::PrintToString(run->notes);
  EXPECT_TRUE(noted(*run, "pidfd_open failed for rank 1")) << ::testing::PrintToString(run->notes);
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

}  // namespace
}  // namespace faultline::supervise
