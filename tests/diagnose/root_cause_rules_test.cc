// Each root-cause rule alone, on hand-written input: what it names when it
// applies, and that it passes when it does not. Then their order, the roles
// and the timeline as their own steps.
#include "harness/diagnose/root_cause_rules.h"

#include <gtest/gtest.h>

#include "harness/diagnose/analyze.h"
#include "harness/diagnose/collateral.h"
#include "harness/diagnose/node_rules.h"
#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;
using testing::History;

Evidence pyError(const std::string& type, const std::string& msg) {
  Evidence e;
  e.kind = Kind::kPythonException;
  e.type = type;
  e.message = msg;
  e.location = Location{"/app/train.py", 42};
  e.origin = "stderr";
  return e;
}

Evidence collateralOf(CollateralKind why, const std::string& msg) {
  Evidence e = pyError("RuntimeError", msg);
  e.collateral = true;
  e.collateral_reason = collateralKindName(why);
  return e;
}

RankInput& tornDown(RunInput& in, int r) {
  RankInput& ri = addRank(in, r, std::nullopt, std::string("SIGTERM"));
  ri.killed_by_teardown = true;
  return ri;
}

void hangTrigger(RunInput& in, const std::string& detail = "") {
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = detail;
  in.supervisor = rec;
}

Event startEvent(int rank) {
  Event e;
  e.ev = "start";
  e.rank = rank;
  return e;
}

// The rule by itself, on an Analysis of `in` (which must outlive it).
std::optional<Candidate> runRule(RootCauseRule rule, const RunInput& in) { return rule(analyse(in)); }

TEST(RootCauseRules, InPriorityOrderEachWithAReason) {
  std::vector<std::string> names;
  for (const NamedRule& r : rootCauseRules()) {
    names.emplace_back(r.name);
    EXPECT_FALSE(r.why.empty()) << r.name;
    EXPECT_NE(r.apply, nullptr) << r.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"node_launcher_lost", "launcher_failed_first", "collective_mismatch", "node_lost",
                                             "network_partition", "same_failure_everywhere",
                                             "exit_before_rendezvous",
                                             "earliest_primary", "hung_rendezvous", "store_wait", "hung_collective", "shutdown_hang",
                                             "store_rendezvous_failure", "stack_dump_hang", "no_progress", "only_collateral",
                                             "launcher_failed_alone"}));
}

TEST(RootCauseRules, LauncherFailedFirst) {
  RunInput in;
  in.launcher_exit_code = 2;
  in.launcher = LauncherLog{};
  in.ranks[0].rank = 0;  // known, never started
  in.world_size = 1;
  auto c = runRule(launcherFailedFirst, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kLauncherError);
  EXPECT_EQ(c->cause.summary, "launcher failed before any rank started: exited with code 2");
  EXPECT_FALSE(c->root_rank);
  ASSERT_EQ(c->cause.layers.size(), 2u);
  EXPECT_EQ(c->cause.layers[0].text, "launcher exited with code 2");
  // Without a traceback, the launcher's last line of its own is what it said.
  in.launcher = parseLauncherLog("[default0]:starting\nERROR: the address is already in use\n\n[default1]:bye\n");
  c = runRule(launcherFailedFirst, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.summary,
            "launcher failed before any rank started: exited with code 2; its last line: ERROR: the address is already in use");
  EXPECT_EQ(c->cause.message, "ERROR: the address is already in use");
  // Once a rank ran, and the launcher did not crash, a rank's failure comes first.
  in.ranks[0].started = true;
  EXPECT_FALSE(runRule(launcherFailedFirst, in));
}

TEST(RootCauseRules, CollectiveMismatch) {
  RunInput in;
  addRank(in, 0, 1).events = History(0).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log();
  addRank(in, 1, 1).events = History(1).collective("allreduce", 0, 100).collective("allreduce", 1, 99, false).log();
  addRank(in, 2, 1).events = History(2).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log();
  auto c = runRule(collectiveMismatch, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_EQ(c->cause.summary.rfind("rank 1: collective mismatch: ", 0), 0u) << c->cause.summary;
  ASSERT_TRUE(c->cause.collective);
  EXPECT_EQ(c->cause.collective->seq, 1);
  // The same sizes everywhere: no mismatch.
  in.ranks[1].events = History(1).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log();
  EXPECT_FALSE(runRule(collectiveMismatch, in));
}

TEST(RootCauseRules, ExitBeforeRendezvous) {
  RunInput in;
  tornDown(in, 0).events.events.push_back(startEvent(0));
  addRank(in, 1, 1).events.events.push_back(startEvent(1));
  // A plain program: nothing says it uses a process group, so no rendezvous failed.
  EXPECT_FALSE(runRule(exitBeforeRendezvous, in));
  auto plain = runRule(earliestPrimary, in);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->cause.kind, Kind::kExitCode);
  EXPECT_EQ(plain->root_rank, 1);
  // Rank 0 had begun to join: rank 1's exit left it at the rendezvous.
  Event joining;
  joining.ev = "pg_init_begin";
  in.ranks[0].events.events.push_back(joining);
  auto c = runRule(exitBeforeRendezvous, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kRendezvousFailure);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  EXPECT_EQ(c->cause.summary,
            "rank 1: rendezvous failure: rank 1 exited with code 1 before joining the process group; the other ranks "
            "waited at the rendezvous");
  // With a process group up, the exit is an ordinary failure (earliest_primary's).
  Event pg;
  pg.ev = "pg_init";
  in.ranks[0].events.events.push_back(pg);
  EXPECT_FALSE(runRule(exitBeforeRendezvous, in));
  auto primary = runRule(earliestPrimary, in);
  ASSERT_TRUE(primary);
  EXPECT_EQ(primary->cause.kind, Kind::kExitCode);
}

// Issue 18, class 7: every rank failing the same way has no primary rank.
Evidence cantOpen(const std::string& path) {
  Evidence e;
  e.kind = Kind::kExitCode;
  e.origin = "stderr";
  e.message = "/usr/bin/python3: can't open file '" + path + "': [Errno 2] No such file or directory";
  return e;
}

TEST(RootCauseRules, SameFailureEverywhereHasNoPrimary) {
  RunInput in;
  for (int r = 0; r < 3; ++r) {
    addRank(in, r, 2, std::nullopt, 1'000'000 + r * 3'000'000).errors.push_back(cantOpen("/app/train.py"));
    in.ranks[r].events.events.push_back(startEvent(r));
  }
  auto c = runRule(sameFailureEverywhere, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kExitCode);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_FALSE(c->root_rank);
  EXPECT_EQ(c->cause.blame, Blame::kAllRanks);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c->cause.exit_code, 2);
  EXPECT_EQ(c->cause.summary,
            "all 3 ranks: /usr/bin/python3: can't open file '/app/train.py': [Errno 2] No such file or directory");
  // And the rule order puts it before the rendezvous and earliest-primary guesses.
  Event joining;
  joining.ev = "pg_init_begin";
  in.ranks[1].events.events.push_back(joining);
  auto chosen = chooseRootCause(analyse(in));
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->cause.blame, Blame::kAllRanks);
}

TEST(RootCauseRules, SameFailureEverywhereNeedsTheSameFailure) {
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000).errors.push_back(pyError("ValueError", "bad shard 0"));
  addRank(in, 1, 1, std::nullopt, 2'000).errors.push_back(pyError("KeyError", "'lr'"));
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // The same error with different numbers (a rank, a port) is the same failure.
  in.ranks[1].errors = {pyError("ValueError", "bad shard 1")};
  auto c = runRule(sameFailureEverywhere, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.summary, "all 2 ranks: ValueError: bad shard 0 (train.py:42)");
  // One rank that succeeded: not every rank failed.
  addRank(in, 2, 0, std::nullopt, 3'000);
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // One that failed because of the others: not every rank failed alike.
  addRank(in, 2, 1, std::nullopt, 3'000).errors = {collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer")};
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // Far apart in time: not "within moments".
  RunInput late;
  addRank(late, 0, 1, std::nullopt, 1'000).errors.push_back(pyError("ValueError", "x"));
  addRank(late, 1, 1, std::nullopt, 60'000'000'000).errors.push_back(pyError("ValueError", "x"));
  EXPECT_FALSE(runRule(sameFailureEverywhere, late));
}

// yours-abort on builtin@2.13 (catalog run): the scripted abort struck rank 0
// and rank 1 aborted 38 ms later, when Gloo lost its peer. Rank 0's failure
// has a cause; rank 1's is its consequence, not the same failure everywhere.
TEST(RootCauseRules, AScriptedFaultsRankIsNoPartOfTheSameFailureEverywhere) {
  RunInput in;
  addRank(in, 0, std::nullopt, "SIGABRT", 1'000'000);
  addRank(in, 1, std::nullopt, "SIGABRT", 39'000'000);
  auto both = runRule(sameFailureEverywhere, in);
  ASSERT_TRUE(both);  // without the fault event: alike, within moments
  Event fault;
  fault.ev = "fault";
  fault.kind = "abort";
  fault.step = 4;
  in.ranks[0].events.events.push_back(fault);
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  auto chosen = chooseRootCause(analyse(in));
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->cause.rank, 0);
  // A fault struck in every one of them (rank=all): still their common failure.
  fault.kind = "abort";
  in.ranks[1].events.events.push_back(fault);
  EXPECT_TRUE(runRule(sameFailureEverywhere, in));
}

TEST(RootCauseRules, SameFailureEverywhereCountsRanksStoppedBeforeGettingFurther) {
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000).errors.push_back(pyError("ModuleNotFoundError", "No module named 'x'"));
  addRank(in, 1, 1, std::nullopt, 2'000).errors.push_back(pyError("ModuleNotFoundError", "No module named 'x'"));
  tornDown(in, 2).events.events.push_back(startEvent(2));
  auto c = runRule(sameFailureEverywhere, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.blame, Blame::kAllRanks);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(c->cause.summary,
            "ranks 0, 1 of 3: ModuleNotFoundError: No module named 'x' (train.py:42) (rank 2 stopped by the teardown "
            "before getting further)");
  // A stopped rank that had got further (it was training) may not have met the same end.
  in.ranks[2].events = History(2).step(1).log();
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // Nor one stopped at the point where the others failed mid-training (it was
  // waiting there and had not failed).
  in.ranks[0].events = History(0).step(1).step(2, false).log();
  in.ranks[1].events = History(1).step(1).step(2, false).log();
  in.ranks[2].events = History(2).step(1).step(2, false).log();
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
}

// A launcher that stops the rest within 0.1 s (torchrun 2.x) can leave one
// rank to say that the command line is wrong; the others ran the same one.
TEST(RootCauseRules, SameFailureEverywhereTakesOneRanksCommandLineErrorForAll) {
  using namespace std::string_literals;
  RunInput in;
  SupervisorRecord rec;
  rec.launcher = "external";
  for (int r = 0; r < 3; ++r) {
    ProcessExit pe;
    pe.pid = 100 + r;
    pe.rank = r;
    pe.cmdline = "python3\0train.py\0--local-rank="s + std::to_string(r) + '\0';
    rec.process_exits.push_back(pe);
  }
  in.supervisor = rec;
  Evidence bad = cantOpen("/app/train.py");
  bad.command_line = true;
  addRank(in, 1, 2, std::nullopt, 1'000'000).errors.push_back(bad);
  tornDown(in, 0);
  tornDown(in, 2);
  auto c = runRule(sameFailureEverywhere, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.blame, Blame::kAllRanks);
  EXPECT_FALSE(c->root_rank);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{1}));
  EXPECT_EQ(c->cause.summary,
            "rank 1 of 3: /usr/bin/python3: can't open file '/app/train.py': [Errno 2] No such file or directory "
            "(ranks 0, 2 run the same command line and were stopped by the teardown before getting further)");
  // A rank that ran another command line may not have met the same end.
  in.supervisor->process_exits[2].cmdline = "python3\0eval.py\0"s;
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // Nor a rank whose command line is unknown (it ended before it was read).
  in.supervisor->process_exits[2].cmdline.clear();
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
  // An error of the program's own on one rank says nothing of the others.
  in.supervisor->process_exits[2].cmdline = in.supervisor->process_exits[0].cmdline;
  ASSERT_TRUE(runRule(sameFailureEverywhere, in));
  in.ranks[1].errors = {pyError("ValueError", "bad shard 1")};
  EXPECT_FALSE(runRule(sameFailureEverywhere, in));
}

// Rank r aborted by torch 2.x's abort at exit, after destroy_process_group.
void abortAtExit(RunInput& in, int r) {
  Event destroy;
  destroy.ev = "pg_destroy";
  RankInput& aborted = addRank(in, r, std::nullopt, std::string("SIGABRT"), 5'000 + r);
  aborted.events.events = {startEvent(r), destroy};
  Evidence e;
  e.kind = Kind::kCppException;
  e.type = "std::terminate";
  e.message = "terminate called without an active exception";
  e.origin = "stderr";
  aborted.errors.push_back(e);
}

// torch 2.x's abort at exit (docs/TORCH2.md): the rank's own crash, after its
// work was done, and what makes it.
TEST(RootCauseRules, AnAbortAfterDestroyProcessGroupSaysItWasAtExit) {
  RunInput in;
  Event destroy;
  destroy.ev = "pg_destroy";
  addRank(in, 0, 0).events.events = {startEvent(0), destroy};
  abortAtExit(in, 1);
  auto c = chooseRootCause(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_EQ(c->cause.kind, Kind::kCppException);
  EXPECT_EQ(c->cause.summary,
            "rank 1: std::terminate: terminate called without an active exception at exit, after "
            "destroy_process_group");
  ASSERT_FALSE(c->cause.layers.empty());
  EXPECT_NE(c->cause.layers.back().text.find("outlived destroy_process_group"), std::string::npos);
  // Before destroy_process_group it is the rank's crash, nothing more is known.
  in.ranks[1].events.events = {startEvent(1)};
  c = chooseRootCause(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.summary.find("at exit"), std::string::npos);
}

// The same abort on every rank (CI, diagnosis-local-batchnorm on torchrun@2.13):
// one failure on all ranks, and still at exit.
TEST(RootCauseRules, AnAbortAtExitOnEveryRankSaysItWasAtExit) {
  RunInput in;
  in.world_size = 2;
  for (int r = 0; r < 2; ++r) abortAtExit(in, r);
  auto c = chooseRootCause(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.blame, Blame::kAllRanks);
  EXPECT_EQ(c->cause.summary,
            "all 2 ranks: std::terminate: terminate called without an active exception at exit, after "
            "destroy_process_group");
  ASSERT_FALSE(c->cause.layers.empty());
  EXPECT_NE(c->cause.layers.back().text.find("outlived destroy_process_group"), std::string::npos);
  // One rank that aborted before destroy_process_group: not all at exit.
  in.ranks[0].events.events = {startEvent(0)};
  c = chooseRootCause(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.summary.find("at exit"), std::string::npos);
}

// Issue 18, class 4: two ranks, no majority.
TEST(RootCauseRules, MismatchBlamesTheSideUnderARankCondition) {
  RunInput in;
  hangTrigger(in);
  tornDown(in, 0).events = History(0)
                               .collectiveAt("allreduce", 0, 10, "/app/train.py:32")
                               .collectiveAt("barrier", 1, 0, "/app/ckpt.py:11", "/app/train.py:35: if rank == 0", false)
                               .log();
  tornDown(in, 1).events = History(1)
                               .collectiveAt("allreduce", 0, 10, "/app/train.py:32")
                               .collectiveAt("allreduce", 1, 10, "/app/train.py:32", "", false)
                               .log();
  auto c = runRule(collectiveMismatch, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.rank, 0);
  EXPECT_EQ(c->cause.blame, Blame::kRank);
  ASSERT_EQ(c->cause.sides.size(), 2u);
  EXPECT_EQ(c->cause.sides[0].ranks, (std::vector<int>{0}));
  EXPECT_EQ(c->cause.sides[0].op, "barrier");
  EXPECT_EQ(c->cause.sides[0].rank_condition, "/app/train.py:35: if rank == 0");
  EXPECT_EQ(c->cause.sides[1].site, "/app/train.py:32");
  ASSERT_TRUE(c->cause.location);
  EXPECT_EQ(c->cause.location->file, "/app/ckpt.py");
  EXPECT_EQ(c->cause.location->line, 11);
  EXPECT_EQ(c->cause.summary,
            "rank 0: collective mismatch: rank 0 called barrier of 0 elements (ckpt.py:11, under `if rank == 0`) at "
            "collective #1 while rank 1 called allreduce of 10 elements (train.py:32); rank 0 blamed: its call runs "
            "only on some ranks (train.py:35: if rank == 0)");
}

TEST(RootCauseRules, MismatchWithNoEvidenceIsAmbiguous) {
  RunInput in;
  hangTrigger(in);
  tornDown(in, 0).events = History(0)
                               .collectiveAt("allreduce", 0, 10, "/app/train.py:20")
                               .collectiveAt("broadcast", 1, 2, "/app/train.py:39", "", false)
                               .log();
  tornDown(in, 1).events = History(1)
                               .collectiveAt("allreduce", 0, 10, "/app/train.py:20")
                               .collectiveAt("allreduce", 1, 1, "/app/train.py:36", "", false)
                               .log();
  auto c = runRule(collectiveMismatch, in);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_FALSE(c->root_rank);
  EXPECT_EQ(c->cause.blame, Blame::kAmbiguous);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(c->cause.sides.size(), 2u);
  EXPECT_FALSE(c->cause.location);
  EXPECT_NE(c->cause.summary.find("ambiguous"), std::string::npos) << c->cause.summary;
  // No rank is marked root_cause.
  for (const RankVerdict& v : assignRoles(analyse(in), c)) EXPECT_NE(v.role, RankRole::kRootCause) << v.rank;
}

TEST(RootCauseRules, HangBlamesTheWaiterUnderARankCondition) {
  // Rank 0 alone waits in a barrier under `if rank == 0`; rank 1 finished and left.
  RunInput in;
  addRank(in, 0, 1).events = History(0)
                                 .collectiveAt("allreduce", 0, 8, "/app/train.py:21")
                                 .collectiveAt("barrier", 1, 0, "/app/train.py:24", "/app/train.py:23: if rank == 0",
                                               false)
                                 .log();
  in.ranks[0].errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  addRank(in, 1, 0).events = History(1).collectiveAt("allreduce", 0, 8, "/app/train.py:21").log();
  auto c = runRule(hungCollective, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.rank, 0);
  EXPECT_EQ(c->cause.blame, Blame::kRank);
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  ASSERT_TRUE(c->cause.location);
  EXPECT_EQ(c->cause.location->line, 24);
  ASSERT_EQ(c->cause.sides.size(), 2u);
  EXPECT_EQ(c->cause.sides[0].op, "barrier");
  EXPECT_EQ(c->cause.sides[1].op, "");  // the missing side made no call
}

TEST(RootCauseRules, HangWithoutMajorityNeedsEvidence) {
  // Rank 0 waits in a call no rank made before; rank 1 exited cleanly: either may be wrong.
  RunInput in;
  addRank(in, 0, 1).events = History(0)
                                 .collectiveAt("allreduce", 0, 8, "/app/train.py:21")
                                 .collectiveAt("allgather", 1, 4, "/app/eval.py:9", "", false)
                                 .log();
  in.ranks[0].errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  addRank(in, 1, 0).events = History(1).collectiveAt("allreduce", 0, 8, "/app/train.py:21").log();
  auto c = runRule(hungCollective, in);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_EQ(c->cause.blame, Blame::kAmbiguous);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{0, 1}));
  // The pattern: every rank made the waiters' call before, so the missing one broke it.
  RunInput kept;
  hangTrigger(kept);
  tornDown(kept, 0).events = History(0)
                                 .collectiveAt("allreduce", 0, 8, "/app/train.py:21")
                                 .collectiveAt("allreduce", 1, 8, "/app/train.py:21", "", false)
                                 .log();
  tornDown(kept, 1).events = History(1).collectiveAt("allreduce", 0, 8, "/app/train.py:21").log();
  auto k = runRule(hungCollective, kept);
  ASSERT_TRUE(k);
  EXPECT_EQ(k->cause.rank, 1);
  EXPECT_EQ(k->cause.blame, Blame::kRank);
  // No history, but the missing rank's stack dump shows it busy elsewhere: the laggard.
  RunInput lag;
  hangTrigger(lag);
  tornDown(lag, 0).events = History(0).collectiveAt("allreduce", 0, 8, "/app/train.py:21", "", false).log();
  RankInput& slow = tornDown(lag, 1);
  slow.events = History(1).ev("start").log();
  slow.stacks = {StackThread{"Current thread", true, {PyFrame{"/app/data.py", 77, "decode", ""}}}};
  auto l = runRule(hungCollective, lag);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->cause.rank, 1);
  EXPECT_NE(l->cause.summary.find("elsewhere"), std::string::npos) << l->cause.summary;
  // ... unless it too stands in torch.distributed.
  slow.stacks[0].frames.insert(slow.stacks[0].frames.begin(),
                               PyFrame{"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", 9,
                                       "barrier", ""});
  auto both = runRule(hungCollective, lag);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->cause.blame, Blame::kAmbiguous);
}

TEST(RootCauseRules, EarliestPrimaryByNanosecondsNeverCollateral) {
  RunInput in;
  // Rank 0's peer error is first; rank 2's segfault is the earliest primary.
  addRank(in, 0, 1, std::nullopt, 1'000).errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  addRank(in, 1, 1, std::nullopt, 5'000).errors.push_back(pyError("ValueError", "late"));
  addRank(in, 2, std::nullopt, std::string("SIGSEGV"), 2'000);
  auto c = runRule(earliestPrimary, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kSignal);
  EXPECT_EQ(c->root_rank, 2);
  EXPECT_EQ(c->cause.summary, "rank 2: killed by SIGSEGV");
  // Only collateral: no primary to name.
  RunInput only;
  addRank(only, 0, 1).errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  EXPECT_FALSE(runRule(earliestPrimary, only));
}

// A fatal signal's place is the rank's own frame in the thread that took it
// (the shim's faulthandler dump, crash_stacks.txt), not a library's; where
// that thread ran no Python (faulthandler marks none current), none.
TEST(RootCauseRules, AFatalSignalIsPlacedWhereItsThreadWasInTheRanksCode) {
  const std::string dump =
      "Fatal Python error: Segmentation fault\n\n"
      "Thread 0x00007f54954aa6c0 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 320 in wait\n"
      "  File \"/app/prefetch.py\", line 9 in loop\n\n"
      "Current thread 0x00007f549625d240 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"
      "  File \"/app/train.py\", line 15 in main\n"
      "  File \"/app/train.py\", line 18 in <module>\n";
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 5'000).errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  RankInput& crashed = addRank(in, 1, std::nullopt, std::string("SIGSEGV"), 2'000);
  crashed.crash_stacks = parseStackDump(dump);
  crashed.crash_what = "Segmentation fault";
  auto c = runRule(earliestPrimary, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kSignal);
  ASSERT_TRUE(c->cause.location);
  EXPECT_EQ(c->cause.location->file, "/app/train.py");
  EXPECT_EQ(c->cause.location->line, 15);
  EXPECT_EQ(c->cause.summary, "rank 1: killed by SIGSEGV (train.py:15)");
  // Taken by a native thread: faulthandler names no thread current.
  RunInput native;
  RankInput& in_native = addRank(native, 1, std::nullopt, std::string("SIGSEGV"), 2'000);
  in_native.crash_stacks =
      parseStackDump("Fatal Python error: Segmentation fault\n\nThread 0x00007f549625d240 (most recent call first):\n"
                     "  File \"/app/train.py\", line 15 in main\n");
  in_native.crash_what = "Segmentation fault";
  auto n = runRule(earliestPrimary, native);
  ASSERT_TRUE(n);
  EXPECT_FALSE(n->cause.location);
  EXPECT_EQ(n->cause.summary, "rank 1: killed by SIGSEGV");
  // A dump of another signal (a restarted rank's earlier crash) is not this death's.
  RunInput other;
  RankInput& aborted = addRank(other, 1, std::nullopt, std::string("SIGKILL"), 2'000);
  aborted.crash_stacks = parseStackDump(dump);
  aborted.crash_what = "Segmentation fault";
  auto o = runRule(earliestPrimary, other);
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->cause.location);
}

// Multi-node (docs/MULTINODE.md): ranks 0-1 on n1, 2-3 on n2; times in ns since 0.
RunInput twoNodes() {
  RunInput in;
  SupervisorRecord rec;
  rec.start_ns = 1;
  in.supervisor = rec;
  for (int r = 0; r < 4; ++r) {
    RankInput& ri = in.ranks[r];
    ri.rank = r;
    ri.started = true;
    ri.node = r < 2 ? "n1" : "n2";
    ri.host = r < 2 ? "h1" : "h2";
  }
  in.world_size = 4;
  for (const char* n : {"n1", "n2"}) {
    NodeInput& node = in.nodes[n];
    node.name = n;
    AgentRecord a;
    a.pid = n[1] == '1' ? 100 : 200;
    a.exit_code = 1;
    node.agents.push_back(a);
  }
  return in;
}

void peerErrors(RunInput& in, int64_t t) {
  for (int r : {0, 1}) {
    RankInput& ri = in.ranks[r];
    ri.exit_known = true;
    ri.exit_code = 1;
    ri.exit_ns = t + r;
    ri.errors.push_back(collateralOf(CollateralKind::kPeerClosed, "[gloo/transport/tcp/pair.cc:598] Connection closed by peer"));
  }
}

TEST(RootCauseRules, NodeLostWhenEveryProcessOfANodeIsKilledAtOnce) {
  RunInput in = twoNodes();
  for (int r : {2, 3}) {
    in.ranks[r].exit_known = true;
    in.ranks[r].signal = "SIGKILL";
    in.ranks[r].exit_ns = 4'200'000'001 + r * 1'000'000;
  }
  peerErrors(in, 4'300'000'000);
  auto c = runRule(nodeLost, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kNodeLost);
  EXPECT_EQ(c->cause.node, "n2");
  EXPECT_EQ(c->cause.blame, Blame::kNode);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_EQ(c->lost_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(c->cause.summary, "node n2 lost at t=4.2 s (every process of it killed at once): its ranks 2-3 lost");
  // The roles: n2's ranks lost, the others collateral with their evidence.
  const Analysis a = analyse(in);
  const auto roles = assignRoles(a, c);
  EXPECT_EQ(roles[0].role, RankRole::kCollateral);
  EXPECT_NE(roles[0].diagnosis.find("Connection closed by peer"), std::string::npos);
  EXPECT_EQ(roles[2].role, RankRole::kLost);
  EXPECT_EQ(roles[3].role, RankRole::kLost);
  EXPECT_NE(roles[2].diagnosis.find("lost with node n2"), std::string::npos);
  // The chosen rule, too (before earliest_primary's "possible OOM kill").
  auto chosen = chooseRootCause(a);
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->cause.kind, Kind::kNodeLost);
}

TEST(RootCauseRules, NodeLostPassesWhenOneRankOfANodeDiesOrEveryNodeDoes) {
  // One rank of n2 SIGKILLed, its sibling failing after it: a rank's fault.
  RunInput one = twoNodes();
  one.ranks[2].exit_known = true;
  one.ranks[2].signal = "SIGKILL";
  one.ranks[2].exit_ns = 1'000;
  one.ranks[3].exit_known = true;
  one.ranks[3].exit_code = 1;
  one.ranks[3].exit_ns = 2'000;
  one.ranks[3].errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection reset by peer"));
  EXPECT_FALSE(runRule(nodeLost, one));
  // Every process of every node killed at once: the whole job's end, no node to name.
  RunInput all = twoNodes();
  for (int r = 0; r < 4; ++r) {
    all.ranks[r].exit_known = true;
    all.ranks[r].signal = "SIGKILL";
    all.ranks[r].exit_ns = 1'000 + r;
  }
  EXPECT_FALSE(runRule(nodeLost, all));
  // A single-node run never has a lost node.
  RunInput single;
  addRank(single, 0, std::nullopt, std::string("SIGKILL"), 1'000);
  addRank(single, 1, std::nullopt, std::string("SIGKILL"), 1'001);
  EXPECT_FALSE(runRule(nodeLost, single));
  // A primary failure on n1 before n2 went: that one started it.
  RunInput first = twoNodes();
  first.ranks[0].exit_known = true;
  first.ranks[0].exit_code = 1;
  first.ranks[0].exit_ns = 500;
  first.ranks[0].errors.push_back(pyError("ValueError", "bad batch"));
  for (int r : {2, 3}) {
    first.ranks[r].exit_known = true;
    first.ranks[r].signal = "SIGKILL";
    first.ranks[r].exit_ns = 1'000 + r;
  }
  EXPECT_FALSE(runRule(nodeLost, first));
}

TEST(RootCauseRules, NodeLostFromTheSupervisorsFaultOrAVanishedAgent) {
  RunInput in = twoNodes();
  NodeEvent f;
  f.event = "fault";
  f.kind = "node_loss";
  f.t_ns = 3'000'000'001;
  in.nodes["n2"].faults.push_back(f);
  for (int r : {2, 3}) {
    in.ranks[r].exit_known = true;
    in.ranks[r].signal = "SIGKILL";
    in.ranks[r].exit_ns = 3'100'000'000 + r * 600'000'000;  // reaped over more than a second
  }
  peerErrors(in, 3'500'000'000);
  auto c = runRule(nodeLost, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.node, "n2");
  EXPECT_EQ(c->node_t_ns, 3'000'000'001);
  EXPECT_NE(c->cause.summary.find("node n2 lost at t=3.0 s (the supervisor's node_loss fault"), std::string::npos);
  // No fault, no exit known: n2's agent never wrote agent_exit while n1's did.
  RunInput gone = twoNodes();
  gone.nodes["n2"].agents[0].exit_code.reset();
  gone.nodes["n2"].agents[0].last_ns = 2'000'000'001;
  peerErrors(gone, 2'500'000'000);
  auto g = runRule(nodeLost, gone);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->cause.summary, "node n2 lost at t=2.0 s (its agent and every process of it vanished; its last sign of life): its ranks 2-3 lost");
  // The agent gone but a rank of it failed by its own error: not lost whole.
  RunInput own = gone;
  own.ranks[2].exit_known = true;
  own.ranks[2].exit_code = 1;
  own.ranks[2].errors.push_back(pyError("ValueError", "bad batch"));
  EXPECT_FALSE(runRule(nodeLost, own));
  // No agent_exit, but the agent wrote lines long after its ranks ended (it
  // saw them go; the teardown signalled it later): it outlived them, the node
  // did not vanish (torch 1.13's agent, its one rank killed by a scripted
  // SIGKILL, waits until the teardown).
  RunInput outlived = gone;
  for (int r : {2, 3}) {  // not at once: that alone would say the node went
    outlived.ranks[r].exit_known = true;
    outlived.ranks[r].signal = "SIGKILL";
    outlived.ranks[r].exit_ns = r == 2 ? 1'900'000'000 : 400'000'000;
  }
  NodeEvent late;
  late.event = "signal";
  late.t_ns = 9'000'000'000;
  outlived.nodes["n2"].agents[0].events.push_back(late);
  outlived.nodes["n2"].agents[0].last_ns = late.t_ns;
  EXPECT_FALSE(runRule(nodeLost, outlived));
  // ... and within a second of them it is still the node going whole.
  outlived.nodes["n2"].agents[0].last_ns = 2'500'000'000;
  EXPECT_TRUE(runRule(nodeLost, outlived));
}

// Two nodes whose launchers never started a rank (torchrun's static
// rendezvous waits for every node first).
RunInput twoNodesBeforeRendezvous() {
  RunInput in;
  SupervisorRecord rec;
  rec.start_ns = 1;
  in.supervisor = rec;
  in.world_size = 4;
  in.launcher_exit_code = 1;
  in.launcher = LauncherLog{};
  PyTraceback w;
  w.type = "torch.distributed.DistStoreError";
  w.message = "Timed out after 16 seconds waiting for clients. 1/2 clients joined.";
  in.launcher->wrapper = w;
  for (const char* n : {"n1", "n2"}) {
    NodeInput& node = in.nodes[n];
    node.name = n;
    AgentRecord a;
    a.pid = n[1] == '1' ? 100 : 200;
    node.agents.push_back(a);
  }
  return in;
}

TEST(RootCauseRules, NodeLauncherLostBeforeItsRanksStartedIsBlamedOnItsNode) {
  RunInput in = twoNodesBeforeRendezvous();
  in.nodes["n2"].child_signal = "SIGKILL";
  in.nodes["n2"].child_exit_ns = 50'000'001;
  NodeEvent f;
  f.event = "fault";
  f.kind = "agent_kill";
  f.t_ns = 49'000'001;
  in.nodes["n2"].faults.push_back(f);
  in.nodes["n1"].child_exit_code = 1;
  in.nodes["n1"].child_exit_ns = 16'050'000'001;
  auto c = runRule(nodeLauncherLost, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kLauncherError);
  EXPECT_EQ(c->cause.node, "n2");
  EXPECT_EQ(c->cause.blame, Blame::kNode);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_EQ(c->cause.exception_type, "torch.distributed.DistStoreError");
  EXPECT_EQ(c->cause.summary,
            "node n2's launcher killed by SIGKILL at t=0.1 s (the supervisor's agent_kill fault), before any rank of "
            "it started; the others' launcher then failed: torch.distributed.DistStoreError: Timed out after 16 "
            "seconds waiting for clients. 1/2 clients joined.");
  // Chosen before launcher_failed_first, which would name no node.
  auto chosen = chooseRootCause(analyse(in));
  ASSERT_TRUE(chosen);
  EXPECT_EQ(chosen->cause.node, "n2");
  // The other node's launcher never gave up: faultline's teardown at the deadline ended it.
  RunInput waited = in;
  waited.launcher->wrapper.reset();
  waited.launcher_exit_code.reset();
  waited.launcher_signal = "SIGTERM";
  waited.supervisor->teardown.started_ns = 60'000'000'001;
  waited.supervisor->trigger.detail = "deadline of 60 s reached";
  auto w = runRule(nodeLauncherLost, waited);
  ASSERT_TRUE(w);
  EXPECT_NE(w->cause.summary.find("before any rank of it started; the other nodes' launcher waited for it until "
                                  "faultline's teardown (deadline of 60 s reached)"),
            std::string::npos)
      << w->cause.summary;
  // A launcher that catches the teardown's SIGTERM and exits 143 (accelerate's
  // agent, stopped first through the node driver) waited the same way; one
  // that exited 143 before the teardown began gave up on its own.
  RunInput caught = waited;
  caught.launcher_signal.reset();
  caught.launcher_exit_code = 143;
  caught.supervisor->launcher_process = LauncherProcess{1, 143, std::nullopt, 60'500'000'001};
  auto k = runRule(nodeLauncherLost, caught);
  ASSERT_TRUE(k);
  EXPECT_NE(k->cause.summary.find("the other nodes' launcher waited for it until faultline's teardown"), std::string::npos)
      << k->cause.summary;
  caught.supervisor->launcher_process->exit_ns = 59'000'000'001;
  auto early = runRule(nodeLauncherLost, caught);
  ASSERT_TRUE(early);
  EXPECT_NE(early->cause.summary.find("the others' launcher then failed: exited with code 143"), std::string::npos)
      << early->cause.summary;
  // Without the fault the agent's own record of its child's signal says it.
  RunInput bare = twoNodesBeforeRendezvous();
  bare.nodes["n2"].child_signal = "SIGKILL";
  bare.nodes["n2"].child_exit_ns = 50'000'001;
  auto b = runRule(nodeLauncherLost, bare);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->cause.summary.find("node n2's launcher killed by SIGKILL at t=0.1 s, before any rank"), 0u)
      << b->cause.summary;
}

TEST(RootCauseRules, NodeLauncherLostPassesWhenAnotherLauncherEndedFirstOrRanksRan) {
  // n1's launcher failed first; n2's was killed after it (the teardown): n1 started it.
  RunInput later = twoNodesBeforeRendezvous();
  later.nodes["n1"].child_exit_code = 1;
  later.nodes["n1"].child_exit_ns = 1'000'000'001;
  later.nodes["n2"].child_signal = "SIGTERM";
  later.nodes["n2"].child_exit_ns = 1'200'000'001;
  EXPECT_FALSE(runRule(nodeLauncherLost, later));
  // Ranks of n2 had started: not a launcher lost before its ranks.
  RunInput ran = twoNodes();
  ran.nodes["n2"].child_signal = "SIGKILL";
  ran.nodes["n2"].child_exit_ns = 50'000'001;
  EXPECT_FALSE(runRule(nodeLauncherLost, ran));
  // Both launchers stopped by the teardown (a run that hung in rendezvous): no node lost.
  RunInput stopped = twoNodesBeforeRendezvous();
  stopped.supervisor->teardown.started_ns = 20'000'000'001;
  for (const char* n : {"n1", "n2"}) {
    stopped.nodes[n].child_signal = "SIGTERM";
    stopped.nodes[n].child_exit_ns = 20'100'000'001;
  }
  EXPECT_FALSE(runRule(nodeLauncherLost, stopped));
  // One node: no node to blame.
  RunInput one = twoNodesBeforeRendezvous();
  one.nodes.erase("n1");
  one.nodes["n2"].child_signal = "SIGKILL";
  EXPECT_FALSE(runRule(nodeLauncherLost, one));
}

TEST(RootCauseRules, NetworkPartitionWhenANodesLinkWentDown) {
  RunInput in = twoNodes();
  in.nodes["n2"].link_down_ns = 3'100'000'001;
  in.nodes["n2"].link_down_ifname = "fl-n2";
  peerErrors(in, 13'100'000'000);
  for (int r : {2, 3}) {
    in.ranks[r].exit_known = true;
    in.ranks[r].exit_code = 1;
    in.ranks[r].exit_ns = 13'100'000'000;
    in.ranks[r].errors.push_back(collateralOf(CollateralKind::kCollectiveTimeout, "Timed out waiting 10000ms for recv"));
  }
  auto c = runRule(networkPartition, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kNetworkPartition);
  EXPECT_EQ(c->cause.node, "n2");
  EXPECT_EQ(c->cause.summary, "node n2 unreachable from t=3.1 s (link fl-n2 down): its ranks 2-3 lost");
  const auto roles = assignRoles(analyse(in), c);
  EXPECT_EQ(roles[2].role, RankRole::kLost);
  EXPECT_EQ(roles[1].role, RankRole::kCollateral);
  // The supervisor's partition fault alone says it too.
  RunInput fault = twoNodes();
  NodeEvent f;
  f.event = "fault";
  f.kind = "partition";
  f.t_ns = 2'000'000'001;
  fault.nodes["n2"].faults.push_back(f);
  peerErrors(fault, 12'000'000'000);
  auto p = runRule(networkPartition, fault);
  ASSERT_TRUE(p);
  EXPECT_NE(p->cause.summary.find("from t=2.0 s (the supervisor's partition fault cut its link)"), std::string::npos);
  // No link down: nothing to say; a clean run with a flap: nothing failed.
  RunInput none = twoNodes();
  peerErrors(none, 1'000);
  EXPECT_FALSE(runRule(networkPartition, none));
  RunInput flap = twoNodes();
  flap.nodes["n2"].link_down_ns = 1'000;
  EXPECT_FALSE(runRule(networkPartition, flap));
}

TEST(RootCauseRules, ARanksFaultOnANodeNamesTheNode) {
  RunInput in = twoNodes();
  in.ranks[3].exit_known = true;
  in.ranks[3].signal = "SIGSEGV";
  in.ranks[3].exit_ns = 1'000;
  peerErrors(in, 2'000);
  auto c = chooseRootCause(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kSignal);
  EXPECT_EQ(c->cause.rank, 3);
  EXPECT_EQ(c->cause.node, "n2");
  EXPECT_EQ(c->cause.summary, "rank 3 on n2: killed by SIGSEGV");
  // nodes[]: both nodes, none lost.
  const auto nodes = nodeReports(in, c);
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[1].name, "n2");
  EXPECT_EQ(nodes[1].ranks, (std::vector<int>{2, 3}));
  EXPECT_FALSE(nodes[1].lost);
  EXPECT_EQ(nodes[1].agent_exit_code, 1);
  EXPECT_EQ(rankRangeText({0, 1, 2, 5, 7, 8}), "ranks 0-2, 5, 7-8");
  EXPECT_EQ(rankRangeText({3}), "rank 3");
}

// Ranks 0 and 2 inside init_process_group, rank 1 (instrumented) never
// began it, the supervisor called a hang: the group never formed because
// rank 1 never came; not a collective (there is none yet).
TEST(RootCauseRules, HungRendezvous) {
  RunInput in;
  hangTrigger(in);
  in.world_size = 3;
  Event joining;
  joining.ev = "pg_init_begin";
  for (int r : {0, 2}) {
    tornDown(in, r).events.events.push_back(startEvent(r));
    in.ranks[r].events.events.push_back(joining);
  }
  tornDown(in, 1).events.events.push_back(startEvent(1));
  auto c = runRule(hungRendezvous, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kRendezvousFailure);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->waiting_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  EXPECT_EQ(c->cause.summary,
            "rank 1: rendezvous failure: rank 1 never began init_process_group while ranks 0, 2 waited for it at the "
            "rendezvous (in the store, no collective yet)");
  // Not a hang (a failure ended the run): earliest_primary's, not this rule's.
  RunInput failed = in;
  failed.supervisor->trigger.kind = TriggerKind::kRankFailure;
  EXPECT_FALSE(runRule(hungRendezvous, failed));
  // Once a group formed, a hang is a collective's.
  Event pg;
  pg.ev = "pg_init";
  in.ranks[0].events.events.push_back(pg);
  EXPECT_FALSE(runRule(hungRendezvous, in));
}

// Ranks 1 and 2 blocked in store.get('weights_ready'), which rank 0 was to
// set; rank 0 went on to the barrier. Not "ranks 1, 2 never entered barrier":
// a store wait, the key named, rank 0 the one that never set it.
TEST(RootCauseRules, StoreWait) {
  RunInput in;
  hangTrigger(in);
  in.world_size = 3;
  Event get;
  get.ev = "store_begin";
  get.op = "get";
  get.key = "weights_ready";
  get.site = "/app/train.py:30";
  for (int r : {1, 2}) {
    tornDown(in, r).events = History(r).collectiveAt("allreduce", 0, 4, "/app/train.py:20").log();
    in.ranks[r].events.events.push_back(get);
  }
  tornDown(in, 0).events =
      History(0).collectiveAt("allreduce", 0, 4, "/app/train.py:20").collectiveAt("barrier", 1, 0, "/app/train.py:35", "", false).log();
  auto c = runRule(storeWait, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kStoreWait);
  EXPECT_EQ(c->root_rank, 0);
  EXPECT_EQ(c->waiting_ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{0}));
  ASSERT_TRUE(c->cause.location);
  EXPECT_EQ(c->cause.location->line, 30);
  EXPECT_EQ(c->cause.summary,
            "rank 0: store wait: ranks 1, 2 wait in the c10d store, in no collective (ranks 1, 2: get 'weights_ready' at "
            "train.py:30); the key was never set: rank 0 waits in barrier #1 (train.py:35)");
  // The get returned: no store wait (the collective rule's case).
  Event end;
  end.ev = "store_end";
  for (int r : {1, 2}) in.ranks[r].events.events.push_back(end);
  EXPECT_FALSE(runRule(storeWait, in));
}

TEST(RootCauseRules, HungCollective) {
  RunInput in;
  hangTrigger(in);
  tornDown(in, 0).events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  tornDown(in, 1).events = History(1).collective("allreduce", 0, 4).log();
  tornDown(in, 2).events = History(2).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  auto c = runRule(hungCollective, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kHungCollective);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->waiting_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  EXPECT_EQ(c->cause.summary.rfind("rank 1: hung collective: rank 1 never entered allreduce #1", 0), 0u)
      << c->cause.summary;
  // Every collective ended: nothing hangs.
  in.ranks[0].events = History(0).collective("allreduce", 0, 4).log();
  in.ranks[2].events = History(2).collective("allreduce", 0, 4).log();
  EXPECT_FALSE(runRule(hungCollective, in));
}

// Every rank entered the collective, but the supervisor found rank 1 stopped
// (SIGSTOP, a freeze): that rank cannot finish its part.
TEST(RootCauseRules, HungCollectiveEveryRankEnteredNamesTheStoppedRank) {
  RunInput in;
  hangTrigger(in, "rank(s) 1 stopped (process state T: SIGSTOP, a freeze or a debugger) and no progress for 8000 ms");
  in.supervisor->trigger.rank = 1;
  for (int r = 0; r < 2; ++r) {
    tornDown(in, r).events = History(r).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  }
  auto c = runRule(hungCollective, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_NE(c->cause.summary.find("rank 1 is stopped"), std::string::npos) << c->cause.summary;
  // Without the supervisor naming a stopped rank, no rank is guessed.
  in.supervisor->trigger.rank.reset();
  in.supervisor->trigger.detail = "no progress event for 8000 ms";
  auto d = runRule(hungCollective, in);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->root_rank);
}

// Rank 1 of 2 stopped before it entered the collective rank 0 waits in: one
// side against the other, no majority, but the stopped rank is the evidence
// (yours-freeze on the Lightning and DeepSpeed stacks was "ambiguous").
TEST(RootCauseRules, HungCollectiveWithoutMajorityNamesTheStoppedRank) {
  RunInput in;
  hangTrigger(in, "rank(s) 1 stopped (process state T: SIGSTOP, a freeze or a debugger) and no progress for 8000 ms");
  in.supervisor->trigger.rank = 1;
  // Rank 0 waits in a call of a size no rank made before: no pattern says
  // which side is wrong.
  tornDown(in, 0).events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 1, false).log();
  tornDown(in, 1).events = History(1).collective("allreduce", 0, 4).log();
  auto c = runRule(hungCollective, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_EQ(c->cause.blame, Blame::kRank);
  EXPECT_EQ(c->cause.ranks, (std::vector<int>{1}));
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  ASSERT_FALSE(c->cause.sides.empty());
  EXPECT_EQ(c->cause.sides[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(c->cause.summary.find("rank 1 is stopped"), std::string::npos) << c->cause.summary;
  EXPECT_EQ(c->cause.summary.find("ambiguous"), std::string::npos) << c->cause.summary;
  // Without the supervisor naming a stopped rank it stays ambiguous.
  in.supervisor->trigger.rank.reset();
  in.supervisor->trigger.detail = "no progress event for 8000 ms";
  auto d = runRule(hungCollective, in);
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->root_rank);
}

TEST(RootCauseRules, ShutdownHang) {
  RunInput in;
  hangTrigger(in);
  addRank(in, 0, 0).events = History(0).step(1).step(2).ev("pg_destroy").exit(0).log();
  tornDown(in, 1).events = History(1).step(1).step(2).log();
  auto c = runRule(shutdownHang, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kShutdownHang);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.summary, "rank 1: shutdown hang: rank 1 finished step 2 but never exited");
  // Rank 1 stopped a step short: not a shutdown hang.
  in.ranks[1].events = History(1).step(1).log();
  EXPECT_FALSE(runRule(shutdownHang, in));
}

// mp.spawn's children get SIGINT when their parent dies (PR_SET_PDEATHSIG):
// where the teardown's SIGTERM reached the launcher before the stuck rank,
// the rank printed a KeyboardInterrupt and exited 1 on its own. That exit,
// after the teardown began, is still the teardown's.
TEST(RootCauseRules, ShutdownHangInterruptedThroughItsLauncher) {
  RunInput in;
  hangTrigger(in);
  in.supervisor->teardown.started_ns = 5'000;
  addRank(in, 0, 0, std::nullopt, 1'000).events = History(0).step(1).step(2).ev("pg_destroy").exit(0).log();
  RankInput& r1 = addRank(in, 1, 1, std::nullopt, 5'100);
  r1.events = History(1).step(1).step(2).log();
  Evidence ki = pyError("KeyboardInterrupt", "");
  ki.collateral = true;
  ki.collateral_reason = collateralKindName(CollateralKind::kTeardownSignal);
  r1.errors.push_back(ki);
  auto c = runRule(shutdownHang, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kShutdownHang);
  EXPECT_EQ(c->root_rank, 1);
  // The same exit before any teardown began was the rank's own interrupt.
  in.ranks[1].exit_ns = 4'900;
  EXPECT_FALSE(runRule(shutdownHang, in));
}

TEST(RootCauseRules, StoreRendezvousFailure) {
  RunInput in;
  in.world_size = 3;
  const Evidence store = collateralOf(CollateralKind::kStoreTimeout, "Socket Timeout");
  addRank(in, 0, 1).errors.push_back(store);
  addRank(in, 1, 1).errors.push_back(store);
  in.world_size = 3;  // rank 2 never showed up
  auto c = runRule(storeRendezvousFailure, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kRendezvousFailure);
  EXPECT_EQ(c->root_rank, 2);
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{2}));
  EXPECT_EQ(c->cause.summary, "rendezvous failure: rank 2 never joined");
  // A process group was up: the store was not the problem.
  Event pg;
  pg.ev = "pg_init";
  in.ranks[0].events.events.push_back(pg);
  EXPECT_FALSE(runRule(storeRendezvousFailure, in));
}

TEST(RootCauseRules, NoProgress) {
  RunInput in;
  hangTrigger(in, "no output for 5 s");
  tornDown(in, 0);
  auto c = runRule(noProgress, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kTimeout);
  EXPECT_EQ(c->cause.summary, "no progress: no output for 5 s");
  EXPECT_FALSE(c->root_rank);
  // No hang trigger: nothing for this rule.
  in.supervisor->trigger.kind = TriggerKind::kRankFailure;
  EXPECT_FALSE(runRule(noProgress, in));
}

TEST(RootCauseRules, OnlyCollateralIsUnknown) {
  RunInput in;
  addRank(in, 0, 1).errors.push_back(collateralOf(CollateralKind::kPeerClosed, "Connection closed by peer"));
  addRank(in, 1, 0);
  auto c = runRule(onlyCollateral, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kUnknown);
  EXPECT_FALSE(c->root_rank);
  EXPECT_EQ(c->cause.summary.rfind("no primary failure found; only collateral: rank 0 exited with code 1", 0), 0u)
      << c->cause.summary;
  // Every rank clean: nothing to explain.
  in.ranks[0] = RankInput{};
  addRank(in, 0, 0);
  EXPECT_FALSE(runRule(onlyCollateral, in));
}

TEST(RootCauseRules, LauncherFailedAlone) {
  RunInput in;
  addRank(in, 0, 0);
  addRank(in, 1, 0);
  in.launcher = LauncherLog{};
  in.launcher_exit_code = 1;
  auto c = runRule(launcherFailedAlone, in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kLauncherError);
  EXPECT_EQ(c->cause.summary, "launcher exited with code 1 while every rank exited cleanly");
  in.launcher_exit_code = 0;
  EXPECT_FALSE(runRule(launcherFailedAlone, in));
}

// Order matters: a mismatch explains the primary errors it causes, so it
// comes before earliest_primary, which would name the first rank to die.
TEST(RootCauseRules, TheFirstRuleThatNamesACauseWins) {
  RunInput in;
  addRank(in, 0, 1, std::nullopt, 1'000).errors.push_back(pyError("RuntimeError", "Gloo size mismatch"));
  in.ranks[0].events = History(0).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log();
  addRank(in, 1, 1, std::nullopt, 9'000).events =
      History(1).collective("allreduce", 0, 100).collective("allreduce", 1, 99, false).log();
  addRank(in, 2, 1, std::nullopt, 9'000).events =
      History(2).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log();
  const Analysis a = analyse(in);
  ASSERT_TRUE(earliestPrimary(a));
  EXPECT_EQ(earliestPrimary(a)->root_rank, 0);
  auto c = chooseRootCause(a);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(c->root_rank, 1);
  // A clean run: no rule names anything.
  RunInput clean;
  addRank(clean, 0, 0);
  EXPECT_FALSE(chooseRootCause(analyse(clean)));
}

TEST(Roles, FromTheCandidateAndEachRanksClass) {
  RunInput in;
  hangTrigger(in);
  tornDown(in, 0).events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 4, false).log();
  tornDown(in, 1).events = History(1).collective("allreduce", 0, 4).log();
  addRank(in, 2, 0);
  const Analysis a = analyse(in);
  auto roles = assignRoles(a, hungCollective(a));
  ASSERT_EQ(roles.size(), 3u);
  EXPECT_EQ(roles[0].role, RankRole::kKilledByTeardown);
  EXPECT_EQ(roles[0].diagnosis, "killed by SIGTERM in teardown; was waiting in allreduce #1");
  EXPECT_EQ(roles[1].role, RankRole::kRootCause);
  EXPECT_EQ(roles[2].role, RankRole::kClean);
  // Without a root cause nobody is one.
  for (const auto& v : assignRoles(a, std::nullopt)) EXPECT_NE(v.role, RankRole::kRootCause);
}

TEST(Timeline, SortedWithFailuresEventsAndTheRootCause) {
  RunInput in;
  SupervisorRecord rec;
  rec.start_ns = 1'000'000'000;
  in.supervisor = rec;
  RankInput& r0 = addRank(in, 0, std::nullopt, std::string("SIGSEGV"), 1'000'000'000 + 50'000'000);
  r0.events = History(0).at(0).ev("pg_init").at(10).step(1).log();
  addRank(in, 1, 0);
  const Analysis a = analyse(in);
  const auto root = chooseRootCause(a);
  ASSERT_TRUE(root);
  const auto t = buildTimeline(a, root);
  ASSERT_GE(t.size(), 4u);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_LE(t[i - 1].t_ms, t[i].t_ms);
  EXPECT_EQ(t.front().what, "process group up ()");
  EXPECT_EQ(t.back().what, "root cause: rank 0: killed by SIGSEGV");
  EXPECT_DOUBLE_EQ(t.back().t_ms, 50.0);
}

}  // namespace
}  // namespace faultline::diagnose
