// Each root-cause rule alone, on hand-written input: what it names when it
// applies, and that it passes when it does not. Then their order, the roles
// and the timeline as their own steps.
#include "harness/diagnose/root_cause_rules.h"

#include <gtest/gtest.h>

#include "harness/diagnose/analyze.h"
#include "harness/diagnose/collateral.h"
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
  EXPECT_EQ(names, (std::vector<std::string>{"launcher_failed_first", "collective_mismatch", "exit_before_rendezvous",
                                             "earliest_primary", "hung_collective", "shutdown_hang",
                                             "store_rendezvous_failure", "no_progress", "only_collateral",
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
