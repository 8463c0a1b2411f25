// Hangs and mismatches from collective_begin/end, on hand-written histories.
#include "harness/diagnose/collectives.h"

#include <gtest/gtest.h>

#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::History;

std::map<int, const EventLog*> view(const std::vector<EventLog>& logs) {
  std::map<int, const EventLog*> m;
  for (size_t i = 0; i < logs.size(); ++i) m[static_cast<int>(i)] = &logs[i];
  return m;
}

TEST(HungCollective, RankNeverEntersAndSleeps) {
  std::vector<EventLog> logs = {
      History(0).collective("allreduce", 0, 10).collective("allreduce", 1, 10).collective("allreduce", 2, 10, false).log(),
      History(1).collective("allreduce", 0, 10).collective("allreduce", 1, 10).log(),
      History(2).collective("allreduce", 0, 10).collective("allreduce", 1, 10).collective("allreduce", 2, 10, false).log(),
  };
  auto v = findHungCollective(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::kHungCollective);
  EXPECT_EQ(v->rank, 1);
  EXPECT_EQ(v->collective.op, "allreduce");
  EXPECT_EQ(v->collective.seq, 2);
  EXPECT_EQ(v->missing, (std::vector<int>{1}));
  EXPECT_EQ(v->waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(v->detail, "rank 1 never entered allreduce #2; ranks 0 and 2 waited in a collective");
}

TEST(HungCollective, RankSkipsOneAndGoesOn) {
  // Rank 1 skips seq 2; Gloo pairs its seq 3 with the others' seq 2, so the
  // others end up waiting in seq 3 while rank 1 has finished.
  std::vector<EventLog> logs = {
      History(0).collective("allreduce", 1, 10).collective("allreduce", 2, 10).collective("allreduce", 3, 10, false).log(),
      History(1).collective("allreduce", 1, 10).collective("allreduce", 3, 10).log(),
  };
  auto v = findHungCollective(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 1);
  EXPECT_EQ(v->collective.seq, 2);
  EXPECT_EQ(v->waiting, (std::vector<int>{0}));
}

TEST(HungCollective, EveryRankEnteredIt) {
  std::vector<EventLog> logs = {
      History(0).collective("barrier", 5, 0, false).log(),
      History(1).collective("barrier", 5, 0, false).log(),
  };
  auto v = findHungCollective(view(logs));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->rank);
  EXPECT_TRUE(v->missing.empty());
  EXPECT_EQ(v->collective.seq, 5);
}

TEST(HungCollective, NoneWhenEverythingEnded) {
  std::vector<EventLog> logs = {History(0).collective("allreduce", 0, 1).log(),
                                History(1).collective("allreduce", 0, 1).log()};
  EXPECT_FALSE(findHungCollective(view(logs)));
  EXPECT_FALSE(findHungCollective({}));
}

TEST(CollectiveMismatch, SizeMismatchMajority) {
  std::vector<EventLog> logs = {
      History(0).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log(),
      History(1).collective("allreduce", 0, 100).collective("allreduce", 1, 99, false).log(),
      History(2).collective("allreduce", 0, 100).collective("allreduce", 1, 100, false).log(),
  };
  auto v = findCollectiveMismatch(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->kind, Kind::kCollectiveMismatch);
  EXPECT_EQ(v->rank, 1);
  EXPECT_EQ(v->collective.seq, 1);
  EXPECT_EQ(v->collective.op, "allreduce");
}

TEST(CollectiveMismatch, TwoRanksTieBrokenByNovelCall) {
  // Two ranks disagree: the call never seen before (broadcast) is the odd one.
  std::vector<EventLog> logs = {
      History(0).collective("allreduce", 0, 100).collective("allreduce", 1, 100).collective("allreduce", 2, 100, false).log(),
      History(1).collective("allreduce", 0, 100).collective("allreduce", 1, 100).collective("broadcast", 2, 100, false).log(),
  };
  auto v = findCollectiveMismatch(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->rank, 1);
  EXPECT_EQ(v->collective.seq, 2);
  EXPECT_NE(v->detail.find("broadcast"), std::string::npos);
}

TEST(CollectiveMismatch, ARankConditionOutweighsTheMajority) {
  // `if rank != 0: dist.barrier()`: ranks 1 and 2 took the conditional path.
  const std::string cond = "/app/train.py:50: if rank != 0";
  std::vector<EventLog> logs = {
      History(0).collectiveAt("allreduce", 0, 10, "/app/train.py:40").collectiveAt("allreduce", 1, 10, "/app/train.py:40", "", false).log(),
      History(1).collectiveAt("allreduce", 0, 10, "/app/train.py:40").collectiveAt("barrier", 1, 0, "/app/train.py:51", cond, false).log(),
      History(2).collectiveAt("allreduce", 0, 10, "/app/train.py:40").collectiveAt("barrier", 1, 0, "/app/train.py:51", cond, false).log(),
  };
  auto v = findCollectiveMismatch(view(logs));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->rank);
  EXPECT_EQ(v->blame, Blame::kRanks);
  EXPECT_EQ(v->culprits, (std::vector<int>{1, 2}));
  ASSERT_EQ(v->sides.size(), 2u);
  EXPECT_EQ(v->sides[0].op, "barrier");
  EXPECT_EQ(v->sides[0].rank_condition, cond);
  EXPECT_EQ(v->sides[1].ranks, (std::vector<int>{0}));
  EXPECT_EQ(v->detail,
            "ranks 1 and 2 called barrier of 0 elements (train.py:51, under `if rank != 0`) at collective #1 while rank 0 "
            "called allreduce of 10 elements (train.py:40)");
}

TEST(CollectiveMismatch, BothSidesConditionalFallsBackToTheOtherEvidence) {
  // if rank == 0: broadcast, else: allreduce; neither call was made before: ambiguous.
  std::vector<EventLog> logs = {
      History(0).collectiveAt("broadcast", 0, 4, "/app/t.py:10", "/app/t.py:9: if rank == 0", false).log(),
      History(1).collectiveAt("allreduce", 0, 4, "/app/t.py:12", "/app/t.py:9: if rank == 0", false).log(),
  };
  auto v = findCollectiveMismatch(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->blame, Blame::kAmbiguous);
  EXPECT_EQ(v->culprits, (std::vector<int>{0, 1}));
  EXPECT_NE(v->detail.find("ranks disagree at collective #0"), std::string::npos) << v->detail;
}

// pytorch/pytorch#54059: rank 0 validates through the DDP model (its forward
// broadcasts the buffers, a broadcast like every training step's), then both
// ranks meet at the epoch's barrier. Rank 0's broadcast at the validation
// line is one rank 1 never reached; rank 1's barrier line is one rank 0
// reached in the last epoch: the extra collective is rank 0's, not rank 1's
// "novel" barrier (the op history alone blamed rank 1).
TEST(CollectiveMismatch, AnExtraCollectiveAtALineNoOtherRankReachedIsTheCause) {
  auto epoch = [](History h, int64_t from) -> History {
    h.collectiveAt("broadcast", from, 8, "/app/train.py:30")
        .collectiveAt("allreduce", from + 1, 100, "/app/train.py:31")
        .collectiveAt("barrier", from + 2, 0, "/app/train.py:44");
    return h;
  };
  std::vector<EventLog> logs = {
      epoch(History(0), 0).collectiveAt("broadcast", 3, 8, "/app/train.py:38", "", false).log(),
      epoch(History(1), 0).collectiveAt("barrier", 3, 0, "/app/train.py:44", "", false).log(),
  };
  auto v = findCollectiveMismatch(view(logs));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->blame, Blame::kRank);
  EXPECT_EQ(v->rank, 0);
  EXPECT_EQ(v->sides[0].site, "/app/train.py:38");
  EXPECT_EQ(v->why, "its call at train.py:38 is one no other rank reached in the run: an extra collective");
  // The first epoch: training's forwards broadcast the same buffers (line
  // 30), the barrier's line no rank reached yet. By op and size alone the
  // broadcast was "made by every rank before" and the barrier "by none", so
  // rank 1 was blamed; by call site neither was made before, and nothing
  // else tells: ambiguous, both sides named.
  std::vector<EventLog> first = {
      History(0).collectiveAt("broadcast", 0, 8, "/app/train.py:30").collectiveAt("allreduce", 1, 100, "/app/train.py:31")
          .collectiveAt("broadcast", 2, 8, "/app/train.py:38", "", false).log(),
      History(1).collectiveAt("broadcast", 0, 8, "/app/train.py:30").collectiveAt("allreduce", 1, 100, "/app/train.py:31")
          .collectiveAt("barrier", 2, 0, "/app/train.py:44", "", false).log(),
  };
  auto a = findCollectiveMismatch(view(first));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->blame, Blame::kAmbiguous);
  EXPECT_EQ(a->culprits, (std::vector<int>{0, 1}));
}

TEST(CollectiveMismatch, NoneForMatchingCalls) {
  std::vector<EventLog> logs = {History(0).collective("allreduce", 0, 5).log(),
                                History(1).collective("allreduce", 0, 5).log()};
  EXPECT_FALSE(findCollectiveMismatch(view(logs)));
  std::vector<EventLog> one = {History(0).collective("allreduce", 0, 5).log()};
  EXPECT_FALSE(findCollectiveMismatch(view(one)));
}

}  // namespace
}  // namespace faultline::diagnose
