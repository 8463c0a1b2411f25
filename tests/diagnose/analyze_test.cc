// Root-cause rules on hand-built runs: earliest primary by ns, collateral never
// the root cause, only-collateral says so, hangs, shutdown hangs, launcher errors.
#include "harness/diagnose/analyze.h"
#include "harness/diagnose/analysis.h"

#include <gtest/gtest.h>

#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;
using testing::History;

Evidence pyError(const std::string& type, const std::string& msg, const std::string& file, int line) {
  Evidence e;
  e.kind = Kind::kPythonException;
  e.type = type;
  e.message = msg;
  e.location = Location{file, line};
  e.origin = "stderr";
  return e;
}

Evidence peerClosed() {
  Evidence e = pyError("RuntimeError", "[pair.cc:598] Connection closed by peer", "/app/train.py", 50);
  e.collateral = true;
  e.collateral_reason = "a peer closed the connection";
  return e;
}

const RankVerdict& verdict(const Diagnosis& d, int r) {
  for (const auto& v : d.ranks) {
    if (v.rank == r) return v;
  }
  throw std::runtime_error("no rank");
}

TEST(Analyze, CleanRunHasNoRootCause) {
  RunInput in;
  addRank(in, 0, 0);
  addRank(in, 1, 0);
  Diagnosis d = analyzeRun(in);
  EXPECT_FALSE(d.root_cause);
  EXPECT_EQ(verdict(d, 0).role, RankRole::kClean);
}

TEST(Analyze, ARankWhoseWorkWasDoneIsNotFailedByItsLaunchersEnd) {
  // Ray Train ends its worker actors itself once the training function has
  // returned (ray.kill: exit code 1); the shim said `work_end` first.
  RunInput in;
  addRank(in, 0, 1).work_done = true;
  addRank(in, 1, 1).work_done = true;
  Diagnosis d = analyzeRun(in);
  EXPECT_FALSE(d.root_cause);
  EXPECT_EQ(verdict(d, 0).role, RankRole::kClean);
  EXPECT_EQ(exitText(in.ranks.at(1)), "its work done, ended by its launcher (exit code 1)");
}

TEST(Analyze, CollateralIsNeverTheRootCauseEvenWhenEarlier) {
  // Rank 0's peer error is logged first (torchrun would pick it); rank 1 is at fault.
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000).errors.push_back(peerClosed());
  addRank(in, 1, 1, std::nullopt, 2'000).errors.push_back(pyError("NameError", "name 'c' is not defined", "/app/train.py", 42));
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kPythonException);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_EQ(d.root_cause->summary, "rank 1: NameError: name 'c' is not defined (train.py:42)");
  EXPECT_EQ(verdict(d, 0).role, RankRole::kCollateral);
  EXPECT_EQ(verdict(d, 1).role, RankRole::kRootCause);
  ASSERT_GE(d.root_cause->layers.size(), 2u);
  EXPECT_EQ(d.root_cause->layers.front().layer, "process");
  EXPECT_EQ(d.root_cause->layers.back().layer, "error");
}

TEST(Analyze, EarliestPrimaryByNanoseconds) {
  // Both in the same wall-clock second; rank 2 failed 3 ms before rank 1.
  RunInput in;
  addRank(in, 0, std::nullopt, std::string("SIGTERM"), 1'000'000'009'000'000).killed_by_teardown = true;
  addRank(in, 1, 1, std::nullopt, 1'000'000'005'000'000).errors.push_back(pyError("ValueError", "late", "/a.py", 1));
  addRank(in, 2, std::nullopt, std::string("SIGSEGV"), 1'000'000'002'000'000);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kSignal);
  EXPECT_EQ(d.root_cause->rank, 2);
  EXPECT_EQ(d.root_cause->signal, "SIGSEGV");
  EXPECT_EQ(verdict(d, 0).role, RankRole::kKilledByTeardown);
  EXPECT_EQ(verdict(d, 1).role, RankRole::kCollateral);  // a later, independent failure
}

TEST(Analyze, OnlyCollateralIsUnknown) {
  RunInput in;
  addRank(in, 0, 1).errors.push_back(peerClosed());
  addRank(in, 1, 1).errors.push_back(peerClosed());
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kUnknown);
  EXPECT_FALSE(d.root_cause->rank);
  EXPECT_NE(d.root_cause->summary.find("no primary failure"), std::string::npos);
}

TEST(Analyze, SigkillWithoutEvidenceIsAPossibleOomKill) {
  RunInput in;
  addRank(in, 0, 1).errors.push_back(peerClosed());
  addRank(in, 1, std::nullopt, std::string("SIGKILL"));
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kSignal);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_NE(d.root_cause->summary.find("possible OOM kill"), std::string::npos);
}

// A native trainer's rank killed by SIGPIPE: it wrote to its Gloo pair after
// the peer died. Seen on a 16-core machine with the reference trainer's
// scripted SIGKILL on rank 0: rank 1's SIGPIPE was reaped 2 ms before rank
// 0's SIGKILL, and was named the root cause.
TEST(Analyze, SigpipeIsCollateralWhenAPeerFailedOtherwiseEvenIfReapedFirst) {
  RunInput in;
  addRank(in, 0, std::nullopt, std::string("SIGKILL"), 1'000'000'002'000'000);
  addRank(in, 1, std::nullopt, std::string("SIGPIPE"), 1'000'000'000'000'000);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 0);
  EXPECT_EQ(d.root_cause->signal, "SIGKILL");
  EXPECT_EQ(verdict(d, 0).role, RankRole::kRootCause);
  EXPECT_EQ(verdict(d, 1).role, RankRole::kCollateral);
  EXPECT_NE(verdict(d, 1).diagnosis.find("whose other end had closed"), std::string::npos) << verdict(d, 1).diagnosis;
}

TEST(Analyze, ALoneSigpipeIsAFailureOfItsOwn) {
  // A rank writing to a closed pipe of its own (a `| head` in its command):
  // no peer failed, so nothing else explains it.
  RunInput in;
  addRank(in, 0, 0);
  addRank(in, 1, std::nullopt, std::string("SIGPIPE"), 1'000'000'000'000'000);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_EQ(d.root_cause->signal, "SIGPIPE");
}

TEST(Analyze, ExitCodeWithoutEvidence) {
  RunInput in;
  addRank(in, 0, 0);
  addRank(in, 1, 3);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kExitCode);
  EXPECT_EQ(d.root_cause->exit_code, 3);
  EXPECT_EQ(d.root_cause->summary, "rank 1: exited with code 3");
}

TEST(Analyze, HungCollectiveFromEventsWhenOnlyCollateral) {
  RunInput in;
  RankInput& r0 = addRank(in, 0, 1);
  r0.errors.push_back(peerClosed());
  r0.events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  RankInput& r1 = addRank(in, 1, std::nullopt, std::string("SIGTERM"));
  r1.killed_by_teardown = true;
  r1.events = History(1).collective("allreduce", 0, 4).log();
  StackThread th;
  th.current = true;
  th.frames.push_back(PyFrame{"/usr/lib/python3.11/threading.py", 320, "wait", ""});
  th.frames.push_back(PyFrame{"/app/train.py", 77, "main", ""});
  r1.stacks.push_back(th);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kHungCollective);
  EXPECT_EQ(d.root_cause->rank, 1);
  ASSERT_TRUE(d.root_cause->collective);
  EXPECT_EQ(d.root_cause->collective->seq, 1);
  EXPECT_EQ(d.root_cause->missing_ranks, (std::vector<int>{1}));
  EXPECT_EQ(d.root_cause->waiting_ranks, (std::vector<int>{0}));
  ASSERT_TRUE(d.root_cause->location);
  EXPECT_EQ(d.root_cause->location->line, 77);
  EXPECT_EQ(verdict(d, 1).role, RankRole::kRootCause);
  EXPECT_EQ(verdict(d, 0).role, RankRole::kCollateral);
}

// A Ray worker whose collective lost its peer (the stopped rank, killed by
// the teardown) exits 1 with no error of its own in sight: Ray keeps it. A
// bare exit after the teardown began, a peer gone before it, is the
// teardown's doing, and the stopped rank the trigger named is the cause.
TEST(Analyze, ABareExitAfterTheTeardownTookItsPeerIsNotTheRootCause) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.rank = 1;
  rec.trigger.detail = "rank(s) 1 stopped (process state T: SIGSTOP, a freeze or a debugger)";
  rec.teardown.started_ns = 1'000'000'010'000'000;
  in.supervisor = rec;
  RankInput& r1 = addRank(in, 1, std::nullopt, std::string("SIGKILL"), 1'000'000'010'100'000);
  r1.killed_by_teardown = true;
  r1.events = History(1).collective("allreduce", 0, 4).log();
  RankInput& r0 = addRank(in, 0, 1, std::nullopt, 1'000'000'010'200'000);
  r0.events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 1) << d.root_cause->summary;
  EXPECT_EQ(verdict(d, 1).role, RankRole::kRootCause);
  EXPECT_NE(verdict(d, 0).role, RankRole::kRootCause);
  // Before the teardown, the same bare exit is a failure of its own.
  in.supervisor->teardown.started_ns = 1'000'000'010'300'000;
  Diagnosis before = analyzeRun(in);
  ASSERT_TRUE(before.root_cause);
  EXPECT_EQ(before.root_cause->rank, 0) << before.root_cause->summary;
}

// Ray ends its whole worker group with exit code 1 when the teardown stops
// its driver: after a hang, the first of them to go has no peer gone before
// it. The hang the supervisor found is the cause; bare exits after the
// teardown it began for it are the teardown's (python-hang on ray: rank 2's
// exit 1, first of three, once read as the root cause).
TEST(Analyze, BareExitsAfterATeardownForAHangAreTheTeardownsEvenTheFirst) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.rank = 0;
  rec.trigger.detail = "adaptive: ranks 1,2 waited 2940 ms in allreduce seq 9; rank 0 is not in it and idle";
  rec.teardown.started_ns = 1'000'000'010'000'000;
  in.supervisor = rec;
  RankInput& r2 = addRank(in, 2, 1, std::nullopt, 1'000'000'011'000'000);  // the first to go
  r2.events = History(2).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  RankInput& r1 = addRank(in, 1, 1, std::nullopt, 1'000'000'011'100'000);
  r1.events = History(1).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGKILL"), 1'000'000'011'200'000);
  r0.events = History(0).collective("allreduce", 0, 4).log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 0) << d.root_cause->summary;
  EXPECT_EQ(verdict(d, 2).role, RankRole::kKilledByTeardown) << verdict(d, 2).diagnosis;
  EXPECT_EQ(verdict(d, 1).role, RankRole::kKilledByTeardown) << verdict(d, 1).diagnosis;
  // A rank-failure trigger is not a hang: the first bare exit is still its own failure.
  in.supervisor->trigger = {};
  in.supervisor->trigger.kind = TriggerKind::kRankFailure;
  Diagnosis failure = analyzeRun(in);
  ASSERT_TRUE(failure.root_cause);
  EXPECT_EQ(failure.root_cause->rank, 2) << failure.root_cause->summary;
}

TEST(Analyze, ShutdownHang) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  in.supervisor = rec;
  addRank(in, 0, 0).events = History(0).step(0).step(1).ev("pg_destroy").exit(0).log();
  RankInput& r1 = addRank(in, 1, std::nullopt, std::string("SIGTERM"));
  r1.killed_by_teardown = true;
  r1.events = History(1).step(0).step(1).log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kShutdownHang);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_EQ(verdict(d, 1).role, RankRole::kRootCause);
  EXPECT_EQ(verdict(d, 0).role, RankRole::kClean);
}

TEST(Analyze, UninstrumentedHangIsATimeoutWithStacks) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = "no output for 5 s";
  in.supervisor = rec;
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGTERM"));
  r0.killed_by_teardown = true;
  StackThread th;
  th.frames.push_back(PyFrame{"/src/train.cc", 12, "waitForever", ""});
  r0.stacks.push_back(th);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kTimeout);
  EXPECT_EQ(d.root_cause->summary, "no progress: no output for 5 s");
  ASSERT_EQ(d.root_cause->layers.size(), 2u);
  EXPECT_EQ(d.root_cause->layers[0].text, "rank 0 at train.cc:12 in waitForever");
  EXPECT_EQ(verdict(d, 0).role, RankRole::kKilledByTeardown);
}

TEST(Analyze, AHangWithoutStackDumpsSaysWhyThereAreNone) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = "no output for 5 s";
  rec.notes = {"kill(12, SIGTERM) failed: Operation not permitted",
               "no stack dump of ranks 0,1: neither eu-stack nor gdb is installed (apt-get install elfutils)"};
  in.supervisor = rec;
  addRank(in, 0, std::nullopt, std::string("SIGTERM")).killed_by_teardown = true;
  addRank(in, 1, std::nullopt, std::string("SIGTERM")).killed_by_teardown = true;
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kTimeout);
  EXPECT_EQ(d.root_cause->summary,
            "no progress: no output for 5 s; no stack dump of ranks 0,1: neither eu-stack nor gdb is installed "
            "(apt-get install elfutils)");
}

TEST(Analyze, LauncherErrorBeforeAnyRankStarted) {
  RunInput in;
  in.launcher_exit_code = 1;
  LauncherLog log;
  PyTraceback tb;
  tb.type = "AttributeError";
  tb.message = "'NoneType' object has no attribute 'get'";
  tb.frames.push_back(PyFrame{"/usr/lib/python3/dist-packages/torch/distributed/elastic/multiprocessing/api.py", 162,
                              "to_map", ""});
  log.wrapper = tb;
  log.launcher_crashed = true;
  in.launcher = log;
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kLauncherError);
  EXPECT_FALSE(d.root_cause->rank);
  EXPECT_EQ(d.root_cause->exception_type, "AttributeError");
  EXPECT_EQ(d.root_cause->location->line, 162);
}

TEST(Analyze, RendezvousFailure) {
  RunInput in;
  in.world_size = 3;
  Evidence store = pyError("RuntimeError", "Socket Timeout", "/app/train.py", 5);
  store.collateral = true;
  store.collateral_reason = "the store/rendezvous timed out";
  addRank(in, 0, 1).errors.push_back(store);
  addRank(in, 1, 1).errors.push_back(store);
  Diagnosis d = analyzeRun(in);  // rank 2 never showed up
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kRendezvousFailure);
  EXPECT_EQ(d.root_cause->rank, 2);
}

TEST(Analyze, LauncherLayerNamesTorchrunsWrongChoice) {
  RunInput in;
  addRank(in, 0, 1).errors.push_back(peerClosed());
  addRank(in, 1, 1).errors.push_back(pyError("NameError", "name 'c' is not defined", "/app/train.py", 42));
  LauncherLog log;
  PyTraceback tb;
  tb.type = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError";
  tb.message = "train.py FAILED";
  log.wrapper = tb;
  log.claimed_root_rank = 0;
  in.launcher = log;
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 1);
  ASSERT_FALSE(d.root_cause->layers.empty());
  EXPECT_EQ(d.root_cause->layers[0].layer, "launcher");
  EXPECT_NE(d.root_cause->layers[0].text.find("named rank 0"), std::string::npos);
  EXPECT_NE(d.root_cause->layers[0].text.find("wrong"), std::string::npos);
}

// Rank 2 got faultline's scripted SIGTERM and exited 0 a second later (a
// preemption handler; Ray's worker); its peers, ended by their launcher
// before that exit, are collateral: the signal is the root cause, at the
// time it came.
TEST(Analyze, ARankThatHandledAScriptedSignalAndExitedZeroIsTheRootCause) {
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000'000'008'900'000);
  addRank(in, 1, 1, std::nullopt, 1'000'000'008'950'000);
  RankInput& r2 = addRank(in, 2, 0, std::nullopt, 1'000'000'009'300'000);
  Event f;
  f.ev = "fault";
  f.kind = "sigterm";
  f.rank = 2;
  f.step = 4;
  f.t = 1'000'000'008'200'000;
  r2.events.events.push_back(f);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 2);
  EXPECT_EQ(d.root_cause->signal, "SIGTERM");
  EXPECT_EQ(d.root_cause->summary,
            "rank 2: got SIGTERM; struck by faultline's scripted fault (sigterm at step 4); it handled the signal and exited with code 0");
  EXPECT_EQ(verdict(d, 0).role, RankRole::kCollateral);
  // One whose handler exited non-zero (Ray's SystemExit(1)): the same.
  r2.exit_code = 1;
  Diagnosis x = analyzeRun(in);
  ASSERT_TRUE(x.root_cause);
  EXPECT_EQ(x.root_cause->rank, 2);
  EXPECT_EQ(x.root_cause->signal, "SIGTERM");
  EXPECT_EQ(x.root_cause->summary,
            "rank 2: got SIGTERM; struck by faultline's scripted fault (sigterm at step 4); it handled the signal and then exited with code 1");
  // One whose training thread then met its peers' end (a collateral Gloo
  // error, Ray's worker lives on after SystemExit): still the root cause.
  r2.errors.push_back(peerClosed());
  Diagnosis c = analyzeRun(in);
  ASSERT_TRUE(c.root_cause);
  EXPECT_EQ(c.root_cause->rank, 2);
  EXPECT_EQ(c.root_cause->signal, "SIGTERM");
  r2.errors.clear();
  // One that kept running until the teardown ended it: the same, said so.
  r2.exit_code.reset();
  r2.signal = "SIGTERM";
  r2.killed_by_teardown = true;
  Diagnosis k = analyzeRun(in);
  ASSERT_TRUE(k.root_cause);
  EXPECT_EQ(k.root_cause->rank, 2);
  EXPECT_EQ(k.root_cause->summary,
            "rank 2: got SIGTERM; struck by faultline's scripted fault (sigterm at step 4); it kept running until the teardown ended it");
}

Event injectedWrite(int rank, int64_t t) {
  Event f;
  f.ev = "fault";
  f.kind = "syscall";
  f.rank = rank;
  f.t = t;
  f.call = "write";
  f.err = "ENOSPC";
  f.rule = "write:ENOSPC:rank=1:after=1";
  f.path = "/run/checkpoints/rank1/step4.pt.tmp";
  return f;
}

// The LD_PRELOAD interposer failed rank 1's checkpoint write; the trainer's
// OSError is the root cause, and the injected call is the innermost layer.
TEST(Analyze, InjectedSyscallIsTheInnermostLayer) {
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000'000'009'000'000).errors.push_back(peerClosed());
  RankInput& r1 = addRank(in, 1, 1, std::nullopt, 1'000'000'005'000'000);
  r1.errors.push_back(pyError("OSError", "[Errno 28] No space left on device", "/app/train.py", 44));
  r1.events.events.push_back(injectedWrite(1, 1'000'000'004'000'000));
  r1.events.events.push_back(injectedWrite(1, 1'000'000'004'100'000));  // the retry at close
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_EQ(d.root_cause->summary, "rank 1: OSError: [Errno 28] No space left on device (train.py:44)");
  ASSERT_FALSE(d.root_cause->layers.empty());
  EXPECT_EQ(d.root_cause->layers.back().layer, "error");
  EXPECT_EQ(d.root_cause->layers.back().text,
            "injected by faultline: write failed with ENOSPC on /run/checkpoints/rank1/step4.pt.tmp "
            "(FAULTLINE_INJECT write:ENOSPC:rank=1:after=1)");
  int marks = 0;
  for (const auto& t : d.timeline) {
    if (t.what.rfind("fault injected: write failed with ENOSPC", 0) == 0) {
      ++marks;
      EXPECT_EQ(t.rank, 1);
    }
    EXPECT_EQ(t.what.find("step -1"), std::string::npos) << t.what;
  }
  EXPECT_EQ(marks, 1);
}

TEST(Analyze, AFaultOnAnotherRankOrAfterTheFailureIsNoLayer) {
  RunInput in;
  RankInput& r0 = addRank(in, 0, 0);
  r0.events.events.push_back(injectedWrite(0, 1'000'000'001'000'000));
  RankInput& r1 = addRank(in, 1, 1, std::nullopt, 1'000'000'005'000'000);
  r1.errors.push_back(pyError("ValueError", "bad shape", "/app/train.py", 10));
  r1.events.events.push_back(injectedWrite(1, 1'000'000'006'000'000));
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  for (const auto& l : d.root_cause->layers) EXPECT_EQ(l.text.find("injected"), std::string::npos) << l.text;
}

}  // namespace
}  // namespace faultline::diagnose

namespace faultline::diagnose {
namespace {

// A rank that exits before any rank has a process group, while its
// instrumented peers wait at the rendezvous (rank 0 began to join:
// pg_init_begin), is the rendezvous's failure.
TEST(Analyze, ExitBeforeAnyProcessGroupIsARendezvousFailure) {
  RunInput in;
  in.world_size = 2;
  RankInput& r0 = in.ranks[0];
  r0.rank = 0;
  r0.started = true;
  r0.killed_by_teardown = true;
  r0.signal = "SIGTERM";
  r0.exit_known = true;
  Event start;
  start.ev = "start";
  start.rank = 0;
  r0.events.events.push_back(start);
  Event joining;
  joining.ev = "pg_init_begin";
  joining.rank = 0;
  r0.events.events.push_back(joining);
  RankInput& r1 = in.ranks[1];
  r1.rank = 1;
  r1.started = true;
  r1.exit_code = 1;
  r1.exit_known = true;
  start.rank = 1;
  r1.events.events.push_back(start);
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kRendezvousFailure);
  EXPECT_EQ(d.root_cause->rank, 1);
  EXPECT_EQ(d.root_cause->exit_code, 1);
}

// Rank 1's collectives were not traced (its all_reduce patch failed): the
// hang analysis must not read its missing collective_begin as "never
// entered", nor call rank 0's collective one that every rank entered.
TEST(Analyze, HangWithUntracedCollectivesSaysSoInsteadOfGuessing) {
  const std::string err = "TypeError: unexpected object 'broken' in __signature__ attribute";
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  in.supervisor = rec;
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGTERM"));
  r0.killed_by_teardown = true;
  r0.events = History(0).instrument("dist.all_reduce", true).collective("allreduce", 0, 4)
                  .collective("allreduce", 1, 4, false).log();
  RankInput& r1 = addRank(in, 1, std::nullopt, std::string("SIGTERM"));
  r1.killed_by_teardown = true;
  r1.events = History(1).instrument("dist.all_reduce", false, err).log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kHungCollective);
  EXPECT_FALSE(d.root_cause->rank);  // nobody can be blamed
  EXPECT_TRUE(d.root_cause->missing_ranks.empty());
  EXPECT_EQ(d.root_cause->summary,
            "hung collective: rank 0 blocked in allreduce #1 that every traced rank entered; collective tracing "
            "unavailable on rank 1 (patch dist.all_reduce failed: " + err + ")");
  EXPECT_EQ(verdict(d, 1).diagnosis,
            "killed by SIGTERM in teardown; collective tracing unavailable (patch dist.all_reduce failed: " + err +
                ")");
}

TEST(Analyze, HangWithNoTracedRankInACollectiveNamesTheUntracedRank) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = "no progress for 5 s: rank 0 not in a collective";
  in.supervisor = rec;
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGTERM"));
  r0.killed_by_teardown = true;
  r0.events = History(0).instrument("dist.all_reduce", true).collective("allreduce", 0, 4).log();
  RankInput& r1 = addRank(in, 1, std::nullopt, std::string("SIGTERM"));
  r1.killed_by_teardown = true;
  // Its entry would have been the open one: without it, it reads as outside.
  r1.events = History(1).instrument("ddp.grad_allreduce", false, "AttributeError: backward").log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kTimeout);
  EXPECT_EQ(d.root_cause->summary,
            "no progress: no progress for 5 s: rank 0 not in a collective; collective tracing unavailable on rank 1 "
            "(patch ddp.grad_allreduce failed: AttributeError: backward)");
}

TEST(Analyze, MismatchIsNotReadFromARankWhoseCollectivesAreNotAllTraced) {
  // Rank 1's broadcasts are not traced, so its allreduce is its seq 0 while
  // rank 0's seq 0 is a broadcast: no mismatch can be claimed from that.
  RunInput in;
  RankInput& r0 = addRank(in, 0, 1);
  r0.errors.push_back(peerClosed());
  r0.events = History(0).collective("broadcast", 0, 4).collective("allreduce", 1, 4).log();
  RankInput& r1 = addRank(in, 1, 1);
  r1.errors.push_back(peerClosed());
  r1.events = History(1).instrument("dist.broadcast", false, "TypeError: x").collective("allreduce", 0, 4).log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_NE(d.root_cause->kind, Kind::kCollectiveMismatch);
}

TEST(Analyze, NoRendezvousFailureInferredWhenInitProcessGroupWasNotWrapped) {
  RunInput in;
  in.world_size = 2;
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGTERM"));
  r0.killed_by_teardown = true;
  r0.events = History(0).ev("start").instrument("dist.init_process_group", false, "TypeError: x").log();
  RankInput& r1 = addRank(in, 1, 1);
  r1.events = History(1).ev("start").log();
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kExitCode);
}

// Both ranks finished step 1, then rank 0 waits in an all-reduce the shim
// could not wrap: that is no shutdown hang, and nobody can say where it is.
TEST(Analyze, NoShutdownHangWhereCollectivesAreNotTraced) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = "no progress for 5 s";
  in.supervisor = rec;
  for (int r : {0, 1}) {
    RankInput& ri = addRank(in, r, std::nullopt, std::string("SIGTERM"));
    ri.killed_by_teardown = true;
    ri.events = History(r).instrument("dist.all_reduce", false, "TypeError: x").step(0).step(1).log();
  }
  Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kTimeout);
  EXPECT_EQ(d.root_cause->summary,
            "no progress: no progress for 5 s; collective tracing unavailable on rank 0 (patch dist.all_reduce "
            "failed: TypeError: x); collective tracing unavailable on rank 1 (patch dist.all_reduce failed: "
            "TypeError: x)");
  // Without the patch failure it reads as a shutdown hang, as before.
  for (int r : {0, 1}) in.ranks[r].events = History(r).step(0).step(1).log();
  d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->kind, Kind::kShutdownHang);
}

}  // namespace
}  // namespace faultline::diagnose
