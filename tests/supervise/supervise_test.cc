// superviseRun against real hostile processes, in process, so that the
// harness's own fds and children can be checked after every run.
#include "harness/supervise/supervisor.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <gtest/gtest.h>

#include "harness/supervise/cgroup.h"
#include "harness/supervise/proc_fs.h"
#include "tests/supervise/run_fixtures.h"
#include "tests/supervise/test_support.h"
#include "tests/test_scale.h"

namespace faultline::supervise {
namespace {

using faultline::testing::fileExists;
using faultline::testing::hostilePath;
using faultline::testing::LeakGuard;
using faultline::testing::readFile;
using faultline::testing::TempDir;
using faultline::testing::expectNothingLeft;

// cgroup v2 delegation, ptrace of siblings and the proc connector all need
// root here; without it the harness falls back, and the tests say so.
bool cgroupAvailable() {
  static const bool ok = [] { return RunCgroup::create("faultline-probe-" + newRunId()).has_value(); }();
  return ok;
}
bool isRoot() { return ::geteuid() == 0; }


TEST(Supervise, CleanRunOfFourRanksWithTheContractEnvironment) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 4, {});
  o.launch.command = {"/bin/sh", "-c",
                      "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR $MASTER_PORT "
                      "$TORCHELASTIC_ERROR_FILE $FAULTLINE_RUN_DIR $FAULTLINE_EVENTS"};
  o.launch.run_id = newRunId();
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kNone);
  EXPECT_EQ(rec.world_size, 4);
  ASSERT_EQ(rec.ranks.size(), 4u);
  for (const auto& r : rec.ranks) {
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_FALSE(r.signal);
    EXPECT_FALSE(r.killed_by_teardown);
    ASSERT_TRUE(r.exit_ns);
    EXPECT_GE(*r.exit_ns, r.start_ns);
  }
  EXPECT_TRUE(rec.teardown.report.clean);
  EXPECT_EQ(rec.teardown.report.escalation, Escalation::kNone);
  const std::string out = o.out_dir;
  std::istringstream line(readFile(out + "/ranks/2/stdout"));
  std::string rank, local, world, local_world, group, addr, port, error_file, run_dir, events;
  line >> rank >> local >> world >> local_world >> group >> addr >> port >> error_file >> run_dir >> events;
  EXPECT_EQ(rank, "2");
  EXPECT_EQ(local, "2");
  EXPECT_EQ(world, "4");
  EXPECT_EQ(local_world, "4");
  EXPECT_EQ(group, "0");
  EXPECT_EQ(addr, "127.0.0.1");
  EXPECT_GT(std::stoi(port), 0);
  EXPECT_EQ(error_file, out + "/ranks/2/error.json");
  EXPECT_EQ(run_dir, out);
  EXPECT_EQ(events, out + "/ranks/2/events.jsonl");
  expectNothingLeft(o.launch.run_id);
}

TEST(Supervise, RankExitingThreeIsTheFirstFailureAndOthersAreTornDown) {
  LeakGuard guard;
  TempDir dir;
  // Rank 1 fails once the others have shown life (a failure at start-up
  // while they are silent gets them a moment first: the test below).
  auto run = superviseRun(builtin(dir, 3, {"1=exit:3@0.3", "*=sleep:60"}));
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_EQ(rankOf(rec, 1).exit_code, 3);
  EXPECT_FALSE(rankOf(rec, 1).killed_by_teardown);
  for (int r : {0, 2}) {
    EXPECT_EQ(rankOf(rec, r).signal, "SIGTERM");
    EXPECT_TRUE(rankOf(rec, r).killed_by_teardown);
  }
  EXPECT_TRUE(rec.teardown.report.clean);
  EXPECT_EQ(rec.teardown.report.escalation, Escalation::kSigterm);
  // Cooperative ranks: well inside the 1 s grace, in a plain build (speed is bench/run's; under a
  // sanitizer every process is slower, so the bound stretches by FAULTLINE_TEST_TIME_SCALE).
  EXPECT_LT(rec.teardown.report.duration_ms, testing::scaledMs(900));
  EXPECT_GT(rec.teardown.started_ns, 0);
}

TEST(Supervise, AStartUpFailureGivesTheSilentRanksAMomentToFailTheSameWay) {
  // Rank 1 fails at once; ranks 0 and 2 are still silent and busy starting
  // (on the CPU, as an import is) and fail the same way half a second later.
  // Stopping them at rank 1's exit would hide that every rank fails: they
  // get up to 2 s, and the run ends as soon as the last of them has.
  LeakGuard guard;
  TempDir dir;
  auto run = superviseRun(builtin(dir, 3, {"1=exit:3", "*=exit:3%0.5"}));
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.rank, 1);
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(rankOf(rec, r).exit_code, 3) << "rank " << r;
    EXPECT_FALSE(rankOf(rec, r).killed_by_teardown) << "rank " << r;
  }
  bool said = false;
  for (const auto& t : run->timeline) said = said || t.what.find("failed at start-up") != std::string::npos;
  EXPECT_TRUE(said);
  EXPECT_TRUE(rec.teardown.report.clean);
  EXPECT_LT(rec.teardown.report.duration_ms, testing::scaledMs(1900));  // ended with the last rank, not the 2 s
}

// Peers idle while starting (no CPU, no I/O: waiting for something) are not
// racing to the same error: the run stops as soon as that is seen, not after
// the 2 s a busy start-up gets. (Before: 4 ranks, rank 1 exiting 3 at 0.3 s,
// ended at 2.35 s.)
TEST(Supervise, AStartUpFailureBesideIdlePeersStopsWithoutTheWait) {
  LeakGuard guard;
  TempDir dir;
  const auto t0 = std::chrono::steady_clock::now();
  // The shim's first lines only: not past start-up by their events.
  auto run = superviseRun(builtin(dir, 4, {"shim-lines", "1=exit:3@0.3", "*=sleep:60"}));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_EQ(rankOf(rec, 1).exit_code, 3);
  for (int r : {0, 2, 3}) EXPECT_TRUE(rankOf(rec, r).killed_by_teardown) << "rank " << r;
  bool said = false;
  for (const auto& t : run->timeline) said = said || t.what.find("idle (no CPU, no I/O) while starting") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(run->timeline.size());
  EXPECT_TRUE(rec.teardown.report.clean);
  // 0.3 s, two 100 ms polls, the teardown: within 1 s of the start (not 2.35 s).
  EXPECT_LT(took, testing::scaled(std::chrono::milliseconds(1000)));
  EXPECT_LT(rec.teardown.report.duration_ms, testing::scaledMs(700));
}

TEST(Supervise, TheShimsFirstLinesAreNoProgressPastStartUp) {
  // Every rank writes the shim's "start" and "instrument" events before its
  // script runs (then fails on a bad argument): those are no sign that the
  // others got past their start-up, and while busy starting they still get
  // their moment.
  LeakGuard guard;
  TempDir dir;
  auto run = superviseRun(builtin(dir, 3, {"shim-lines", "1=exit:2", "*=exit:2%0.5"}));
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.rank, 1);
  for (int r : {0, 1, 2}) {
    EXPECT_EQ(rankOf(rec, r).exit_code, 2) << "rank " << r;
    EXPECT_FALSE(rankOf(rec, r).killed_by_teardown) << "rank " << r;
  }
  EXPECT_TRUE(rec.teardown.report.clean);
  int with_lines = 0;  // the shim's lines were there to be read
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path())) {
    with_lines += e.path().filename() == "events.jsonl" && std::filesystem::file_size(e.path()) > 0;
  }
  EXPECT_EQ(with_lines, 3);
}

TEST(Supervise, SegfaultIsReportedAsSignal) {
  LeakGuard guard;
  TempDir dir;
  auto run = superviseRun(builtin(dir, 2, {"0=segv", "*=sleep:60"}));
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.rank, 0);
  EXPECT_EQ(rankOf(run->record, 0).signal, "SIGSEGV");
  EXPECT_FALSE(rankOf(run->record, 0).exit_code);
  EXPECT_NE(run->record.trigger.detail.find("SIGSEGV"), std::string::npos);
}

// What a rank forks (a DataLoader worker, a helper) dies out of the builtin
// launcher's sight; the proc connector reports its exit, with its parent,
// so the diagnosis can tie it to the rank (docs/DIAGNOSIS.md section 2).
TEST(Supervise, TheBuiltinLauncherRecordsHowARanksChildDied) {
  if (!isRoot()) GTEST_SKIP() << "the proc connector needs CAP_NET_ADMIN";
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {});
  o.launch.command = {"/bin/sh", "-c", "if [ \"$RANK\" = 1 ]; then sh -c 'kill -SEGV $$'; exit 1; fi; sleep 30"};
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.rank, 1);
  const int rank1 = rankOf(rec, 1).pid;
  std::vector<ProcessExit> crashed;
  for (const ProcessExit& e : rec.process_exits) {
    EXPECT_FALSE(e.rank) << "a rank's own exit is its record's, by waitpid";
    EXPECT_NE(e.pid, rank1);
    if (e.signal == "SIGSEGV") crashed.push_back(e);
  }
  ASSERT_EQ(crashed.size(), 1u);
  EXPECT_EQ(crashed[0].ppid, rank1);
  // Read at its exec; "" when it was gone before the read (it dies at once).
  EXPECT_TRUE(crashed[0].cmdline.empty() || crashed[0].cmdline.find("kill -SEGV") != std::string::npos)
      << crashed[0].cmdline;
  EXPECT_LT(crashed[0].t_ns, *rankOf(rec, 1).exit_ns + 1'000'000'000);
}

TEST(Supervise, RankIgnoringSigtermIsKilledAfterGrace) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"delay=0.3", "1=exit:1", "0=ignore-term:60"});
  o.launch.run_id = newRunId();
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& td = run->record.teardown;
  EXPECT_EQ(td.report.escalation, Escalation::kSigkill);
  EXPECT_FALSE(td.report.clean);
  EXPECT_GE(td.report.duration_ms, 900);  // a lower bound: the grace, never scaled
  EXPECT_LT(td.report.duration_ms, testing::scaledMs(5000));
  ASSERT_EQ(td.report.survivors.size(), 1u);
  EXPECT_EQ(td.report.survivors[0].pid, rankOf(run->record, 0).pid);
  EXPECT_EQ(rankOf(run->record, 0).signal, "SIGKILL");
  EXPECT_TRUE(rankOf(run->record, 0).killed_by_teardown);  // the SIGKILL was the ladder's
  bool term = false, kill = false;
  for (const auto& s : td.signals) {
    term = term || (s.signal == "SIGTERM" && s.rank == 0);
    kill = kill || (s.signal == "SIGKILL" && s.rank == 0);
  }
  EXPECT_TRUE(term);
  EXPECT_TRUE(kill);
  expectNothingLeft(o.launch.run_id);
}

// The ranks of a builtin run that may restart ([stack] max_restarts), as a
// shell script that sees its attempt in TORCHELASTIC_RESTART_COUNT.
SuperviseOptions restarting(const TempDir& dir, int nproc, int max_restarts, const std::string& script) {
  auto o = builtin(dir, nproc, {});
  o.launch.command = {"/bin/sh", "-c", script};
  o.launch.run_id = newRunId();
  o.max_restarts = max_restarts;
  return o;
}

// The process of `rank` in `attempt` (the record numbers them in start order).
const SupervisedRank* attemptOf(const SupervisorRecord& rec, int rank, int attempt) {
  for (const auto& r : rec.ranks) {
    if (r.rank == rank && r.attempt == attempt) return &r;
  }
  ADD_FAILURE() << "no rank " << rank << " in attempt " << attempt;
  return nullptr;
}

// faultline's own launcher restarts as torchelastic's agent does: rank 1's
// failure ends the attempt (rank 0 SIGTERMed, by the launcher, not the
// teardown), and every rank starts again with the next restart count and an
// error file and output of that attempt's own.
TEST(Supervise, ABuiltinRunThatMayRestartStartsEveryRankAgainAfterAFailure) {
  LeakGuard guard;
  TempDir dir;
  auto o = restarting(dir, 2, 2,
                      "echo $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS $TORCHELASTIC_ERROR_FILE; "
                      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                      "  if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 30; fi");
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.trigger.rank, 1);
  ASSERT_EQ(rec.ranks.size(), 4u);
  const auto* r0 = attemptOf(rec, 0, 0);
  const auto* r1 = attemptOf(rec, 1, 0);
  ASSERT_TRUE(r0 && r1);
  EXPECT_EQ(r1->exit_code, 3);
  EXPECT_EQ(r0->signal, "SIGTERM");
  EXPECT_FALSE(r0->killed_by_teardown);  // its launcher's restart ended it
  for (int rank : {0, 1}) {
    const auto* again = attemptOf(rec, rank, 1);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->exit_code, 0) << "rank " << rank;
    EXPECT_GE(again->start_ns, *r1->exit_ns);
  }
  EXPECT_EQ(rec.max_restarts, 2);
  const std::string out = o.out_dir;
  EXPECT_EQ(readFile(out + "/ranks/1/stdout"), "0 2 " + out + "/ranks/1/error.json\n");
  EXPECT_EQ(readFile(out + "/ranks/1/attempt_1/stdout"), "1 2 " + out + "/ranks/1/attempt_1/error.json\n");
  EXPECT_FALSE(fileExists(out + "/ranks/1/attempt_2"));  // no third attempt: the second succeeded
  EXPECT_TRUE(rec.teardown.report.clean);
  EXPECT_TRUE(rec.teardown.signals.empty());
  expectNothingLeft(o.launch.run_id);
}

// Restarts run out: the last attempt's failure ends the run, whose trigger
// stays the first attempt's failure.
TEST(Supervise, ABuiltinRunEndsWhenItsRestartsRunOut) {
  LeakGuard guard;
  TempDir dir;
  auto o = restarting(dir, 2, 1, "if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; exec sleep 30");
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_EQ(rec.ranks.size(), 4u);
  const auto* first = attemptOf(rec, 1, 0);
  const auto* last = attemptOf(rec, 1, 1);
  ASSERT_TRUE(first && last);
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_LT(rec.trigger.t_ns, last->start_ns);
  EXPECT_EQ(last->exit_code, 3);
  // The second attempt's rank 0 is the teardown's; the first's, the restart's.
  EXPECT_TRUE(attemptOf(rec, 0, 1)->killed_by_teardown);
  EXPECT_FALSE(attemptOf(rec, 0, 0)->killed_by_teardown);
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

// A rank that ignores the restart's SIGTERM gets SIGKILL after the grace,
// and only then does the next attempt start.
TEST(Supervise, ARankIgnoringTheRestartsSigtermIsKilledBeforeTheNextAttempt) {
  LeakGuard guard;
  TempDir dir;
  auto o = restarting(dir, 2, 1,
                      "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                      "  if [ $RANK = 1 ]; then sleep 0.3; exit 3; fi; trap '' TERM; exec sleep 30; fi");
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_EQ(rec.ranks.size(), 4u);
  const auto* stubborn = attemptOf(rec, 0, 0);
  ASSERT_TRUE(stubborn);
  EXPECT_EQ(stubborn->signal, "SIGKILL");
  ASSERT_TRUE(stubborn->exit_ns);
  // The grace (1 s) passed between the failure and the SIGKILL: a lower bound, never scaled.
  EXPECT_GE(*stubborn->exit_ns - *attemptOf(rec, 1, 0)->exit_ns, 900'000'000);
  EXPECT_GE(attemptOf(rec, 0, 1)->start_ns, *stubborn->exit_ns);
  EXPECT_EQ(attemptOf(rec, 0, 1)->exit_code, 0);
  EXPECT_TRUE(rec.teardown.report.clean);
  expectNothingLeft(o.launch.run_id);
}

// Seen on a 16-core GPU machine: the reference trainer's scripted SIGKILL on
// rank 0 and rank 1's SIGPIPE (its Gloo pair's peer gone) came a moment
// apart; the supervisor reaped rank 1 first, sent rank 0 the teardown's
// SIGTERM, then reaped it, and counted rank 0's own SIGKILL as the
// teardown's. Here rank 0 dies of a SIGKILL the teardown never sent, always
// after its SIGTERM: it ended on its own.
TEST(Supervise, ASigkillTheTeardownNeverSentIsNotTheTeardowns) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"delay=0.3", "1=exit:1", "0=term-sigkill:60"});
  o.launch.run_id = newRunId();
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& td = run->record.teardown;
  EXPECT_EQ(td.report.escalation, Escalation::kSigterm);
  EXPECT_TRUE(td.report.clean);
  EXPECT_EQ(rankOf(run->record, 0).signal, "SIGKILL");
  EXPECT_FALSE(rankOf(run->record, 0).killed_by_teardown);
  EXPECT_FALSE(rankOf(run->record, 1).killed_by_teardown);
  expectNothingLeft(o.launch.run_id);
}

void daemonIsFoundAndKilled(bool allow_cgroup) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=daemon"});
  o.allow_cgroup = allow_cgroup;
  o.launch.run_id = newRunId();
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.containment, allow_cgroup && cgroupAvailable() ? "cgroup" : "subreaper");
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kNone);
  EXPECT_FALSE(rec.teardown.report.clean);
  const std::string pid_text = readFile(o.out_dir + "/daemon.pid");
  ASSERT_FALSE(pid_text.empty());
  const pid_t daemon = std::stoi(pid_text);
  bool reported = false;
  for (const auto& s : rec.teardown.report.survivors) reported = reported || s.pid == daemon;
  EXPECT_TRUE(reported) << "daemon " << daemon << " not among the survivors";
  EXPECT_FALSE(isAlive(daemon));
  expectNothingLeft(o.launch.run_id);
}

TEST(Supervise, SetsidDaemonGrandchildIsFoundKilledAndReportedInCgroup) { daemonIsFoundAndKilled(true); }
TEST(Supervise, SetsidDaemonGrandchildIsFoundKilledAndReportedUnderSubreaper) { daemonIsFoundAndKilled(false); }

TEST(Supervise, StdoutFloodNeverBlocks) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 1, {"*=flood:200"});
  const auto t0 = std::chrono::steady_clock::now();
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(rankOf(run->record, 0).exit_code, 0);
  struct stat st{};
  ASSERT_EQ(::stat((o.out_dir + "/ranks/0/stdout").c_str(), &st), 0);
  EXPECT_GE(st.st_size, 200LL * 1024 * 1024);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, testing::scaled(std::chrono::seconds(60)));
}

TEST(Supervise, HangOfSilentUninstrumentedRanks) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=sleep:60"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kHang);
  EXPECT_NE(run->record.trigger.detail.find("no output"), std::string::npos);
  const double hang_after_ms = (run->record.trigger.t_ns - run->record.start_ns) / 1e6;
  EXPECT_GE(hang_after_ms, 950);
  EXPECT_LT(hang_after_ms, testing::scaledMs(10000));
  EXPECT_TRUE(run->record.teardown.report.clean);
}

// NAME=VALUE in this process until the end of the scope, then as it was.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A stuck rank the machine has no dumper for is said, not skipped in
// silence (the GPU machine had no eu-stack, gdb or py-spy): the diagnosis of
// a hang without events rests on those dumps.
TEST(Supervise, AHangWithNoStackDumperSaysWhichRanksHaveNoDump) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=sleep:60"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = true;
  std::filesystem::create_directories(dir / "empty");
  ScopedEnv path("PATH", dir / "empty");
  ScopedEnv opt("FAULTLINE_OPT", dir / "empty");
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kHang);
  EXPECT_TRUE(run->record.teardown.stack_dumps.empty());
  const std::string want =
      "no stack dump of ranks 0,1: neither eu-stack nor gdb is installed (apt-get install elfutils)";
  EXPECT_NE(std::find(run->notes.begin(), run->notes.end(), want), run->notes.end())
      << ::testing::PrintToString(run->notes);
  EXPECT_TRUE(run->record.teardown.report.clean);
}

// LibTorch's start-up takes seconds of CPU before a rank writes anything, many
// more on a loaded machine: a silent rank that is using CPU is starting.
TEST(Supervise, SilentRankUsingCpuIsStartingNotHung) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=silent-spin:3", "1=silent-spin:1.5"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kNone) << run->record.trigger.detail;
  for (int r = 0; r < 2; ++r) EXPECT_EQ(rankOf(run->record, r).exit_code, std::optional<int>(0));
  bool noted = false;
  for (const auto& e : run->timeline) noted = noted || e.what.find("still using CPU") != std::string::npos;
  EXPECT_TRUE(noted) << "the timeline says why the hang timer was extended";
}

// Ranks that have shown life and then compute without printing are no hang:
// an uninstrumented run hangs only where some rank is blocked.
TEST(Supervise, SilentUninstrumentedRanksAllComputingAreNoHang) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=spin:3"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kNone) << run->record.trigger.detail;
  for (int r = 0; r < 2; ++r) EXPECT_EQ(rankOf(run->record, r).exit_code, std::optional<int>(0));
  bool noted = false;
  for (const auto& e : run->timeline) noted = noted || e.what.find("every rank is using CPU") != std::string::npos;
  EXPECT_TRUE(noted) << "the timeline says why silence was no hang";
}

// One rank computing silently while its peer is blocked: a hang, and the
// trigger names the blocked rank.
TEST(Supervise, ABlockedUninstrumentedRankBesideABusyOneIsAHang) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=spin:30", "1=sleep:30"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kHang);
  EXPECT_NE(run->record.trigger.detail.find("rank(s) 1 blocked (no CPU time for 500 ms)"), std::string::npos)
      << run->record.trigger.detail;
  EXPECT_TRUE(run->record.teardown.report.clean);
}

// Once it stops using CPU a silent rank is hung after all, one hang timeout
// later than a rank that was never busy.
TEST(Supervise, SilentRankThatStopsUsingCpuIsAHang) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=silent-spin-hang:0.5"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kHang);
  const double hang_after_ms = (run->record.trigger.t_ns - run->record.start_ns) / 1e6;
  EXPECT_GE(hang_after_ms, 1950);
  EXPECT_LT(hang_after_ms, testing::scaledMs(20000));
  EXPECT_TRUE(run->record.teardown.report.clean);
}

TEST(Supervise, HangInCollectiveNamesWaitingRankAndDumpsStacks) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=coll-wait:60", "1=coll-skip:60"});
  o.hang_timeout_s = 1;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kHang);
  EXPECT_NE(rec.trigger.detail.find("rank 0 in allreduce seq 1"), std::string::npos) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("rank 1 not in a collective"), std::string::npos) << rec.trigger.detail;
  if ((fileExists("/usr/bin/eu-stack") || fileExists("/usr/bin/gdb")) && isRoot()) {
    int native = 0;
    for (const auto& d : rec.teardown.stack_dumps) native += (d.method == "eu-stack" || d.method == "gdb") && d.ok;
    EXPECT_EQ(native, 2);
    EXPECT_NE(readFile(o.out_dir + "/ranks/0/stacks.txt").find("nanosleep"), std::string::npos);
  }
}

// With the defaults only (no fixed hang timeout, no rhythm learned: one
// collective completed), a rank idle outside the collective its peer waits in
// is named by the idle rule within about a second, not at the deadline.
TEST(Supervise, AHangAtTheFirstCollectivesIsNamedWithoutHistoryOrTimeout) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=coll-wait:60", "1=coll-skip:60"});
  o.gdb_stacks = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto run = superviseRun(o);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kHang);
  EXPECT_EQ(rec.trigger.rank, 1);
  EXPECT_NE(rec.trigger.detail.find("adaptive: rank 0 waited"), std::string::npos) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("in allreduce seq 1; rank 1 is not in it and idle"), std::string::npos)
      << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("no rhythm needed"), std::string::npos) << rec.trigger.detail;
  // The idle rule's 1 s, its first look at 0.25 s, a 50 ms poll, the teardown.
  EXPECT_LT(took, testing::scaled(std::chrono::milliseconds(4000)));
  EXPECT_TRUE(rec.teardown.report.clean);
}

TEST(Supervise, InstrumentedRanksOutsideCollectivesAreNoHang) {
  // Instrumented ranks outside any collective are not a hang, however silent.
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=coll-skip:2"});
  o.hang_timeout_s = 0.5;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kNone) << run->record.trigger.detail;
}

// Every rank destroyed its process group and none exits, with no peer
// finished to compare with (torch 1.13's Gloo teardown deadlock can take
// every rank): a shutdown hang once a rank is seen blocked; ranks still
// working after their groups are gone are none.
TEST(Supervise, RanksBlockedAfterDestroyingTheirGroupsAreAShutdownHang) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=pg-destroyed:30"});
  o.hang_timeout_s = 0.5;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kHang) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("rank(s) 0,1 destroyed their process group and never exited"), std::string::npos)
      << rec.trigger.detail;
  EXPECT_TRUE(rec.teardown.report.clean);
}

TEST(Supervise, RanksWorkingAfterDestroyingTheirGroupsAreNoHang) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"*=pg-destroyed-spin:3"});
  o.hang_timeout_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kNone) << run->record.trigger.detail;
  for (int r = 0; r < 2; ++r) EXPECT_EQ(rankOf(run->record, r).exit_code, std::optional<int>(0));
}

TEST(Supervise, SilenceIsAHangWhenARanksCollectivesAreNotTraced) {
  // Rank 1 may be waiting in an all-reduce the shim could not wrap: nobody
  // being in a traced collective no longer means the ranks are computing.
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=coll-skip:30", "1=coll-untraced:30"});
  o.hang_timeout_s = 0.5;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kHang) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("rank 0 not in a collective"), std::string::npos) << rec.trigger.detail;
  EXPECT_NE(rec.trigger.detail.find("rank 1 collective tracing unavailable (patch dist.all_reduce failed: TypeError: x)"),
            std::string::npos)
      << rec.trigger.detail;
}

TEST(Supervise, SigusrOneOnlyToRanksThatCatchIt) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"0=usr1:60", "*=sleep:60"});
  o.deadline_s = 1;
  o.gdb_stacks = false;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  EXPECT_EQ(run->record.trigger.kind, TriggerKind::kDeadline);
  ASSERT_EQ(run->record.teardown.stack_dumps.size(), 1u);
  EXPECT_EQ(run->record.teardown.stack_dumps[0].rank, 0);
  EXPECT_EQ(run->record.teardown.stack_dumps[0].method, "sigusr1");
  EXPECT_NE(readFile(o.out_dir + "/ranks/0/stderr").find("most recent call first"), std::string::npos);
  // Rank 1 would have died of SIGUSR1; it got SIGTERM from the ladder instead.
  EXPECT_EQ(rankOf(run->record, 1).signal, "SIGTERM");
}

TEST(Supervise, SharedMemoryLeftBehindIsALeak) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 2, {"delay=0.3", "1=exit:1", "0=shm:60"});
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  std::string shm = readFile(o.out_dir + "/shm-0");
  ASSERT_FALSE(shm.empty());
  shm.pop_back();  // newline
  const auto& td = run->record.teardown.report;
  EXPECT_FALSE(td.clean);
  ASSERT_EQ(td.leaks.size(), 1u);
  EXPECT_EQ(td.leaks[0], "shm:" + shm + " (left behind)");
  ::unlink(shm.c_str());
}

TEST(Supervise, PreviousRunFilesAreClearedFromOut) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 3, {"*=ok"});
  ASSERT_TRUE(superviseRun(o));
  o.launch.nproc = 1;
  auto run = superviseRun(o);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->record.ranks.size(), 1u);
  EXPECT_FALSE(fileExists(o.out_dir + "/ranks/2"));
}

TEST(Supervise, MissingCommandIsBadUsage) {
  LeakGuard guard;
  TempDir dir;
  auto o = builtin(dir, 1, {});
  o.launch.command = {"/nonexistent/faultline-no-such-binary"};
  auto run = superviseRun(o);
  ASSERT_FALSE(run);
  EXPECT_EQ(run.error().code, ErrorCode::kBadUsage);
}

SuperviseOptions external(const TempDir& dir, std::vector<std::string> command) {
  SuperviseOptions o;
  o.launch.launcher = "external";
  o.launch.command = std::move(command);
  o.out_dir = dir / "run";
  o.grace_s = 1;
  o.deadline_s = 90;
  o.launcher_allowance_s = 15;
  return o;
}

void externalShellLauncher(bool proc_connector) {
  if (proc_connector && !isRoot()) GTEST_SKIP() << "the proc connector needs CAP_NET_ADMIN";
  LeakGuard guard;
  TempDir dir;
  const std::string script = dir / "launch.sh";
  {
    std::ofstream s(script);
    s << "#!/bin/sh\nfor r in 0 1 2; do RANK=$r WORLD_SIZE=3 \"$@\" & done\nwait\n";
  }
  ::chmod(script.c_str(), 0755);
  auto o = external(dir, {script, hostilePath(), "delay=0.3", "1=exit:3", "*=sleep:1"});
  o.allow_proc_connector = proc_connector;
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_EQ(rec.ranks.size(), 3u);
  EXPECT_EQ(rec.world_size, 3);
  if (proc_connector) {
    EXPECT_EQ(rankOf(rec, 1).exit_code, 3);
  } else {
    // Without the proc connector an exit status is only seen while the rank
    // is a zombie of its launcher; the shell's wait may reap it first.
    EXPECT_TRUE(!rankOf(rec, 1).exit_code || rankOf(rec, 1).exit_code == 3);
  }
  ASSERT_TRUE(rankOf(rec, 1).exit_ns);
  if (proc_connector) {
    EXPECT_EQ(rankOf(rec, 0).exit_code, 0);
    EXPECT_EQ(rankOf(rec, 2).exit_code, 0);
    EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
    EXPECT_EQ(rec.trigger.rank, 1);
  }
  ASSERT_TRUE(rec.launcher_process);
  EXPECT_EQ(rec.launcher_process->exit_code, 0);
  EXPECT_TRUE(fileExists(o.out_dir + "/launcher/stdout"));
}

TEST(Supervise, ExternalShellLauncherRanksAreAttributedByRank) { externalShellLauncher(true); }
TEST(Supervise, ExternalShellLauncherRanksAreFoundWithoutProcConnector) { externalShellLauncher(false); }

TEST(Supervise, ExternalTorchrunRanksAreAttributedCorrectly) {
  if (!fileExists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  if (!isRoot()) GTEST_SKIP() << "exit statuses of torchrun's ranks need the proc connector (root)";
  LeakGuard guard;
  TempDir dir;
  auto o = external(dir, {"/usr/bin/torchrun", testing::freeTorchrunPortFlag(), "--no_python", "--nproc_per_node=2", "--redirects", "2", "--tee", "2",
                          "--log_dir", dir / "torchrun-logs", hostilePath(), "delay=0.5", "1=segv", "*=sleep:60"});
  auto run = superviseRun(o);
  ASSERT_TRUE(run) << run.error().str();
  const auto& rec = run->record;
  ASSERT_GE(rec.ranks.size(), 2u);
  EXPECT_EQ(rankOf(rec, 1).signal, "SIGSEGV");
  EXPECT_EQ(rec.trigger.kind, TriggerKind::kRankFailure);
  EXPECT_EQ(rec.trigger.rank, 1);
  // Rank 0 was ended by torchrun itself, after rank 1's crash.
  ASSERT_TRUE(rankOf(rec, 0).exit_ns);
  EXPECT_GT(*rankOf(rec, 0).exit_ns, *rankOf(rec, 1).exit_ns);
  ASSERT_TRUE(rec.launcher_process);
  EXPECT_NE(rec.launcher_process->exit_code, 0);
  EXPECT_TRUE(rec.teardown.report.clean);
}

}  // namespace
}  // namespace faultline::supervise
