// A fault asked for and not struck is never silent: faultOutcomes against
// hand-built runs, one per way a fault can go missing.
#include "harness/diagnose/fault_outcomes.h"

#include <gtest/gtest.h>

#include "harness/diagnose/rank_log.h"
#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;
using testing::History;

RequestedFault asked(const std::string& rule, const std::string& kind, const std::string& point,
                     std::vector<int> ranks, const std::string& by = "shim") {
  RequestedFault f;
  f.rule = rule;
  f.kind = kind;
  f.point = point;
  f.ranks = std::move(ranks);
  f.by = by;
  return f;
}

Event faultEvent(const std::string& kind, const std::string& rule = "") {
  Event e;
  e.ev = "fault";
  e.kind = kind;
  e.rule = rule;
  return e;
}

RunInput twoRanks(int64_t steps) {
  RunInput in;
  in.supervisor = SupervisorRecord{};
  for (int r = 0; r < 2; ++r) {
    History h(r);
    for (int64_t s = 1; s <= steps; ++s) h.step(s);
    addRank(in, r, 0).events = h.log();
  }
  return in;
}

TEST(FaultOutcomes, AStruckFaultNamesTheRanksItStruck) {
  RunInput in = twoRanks(3);
  in.supervisor->faults = {asked("sigkill:rank=1:step=2", "sigkill", "step 2", {1})};
  in.ranks[1].events.events.push_back(faultEvent("sigkill", "sigkill:rank=1:step=2"));
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].struck);
  EXPECT_EQ(out[0].struck_ranks, std::vector<int>{1});
  EXPECT_EQ(faultsNotStruck(out), "");
}

TEST(FaultOutcomes, AStepNoRankReachedSaysHowFarTheyGot) {
  RunInput in = twoRanks(4);
  in.supervisor->faults = {asked("sigkill:rank=1:step=9", "sigkill", "step 9", {1})};
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].struck);
  EXPECT_EQ(out[0].reason, "no aimed rank reached step 9 (rank 1 last reached step 4)");
  EXPECT_EQ(faultsNotStruck(out),
            "sigkill:rank=1:step=9 (step 9) was not struck: no aimed rank reached step 9 (rank 1 last reached step 4)");
}

TEST(FaultOutcomes, ARankNeverFoundIsSaid) {
  RunInput in = twoRanks(4);
  in.supervisor->faults = {asked("exception:rank=2:step=2", "exception", "step 2", {2})};
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].struck);
  EXPECT_EQ(out[0].reason, "rank 2 was never found (the run found 2 rank(s))");
}

TEST(FaultOutcomes, APointPassedWithoutAStrikeBlamesTheLayer) {
  RunInput in = twoRanks(4);
  in.supervisor->faults = {asked("hung_collective:rank=0:step=2", "hung_collective", "step 2", {0})};
  // Another fault's event is not this one's.
  in.ranks[0].events.events.push_back(faultEvent("sigkill", "sigkill:rank=0:step=3"));
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].struck);
  EXPECT_NE(out[0].reason.find("rank 0 reached step 2, and no `fault` event says shim struck it there"),
            std::string::npos)
      << out[0].reason;
}

TEST(FaultOutcomes, EveryRankFaultIsStruckByAnyRank) {
  RunInput in = twoRanks(2);
  in.supervisor->faults = {asked("unsharded_data:rank=all:step=1", "unsharded_data", "step 1", {}, "reference_trainer")};
  in.ranks[1].events.events.push_back(faultEvent("unsharded_data"));  // the reference trainer names the kind only
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].struck);
  EXPECT_EQ(out[0].struck_ranks, std::vector<int>{1});
}

TEST(FaultOutcomes, TwoFaultsOfOneKindAreToldApartByTheirRules) {
  RunInput in = twoRanks(4);
  in.supervisor->faults = {asked("sigstop:rank=0:step=2", "sigstop", "step 2", {0}),
                           asked("sigstop:rank=0:step=3", "sigstop", "step 3", {0})};
  in.ranks[0].events.events.push_back(faultEvent("sigstop", "sigstop:rank=0:step=2"));
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].struck);
  EXPECT_FALSE(out[1].struck);
}

TEST(FaultOutcomes, ACollectiveNoRankReachedSaysHowManyItEntered) {
  RunInput in;
  in.supervisor = SupervisorRecord{};
  addRank(in, 0, 0).events = History(0).collective("allreduce", 0, 4).collective("allreduce", 1, 4).log();
  in.supervisor->faults = {asked("sigkill:rank=0:collective=7", "sigkill", "collective #7", {0})};
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].reason, "no aimed rank reached collective #7 (rank 0 entered collectives: 2)");
}

TEST(FaultOutcomes, ANodeFaultIsStruckByTheSupervisorsNodeRecord) {
  RunInput in = twoRanks(2);
  RequestedFault f = asked("node_loss:node=n2:step=2", "node_loss", "step 2", {1}, "supervisor");
  f.node = "n2";
  in.supervisor->faults = {f};
  const auto missing = faultOutcomes(in);
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_FALSE(missing[0].struck);
  EXPECT_NE(missing[0].reason.find("node n2 has no record of the run"), std::string::npos) << missing[0].reason;
  NodeEvent strike;
  strike.event = "fault";
  strike.kind = "node_loss";
  in.nodes["n2"].faults.push_back(strike);
  EXPECT_TRUE(faultOutcomes(in)[0].struck);
}

// The reference trainer without the probe (--no-probe): no events, only its
// own announcement on stderr, as the rank log scanner finds it.
TEST(FaultOutcomes, AnUninstrumentedReferenceTrainersAnnouncementIsEvidence) {
  RunInput in;
  in.supervisor = SupervisorRecord{};
  addRank(in, 0, std::nullopt);
  addRank(in, 1, std::nullopt);
  in.supervisor->faults = {asked("hung_collective:rank=1:step=3", "hung_collective", "step 3", {1}, "reference_trainer")};
  EXPECT_FALSE(faultOutcomes(in)[0].struck);
  const RankLog log = scanRankLog(
      "step 2 loss 0.1\n[faultline-trainer rank 1] injecting fault hung_collective at step 3\nsome other line\n");
  EXPECT_EQ(log.announced_faults, std::vector<std::string>{"hung_collective"});
  in.ranks[1].announced_faults = log.announced_faults;
  const auto out = faultOutcomes(in);
  EXPECT_TRUE(out[0].struck);
  EXPECT_EQ(out[0].struck_ranks, std::vector<int>{1});
  // A line of the user's that merely says so is not the trainer's.
  EXPECT_TRUE(scanRankLog("[my-trainer] injecting fault sigkill at step 1\n").announced_faults.empty());
}

// The striking layer records in the rank's events: none at all is no evidence.
TEST(FaultOutcomes, ARankWithNoEventsAtAllShowsNoStrike) {
  RunInput in;
  in.supervisor = SupervisorRecord{};
  addRank(in, 0, std::nullopt, std::string("SIGTERM"));
  addRank(in, 1, std::nullopt, std::string("SIGTERM"));
  in.supervisor->faults = {asked("hung_collective:rank=1:step=3", "hung_collective", "step 3", {1})};
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].struck);
  EXPECT_NE(out[0].reason.find("rank 1 wrote no events at all"), std::string::npos) << out[0].reason;
}

// An external launcher whose ranks were never found (a framework faultline
// does not know): a fault for every rank cannot have been struck.
TEST(FaultOutcomes, NoRankFoundAtAllIsSaid) {
  RunInput in;
  in.supervisor = SupervisorRecord{};
  in.supervisor->faults = {asked("exception:rank=all:step=2", "exception", "step 2", {})};
  const auto out = faultOutcomes(in);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].struck);
  EXPECT_EQ(out[0].reason, "no rank of the run was ever found");
}

TEST(FaultOutcomes, NoFaultsAskedNothingToSay) {
  RunInput in = twoRanks(2);
  EXPECT_TRUE(faultOutcomes(in).empty());
  in.supervisor.reset();
  EXPECT_TRUE(faultOutcomes(in).empty());
}

}  // namespace
}  // namespace faultline::diagnose
