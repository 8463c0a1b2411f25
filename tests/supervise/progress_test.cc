// CollectiveTracker and EventsFollower on hand-written event lines.
#include "harness/supervise/progress.h"

#include <fstream>

#include <gtest/gtest.h>

#include "tests/supervise/test_support.h"

namespace faultline::supervise {
namespace {

TEST(CollectiveTracker, BeginWithoutEndIsInsideACollective) {
  CollectiveTracker t;
  EXPECT_FALSE(t.instrumented());
  t.onLine(0, R"({"t":1,"rank":0,"pid":9,"ev":"collective_begin","op":"allreduce","seq":3})");
  t.onLine(1, R"({"t":2,"rank":1,"pid":8,"ev":"collective_begin","op":"allreduce","seq":3})");
  t.onLine(1, R"({"t":3,"rank":1,"pid":8,"ev":"collective_end","op":"allreduce","seq":3})");
  EXPECT_TRUE(t.instrumented());
  EXPECT_TRUE(t.anyInCollective());
  ASSERT_TRUE(t.openCollective(0));
  EXPECT_EQ(t.openCollective(0)->op, "allreduce");
  EXPECT_EQ(t.openCollective(0)->seq, 3);
  EXPECT_FALSE(t.openCollective(1));
  EXPECT_EQ(t.describe(), "rank 0 in allreduce seq 3; rank 1 not in a collective");
}

// A launcher that restarts its ranks (torchrun --max-restarts) starts a new
// process for each: the collective the old one died in is over, and the new
// process's first collective (seq 0 again) is all that counts.
// A rank whose work is a thread of its own (Ray Train's training thread)
// says which in its `start`; the watch loop reads that thread's activity.
TEST(CollectiveTracker, AStartNamesTheWorkThreadWhereThereIsOne) {
  CollectiveTracker t;
  const LineFields ray = t.onLine(1, R"({"t":1,"rank":1,"pid":900,"ev":"start","world_size":3,"tid":912})");
  EXPECT_EQ(ray.ev, "start");
  EXPECT_EQ(ray.pid, 900);
  EXPECT_EQ(ray.tid, 912);
  const LineFields plain = t.onLine(0, R"({"t":1,"rank":0,"pid":901,"ev":"start","world_size":3})");
  EXPECT_FALSE(plain.tid);
}

TEST(CollectiveTracker, ARestartedRanksNewProcessForgetsTheOldOnesCalls) {
  CollectiveTracker t;
  t.onLine(0, R"({"t":1,"rank":0,"pid":9,"ev":"start"})");
  t.onLine(0, R"({"t":2,"rank":0,"pid":9,"ev":"collective_begin","op":"allreduce","seq":4})");
  ASSERT_TRUE(t.anyInCollective());
  // The same process writing `start` again (a spawn child named late) is no restart.
  t.onLine(0, R"({"t":3,"rank":0,"pid":9,"ev":"start"})");
  EXPECT_TRUE(t.anyInCollective());
  t.onLine(0, R"({"t":4,"rank":0,"pid":19,"ev":"start","attempt":1})");
  EXPECT_FALSE(t.anyInCollective());
  EXPECT_EQ(t.seqPassed(0), -1);
  t.onLine(0, R"({"t":5,"rank":0,"pid":19,"ev":"collective_begin","op":"broadcast","seq":0})");
  ASSERT_TRUE(t.openCollective(0));
  EXPECT_EQ(t.openCollective(0)->seq, 0);
}

// A rank that destroys its process group with an async collective still
// running (its Work never waited for) leaves it: the shim ends it as
// abandoned, which says the rank is no longer in it and is no duration of
// that op. The rank is then past its group until it joins one again.
TEST(CollectiveTracker, AnAbandonedCallEndsWithoutADurationAndTheGroupIsDestroyed) {
  CollectiveTracker t;
  t.onLine(0, R"({"t":1,"rank":0,"pid":9,"ev":"pg_init"})");
  EXPECT_FALSE(t.destroyed(0));
  t.onLine(0, R"({"t":2,"rank":0,"pid":9,"ev":"collective_begin","op":"allreduce","seq":13})");
  t.onLine(0, R"({"t":1500000002,"rank":0,"pid":9,"ev":"collective_end","op":"allreduce","seq":13,"abandoned":true})");
  t.onLine(0, R"({"t":1500000003,"rank":0,"pid":9,"ev":"pg_destroy","backend":"gloo"})");
  EXPECT_FALSE(t.anyInCollective());
  EXPECT_FALSE(t.durations().op("allreduce"));
  EXPECT_TRUE(t.destroyed(0));
  t.onLine(0, R"({"t":1500000004,"rank":0,"pid":9,"ev":"pg_init"})");
  EXPECT_FALSE(t.destroyed(0));
  // A call that did complete still counts.
  t.onLine(0, R"({"t":1500000005,"rank":0,"pid":9,"ev":"collective_begin","op":"allreduce","seq":14})");
  t.onLine(0, R"({"t":1500000007,"rank":0,"pid":9,"ev":"collective_end","op":"allreduce","seq":14,"abandoned":false})");
  ASSERT_TRUE(t.durations().op("allreduce"));
  EXPECT_EQ(t.durations().op("allreduce")->count(), 1u);
}

// A rank whose collective patch did not apply may be inside a collective the
// shim could not see: it is not said to be outside one.
TEST(CollectiveTracker, ARankWithoutCollectiveTracingIsNotSaidToBeOutsideOne) {
  CollectiveTracker t;
  t.onLine(0, R"({"t":1,"rank":0,"pid":9,"ev":"instrument","patch":"dist.all_reduce","applied":true})");
  t.onLine(0, R"({"t":2,"rank":0,"pid":9,"ev":"collective_begin","op":"allreduce","seq":3})");
  t.onLine(1, R"({"t":1,"rank":1,"pid":8,"ev":"instrument","patch":"optim.step","applied":false,"error":"E"})");
  t.onLine(1, R"({"t":1,"rank":1,"pid":8,"ev":"instrument","patch":"dist.all_reduce","applied":false,"error":"TypeError: x"})");
  t.onLine(2, R"({"t":1,"rank":2,"pid":7,"ev":"start"})");
  EXPECT_EQ(t.describe(),
            "rank 0 in allreduce seq 3; rank 1 collective tracing unavailable (patch dist.all_reduce failed: "
            "TypeError: x); rank 2 not in a collective");
  EXPECT_EQ(t.malformedLines(), 0u);
  EXPECT_TRUE(t.anyUntraced());
  t.onLine(1, R"({"t":5,"rank":1,"pid":8,"ev":"instrument","patch":"dist.all_reduce","applied":true})");
  EXPECT_FALSE(t.anyUntraced());  // the later outcome stands
}

TEST(CollectiveTracker, MalformedLinesAreCountedNotFatal) {
  CollectiveTracker t;
  t.onLine(0, "not json");
  t.onLine(0, R"({"ev":)");
  t.onLine(0, "\xff\xfe");
  t.onLine(0, R"({"rank":0})");
  EXPECT_EQ(t.malformedLines(), 4u);
  EXPECT_FALSE(t.instrumented());
}

TEST(CollectiveTracker, RankFieldWinsOverFileRank) {
  CollectiveTracker t;
  t.onLine(5, R"({"t":1,"rank":2,"pid":9,"ev":"collective_begin","op":"barrier","seq":0})");
  EXPECT_TRUE(t.openCollective(2));
  EXPECT_FALSE(t.openCollective(5));
}

TEST(CollectiveTracker, OnlyTopLevelFieldsCountAndTypesMustMatch) {
  CollectiveTracker t;
  // Nested objects and arrays carry fields of the same names: they are not the event's.
  t.onLine(9, R"({"t":1796048543654988505,"ev":"collective_begin","x":{"rank":7,"ev":"exit","seq":99},)"
              R"("stack":[{"op":"broadcast"}],"rank":1,"op":"allreduce","seq":2})");
  ASSERT_TRUE(t.openCollective(1));
  EXPECT_EQ(t.openCollective(1)->op, "allreduce");
  EXPECT_EQ(t.openCollective(1)->seq, 2);
  EXPECT_EQ(t.openCollective(1)->t_ns, 1796048543654988505);
  EXPECT_FALSE(t.openCollective(7));
  // An "ev" that is no string, last value winning as in a JSON object, is malformed.
  t.onLine(0, R"({"ev":"collective_begin","ev":3,"rank":0})");
  t.onLine(0, R"([{"ev":"collective_begin"}])");
  t.onLine(0, R"({"ev":"collective_begin","rank":0} trailing)");
  EXPECT_EQ(t.malformedLines(), 3u);
  EXPECT_FALSE(t.openCollective(0));
  // A rank that is no integer is ignored: the file's rank is used.
  t.onLine(4, R"({"ev":"collective_begin","rank":"two","op":"barrier","seq":0.5})");
  ASSERT_TRUE(t.openCollective(4));
  EXPECT_EQ(t.openCollective(4)->seq, -1);
}

TEST(EventsFollower, DeliversCompleteLinesAndKeepsThePartialOne) {
  faultline::testing::TempDir dir;
  const std::string path = dir / "events.jsonl";
  EventsFollower f(path);
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  EXPECT_EQ(f.readNew(collect), 0u);  // no file yet
  {
    std::ofstream o(path);
    o << "{\"a\":1}\n{\"b\":";
  }
  EXPECT_EQ(f.readNew(collect), 1u);
  {
    std::ofstream o(path, std::ios::app);
    o << "2}\n";
  }
  EXPECT_EQ(f.readNew(collect), 1u);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "{\"a\":1}");
  EXPECT_EQ(lines[1], "{\"b\":2}");
}

}  // namespace
}  // namespace faultline::supervise
