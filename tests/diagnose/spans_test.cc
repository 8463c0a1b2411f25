// Steps and collectives as spans: paired by step and sequence number (a
// subgroup call, which has none, by op), never-ended ones open, and the cap
// keeping each rank's last spans, where a hang is.
#include "harness/diagnose/spans.h"

#include <gtest/gtest.h>

#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;
using testing::History;

Event subgroupCall(const std::string& ev, int rank, int64_t t) {
  Event e;
  e.ev = ev;
  e.op = "allgather";
  e.rank = rank;
  e.t = t;
  return e;  // seq stays -1: a subgroup call
}

TEST(Spans, PairsStepsAndCollectivesAndLeavesTheHungOneOpen) {
  RunInput in;
  addRank(in, 0, 0).events = History(0).at(0).step(1).at(10).collective("allreduce", 1, 64).at(20)
                                 .collective("allreduce", 2, 64, /*ended=*/false).log();
  addRank(in, 1, 0).events = History(1).at(0).step(1).at(10).collective("allreduce", 1, 64).log();
  const Analysis a = analyse(in);
  const SpanSet set = buildSpans(a);
  ASSERT_EQ(set.spans.size(), 5u);
  EXPECT_EQ(set.dropped, 0);
  const Span& hung = set.spans[2];
  EXPECT_EQ(hung.rank, 0);
  EXPECT_EQ(hung.kind, "collective");
  EXPECT_EQ(hung.name, "allreduce");
  EXPECT_EQ(hung.index, 2);
  EXPECT_FALSE(hung.dur_ms);
  EXPECT_EQ(hung.numel, 64);
  EXPECT_EQ(set.spans[0].kind, "step");
  EXPECT_EQ(set.spans[0].name, "step 1");
  ASSERT_TRUE(set.spans[0].dur_ms);
  EXPECT_NEAR(*set.spans[0].dur_ms, 1.0, 1e-6);  // History spaces events 1 ms apart
  for (size_t i = 3; i < 5; ++i) EXPECT_EQ(set.spans[i].rank, 1);
}

TEST(Spans, ASubgroupCallWithoutSequenceNumberEndsByItsOp) {
  RunInput in;
  RankInput& r = addRank(in, 0, 0);
  const int64_t t0 = 1'000'000'000;
  r.events.events = {subgroupCall("collective_begin", 0, t0), subgroupCall("collective_begin", 0, t0 + 1'000'000),
                     subgroupCall("collective_end", 0, t0 + 3'000'000)};
  const SpanSet set = buildSpans(analyse(in));
  ASSERT_EQ(set.spans.size(), 2u);
  EXPECT_FALSE(set.spans[0].dur_ms) << "the outer call is still open";
  ASSERT_TRUE(set.spans[1].dur_ms) << "the innermost open call of that op ended";
  EXPECT_NEAR(*set.spans[1].dur_ms, 2.0, 1e-6);
  EXPECT_EQ(set.spans[1].index, -1);
}

TEST(Spans, OverTheCapEachRankKeepsItsFirstAndMostlyItsLastSpans) {
  RunInput in;
  History h(0);
  for (int s = 1; s <= 500; ++s) h.step(s);
  h.collective("allreduce", 1, 8, /*ended=*/false);
  addRank(in, 0, 0).events = h.log();
  const SpanSet set = buildSpans(analyse(in), 100);
  ASSERT_EQ(set.spans.size(), 100u);
  EXPECT_EQ(set.dropped, 401);
  EXPECT_EQ(set.spans.front().name, "step 1");
  EXPECT_EQ(set.spans.back().kind, "collective") << "the hang at the end is kept";
  EXPECT_FALSE(set.spans.back().dur_ms);
}

}  // namespace
}  // namespace faultline::diagnose
