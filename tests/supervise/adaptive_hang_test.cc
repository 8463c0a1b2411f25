// The adaptive hang detection's pure parts: durations learned from event
// lines, thresholds, the longest wait, and the idle-or-busy verdict.
#include "harness/supervise/adaptive_hang.h"

#include <string>

#include <gtest/gtest.h>

#include "harness/supervise/durations.h"
#include "harness/supervise/progress.h"

namespace faultline::supervise {
namespace {

constexpr int64_t kMs = 1'000'000;

std::string line(int rank, const char* ev, const char* op, int64_t seq, int64_t t_ns, const char* extra = "") {
  return "{\"t\":" + std::to_string(t_ns) + ",\"rank\":" + std::to_string(rank) + ",\"pid\":1,\"ev\":\"" + ev +
         "\",\"op\":\"" + op + "\",\"seq\":" + std::to_string(seq) + extra + "}";
}

// `n` all-reduces on every rank of `world`, each `ms` long, one after the
// other from t = 0; returns the time the last ended.
int64_t rhythm(CollectiveTracker& t, int world, int n, int64_t ms, int64_t first_seq = 0) {
  int64_t now = 0;
  for (int i = 0; i < n; ++i) {
    for (int r = 0; r < world; ++r) t.onLine(r, line(r, "collective_begin", "allreduce", first_seq + i, now));
    now += ms * kMs;
    for (int r = 0; r < world; ++r) t.onLine(r, line(r, "collective_end", "allreduce", first_seq + i, now));
    now += kMs;
  }
  return now;
}

TEST(DurationWindow, QuantilesByNearestRank) {
  DurationWindow w;
  EXPECT_FALSE(w.quantile(0.99));
  for (int i = 1; i <= 100; ++i) w.add(i);
  EXPECT_EQ(*w.quantile(0.99), 99);
  EXPECT_EQ(*w.quantile(1.0), 100);
  EXPECT_EQ(*w.quantile(0.5), 50);
  EXPECT_EQ(w.count(), 100u);
  EXPECT_EQ(w.max(), 100);
  w.add(-5);  // a begin after its end (two clocks): no duration
  EXPECT_EQ(w.count(), 100u);
}

TEST(DurationWindow, KeepsTheRecentRhythm) {
  DurationWindow w;
  for (size_t i = 0; i < DurationWindow::kCapacity; ++i) w.add(1'000);  // a slow warm-up
  for (size_t i = 0; i < DurationWindow::kCapacity; ++i) w.add(10);
  EXPECT_EQ(*w.quantile(0.99), 10);
  EXPECT_EQ(w.max(), 1'000);
  EXPECT_EQ(w.count(), 2 * DurationWindow::kCapacity);
}

TEST(CollectiveTracker, LearnsCollectiveAndStepDurations) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "allreduce", 0, 100 * kMs));
  t.onLine(0, line(0, "collective_end", "allreduce", 0, 130 * kMs));
  // An end of another seq than the open begin is no duration of it.
  t.onLine(1, line(1, "collective_begin", "allreduce", 0, 100 * kMs));
  t.onLine(1, line(1, "collective_end", "allreduce", 1, 900 * kMs));
  t.onLine(0, R"({"t":1000000,"rank":0,"pid":1,"ev":"step_begin","step":1})");
  t.onLine(0, R"({"t":51000000,"rank":0,"pid":1,"ev":"step_end","step":1})");
  ASSERT_TRUE(t.durations().op("allreduce"));
  EXPECT_EQ(t.durations().op("allreduce")->count(), 1u);
  EXPECT_EQ(*t.durations().op("allreduce")->quantile(1.0), 30 * kMs);
  EXPECT_EQ(t.durations().allOps().count(), 1u);
  EXPECT_EQ(*t.durations().steps().quantile(1.0), 50 * kMs);
  EXPECT_FALSE(t.durations().op("broadcast"));
}

TEST(AdaptiveThreshold, TenTimesP99WithAFloorAndEnoughHistory) {
  AdaptiveOptions o;
  DurationHistory h;
  for (int i = 0; i < 29; ++i) h.addCollective("allreduce", 80 * kMs);
  EXPECT_FALSE(adaptiveThreshold(h, "allreduce", o)) << "29 durations are too few";
  h.addCollective("allreduce", 80 * kMs);
  auto t = adaptiveThreshold(h, "allreduce", o);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->ns, 800 * kMs);
  EXPECT_EQ(t->p99_ns, 80 * kMs);
  EXPECT_EQ(t->basis, "allreduce");
  // A new op borrows every op's rhythm; fast collectives hit the floor.
  DurationHistory fast;
  for (int i = 0; i < 40; ++i) fast.addCollective("allreduce", 2 * kMs);
  t = adaptiveThreshold(fast, "barrier", o);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->basis, "all ops");
  EXPECT_EQ(t->ns, 500 * kMs);
  o.factor = 0;
  EXPECT_FALSE(adaptiveThreshold(fast, "allreduce", o)) << "factor 0: off";
}

TEST(LongestWait, NamesTheMissingRankAndHowLongThePeersWaited) {
  CollectiveTracker t;
  int64_t now = rhythm(t, 3, 20, 10);
  t.onLine(0, line(0, "collective_begin", "allreduce", 20, now));
  t.onLine(2, line(2, "collective_begin", "allreduce", 20, now + 5 * kMs));
  auto w = longestWait(t, {0, 1, 2}, now + 705 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->op, "allreduce");
  EXPECT_EQ(w->seq, 20);
  EXPECT_EQ(w->waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(w->missing, (std::vector<int>{1}));
  EXPECT_EQ(w->waited_ns, 700 * kMs) << "from the last waiting rank's begin";
  EXPECT_EQ(w->threshold.ns, 500 * kMs);
  EXPECT_TRUE(w->due());
  EXPECT_FALSE(longestWait(t, {0, 1, 2}, now + 105 * kMs, AdaptiveOptions{})->due());
}

TEST(LongestWait, NoCallWithoutHistoryAMissingRankOrAWholeWorld) {
  AdaptiveOptions o;
  CollectiveTracker fresh;  // start-up: the first collective has no history
  fresh.onLine(0, line(0, "collective_begin", "broadcast", 0, 0));
  fresh.onLine(1, R"({"t":0,"rank":1,"pid":1,"ev":"start"})");
  AdaptiveOptions learned_only = o;
  learned_only.idle_s = 0;
  EXPECT_FALSE(longestWait(fresh, {0, 1}, 60'000 * kMs, learned_only)) << "no history and the idle rule off";

  CollectiveTracker t;
  int64_t now = rhythm(t, 2, 20, 10);
  t.onLine(0, line(0, "collective_begin", "allreduce", 20, now));
  t.onLine(1, line(1, "collective_begin", "allreduce", 20, now));
  EXPECT_FALSE(longestWait(t, {0, 1}, now + 60'000 * kMs, o)) << "every rank is in it: nobody is missing";
  EXPECT_FALSE(longestWait(t, {0, 1, 2}, now + 60'000 * kMs, o)) << "rank 2 wrote no event: not known yet";
}

TEST(LongestWait, SubgroupsPointToPointAndDyingRanksAreLeftToTheFixedTimeout) {
  AdaptiveOptions o;
  CollectiveTracker t;
  int64_t now = rhythm(t, 3, 20, 10);
  // A subgroup's collective: rank 1 is no member, so not missing.
  t.onLine(0, line(0, "collective_begin", "allreduce", -1, now, ",\"group\":\"0,2\""));
  t.onLine(2, line(2, "collective_begin", "allreduce", -1, now, ",\"group\":\"0,2\""));
  EXPECT_FALSE(longestWait(t, {0, 1, 2}, now + 60'000 * kMs, o));
  CollectiveTracker p;
  now = rhythm(p, 2, 20, 10);
  p.onLine(0, line(0, "collective_begin", "recv", 20, now));
  EXPECT_FALSE(longestWait(p, {0, 1}, now + 60'000 * kMs, o)) << "a recv waits for one peer, not for all";
  CollectiveTracker d;
  now = rhythm(d, 2, 20, 10);
  d.onLine(0, line(0, "collective_begin", "allreduce", 20, now));
  d.onLine(1, R"({"t":1,"rank":1,"pid":1,"ev":"error","kind":"python_exception","type":"ValueError"})");
  EXPECT_FALSE(longestWait(d, {0, 1}, now + 60'000 * kMs, o)) << "rank 1 is on its way out: its exit decides";
}

TEST(LongestWait, ARankThatWentPastTheCollectiveIsNotMissing) {
  CollectiveTracker t;
  int64_t now = rhythm(t, 3, 20, 10);
  // A gather: rank 1 sent its part and left; the root waits for rank 2.
  for (int r : {0, 1}) t.onLine(r, line(r, "collective_begin", "gather", 20, now));
  t.onLine(1, line(1, "collective_end", "gather", 20, now + kMs));
  t.onLine(1, line(1, "collective_begin", "allreduce", 21, now + 2 * kMs));
  auto w = longestWait(t, {0, 1, 2}, now + 900 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->op, "gather");
  EXPECT_EQ(w->waiting, (std::vector<int>{0}));
  EXPECT_EQ(w->missing, (std::vector<int>{2}));
}

TEST(LongestWait, ARankWithoutCollectiveTracingStopsTheCall) {
  CollectiveTracker t;
  int64_t now = rhythm(t, 2, 20, 10);
  t.onLine(1, R"({"t":1,"rank":1,"pid":8,"ev":"instrument","patch":"dist.all_reduce","applied":false,"error":"E"})");
  t.onLine(0, line(0, "collective_begin", "allreduce", 20, now));
  EXPECT_FALSE(longestWait(t, {0, 1}, now + 60'000 * kMs, AdaptiveOptions{}));
}

LongWait dueWait(std::vector<int> missing) {
  LongWait w;
  w.op = "allreduce";
  w.seq = 40;
  w.waiting = {0, 2};
  w.missing = std::move(missing);
  w.threshold = Threshold{500 * kMs, 31 * kMs, 480, "allreduce"};
  w.waited_ns = 612 * kMs;
  return w;
}

TEST(JudgeWait, AnIdleMissingRankIsAHang) {
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, 0);
  a.sample(1, Activity{101, 5000, 'S'}, 100 * kMs);  // one tick: an idle thread waking
  a.sample(1, Activity{101, 5000, 'S'}, 300 * kMs);
  const WaitVerdict v = judgeWait(dueWait({1}), a, 300 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_EQ(v.idle_ns, 300 * kMs);
  EXPECT_EQ(describeHang(dueWait({1}), v, AdaptiveOptions{}, {}),
            "ranks 0,2 waited 612 ms in allreduce seq 40, past the adaptive threshold of 500 ms (the floor; learned "
            "p99 31 ms of allreduce over 480 durations); rank 1 is not in it and idle (no CPU, no I/O) for 300 ms");
}

TEST(JudgeWait, ABusyMissingRankIsAStraggler) {
  for (const Activity& later : {Activity{102, 5000, 'S'}, Activity{100, 9000, 'S'}, Activity{100, 5000, 'R'},
                                Activity{100, 5000, 'D'}}) {
    ActivityWatch a;
    a.sample(1, Activity{100, 5000, 'S'}, 0);
    a.sample(1, later, 200 * kMs);
    a.sample(1, Activity{later.cpu_ticks, later.io_chars, 'S'}, 300 * kMs);
    const WaitVerdict v = judgeWait(dueWait({1}), a, 300 * kMs);
    EXPECT_FALSE(v.hang) << later.cpu_ticks << " " << later.io_chars << " " << later.state;
    EXPECT_EQ(v.busy, (std::vector<int>{1}));
  }
  EXPECT_EQ(describeStraggler(dueWait({1}), {1}),
            "rank 1 busy (CPU or I/O) outside allreduce seq 40 while ranks 0,2 waited 612 ms in it (adaptive "
            "threshold 500 ms, learned p99 31 ms of allreduce over 480 durations): a straggler, not an adaptive hang");
}

TEST(JudgeWait, IdleTooBrieflyOrNotDueIsNoHangYet) {
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, 0);
  EXPECT_FALSE(judgeWait(dueWait({1}), a, 100 * kMs).hang) << "idle 100 ms of the 250 ms window";
  LongWait early = dueWait({1});
  early.waited_ns = 400 * kMs;
  a.sample(1, Activity{100, 5000, 'S'}, 400 * kMs);
  EXPECT_FALSE(judgeWait(early, a, 400 * kMs).hang);
}

TEST(JudgeWait, AStoppedRankIsAHangWhateverItDidAMomentAgo) {
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'R'}, 0);
  a.sample(1, Activity{150, 5000, 'T'}, 50 * kMs);
  const WaitVerdict v = judgeWait(dueWait({1}), a, 50 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_TRUE(a.stopped(1));
  EXPECT_NE(describeHang(dueWait({1}), v, AdaptiveOptions{}, {1}).find("rank 1 stopped (process state T"),
            std::string::npos);
}

// --- the idle rule: no history needed ---------------------------------------

// The first collective of a run: no rhythm, but the wait is judged by the
// idle rule, its window the threshold.
TEST(IdleRule, TheFirstCollectiveIsJudgedWithoutHistory) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "broadcast", 0, 0));
  t.onLine(1, R"({"t":0,"rank":1,"pid":1,"ev":"start"})");
  auto w = longestWait(t, {0, 1}, 1200 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->threshold.learned);
  EXPECT_EQ(w->idle_window_ns, 1000 * kMs);
  EXPECT_EQ(w->missing, (std::vector<int>{1}));
  EXPECT_EQ(w->watchFromNs(), 100 * kMs) << "read /proc early: idleness counts from the first look";
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, 200 * kMs);
  a.sample(1, Activity{101, 5000, 'S'}, 700 * kMs);
  EXPECT_FALSE(judgeWait(*w, a, 1100 * kMs).hang) << "idle 900 ms of the 1 s window";
  a.sample(1, Activity{101, 5000, 'S'}, 1200 * kMs);
  const WaitVerdict v = judgeWait(*w, a, 1200 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_TRUE(v.by_idle_rule);
  EXPECT_EQ(describeHang(*w, v, AdaptiveOptions{}, {}),
            "rank 0 waited 1200 ms in broadcast seq 0; rank 1 is not in it and idle (no CPU, no I/O) for 1000 ms: idle "
            "while its peers wait, past the idle rule's 1000 ms (no rhythm needed; 0 collective(s) completed so far)");
}

// A learned threshold longer than the idle window (slow collectives, 10x
// their p99 is 3 s) never makes the call slower: the idle rule calls it.
TEST(IdleRule, ALearnedRhythmNeverMakesTheCallSlower) {
  CollectiveTracker t;
  int64_t now = rhythm(t, 3, 40, 300);
  t.onLine(0, line(0, "collective_begin", "allreduce", 40, now));
  t.onLine(2, line(2, "collective_begin", "allreduce", 40, now));
  auto w = longestWait(t, {0, 1, 2}, now + 1100 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->threshold.learned);
  EXPECT_EQ(w->threshold.ns, 3000 * kMs);
  EXPECT_FALSE(w->due());
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, now);
  a.sample(1, Activity{100, 5000, 'S'}, now + 1100 * kMs);
  const WaitVerdict v = judgeWait(*w, a, now + 1100 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_TRUE(v.by_idle_rule);
}

// A rank waiting for its DataLoader's next batch (slow I/O in its workers,
// or in __getitem__ itself) is no hang however idle the rank's own counters
// are: a straggler, and said so.
TEST(IdleRule, ARankWaitingForItsDataLoaderIsAStraggler) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "allreduce", 0, 0));
  t.onLine(1, R"({"t":0,"rank":1,"pid":1,"ev":"data_begin"})");
  auto w = longestWait(t, {0, 1}, 3000 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->missing_in_data_wait, (std::vector<int>{1}));
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, 0);
  a.sample(1, Activity{100, 5000, 'S'}, 3000 * kMs);
  const WaitVerdict v = judgeWait(*w, a, 3000 * kMs);
  EXPECT_FALSE(v.hang);
  EXPECT_EQ(v.busy, (std::vector<int>{1}));
  EXPECT_EQ(describeStraggler(*w, v.busy),
            "rank 1 waiting for its DataLoader's next batch outside allreduce seq 0 while rank 0 waited 3000 ms in it "
            "(idle rule 1000 ms): a straggler, not an adaptive hang");
  // Its batch came: idle outside the collective from then on is judged again.
  t.onLine(1, R"({"t":3000000000,"rank":1,"pid":1,"ev":"data_end"})");
  w = longestWait(t, {0, 1}, 4200 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->missing_in_data_wait.empty());
  a.sample(1, Activity{100, 5000, 'S'}, 4200 * kMs);
  EXPECT_TRUE(judgeWait(*w, a, 4200 * kMs).hang);
}

// A missing rank inside a collective of its own (a subgroup's, a recv) is
// waiting on someone else: the idle rule does not judge it.
TEST(IdleRule, AMissingRankInACollectiveOfItsOwnIsNotJudgedIdle) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "allreduce", 0, 0));
  t.onLine(1, line(1, "collective_begin", "allreduce", -1, 0, ",\"group\":\"1,2\""));
  t.onLine(2, R"({"t":0,"rank":2,"pid":1,"ev":"start"})");
  auto w = longestWait(t, {0, 1, 2}, 5000 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->missing_in_collective, (std::vector<int>{1}));
  ActivityWatch a;
  for (int r : {1, 2}) a.sample(r, Activity{100, 5000, 'S'}, 0);
  EXPECT_FALSE(judgeWait(*w, a, 5000 * kMs).hang);
}

// The rendezvous: ranks inside init_process_group, a live rank that never
// began it, idle: a hang by the idle rule's rendezvous window.
TEST(IdleRule, ARankMissingFromTheRendezvousIsNamed) {
  CollectiveTracker t;
  t.onLine(0, R"({"t":0,"rank":0,"pid":1,"ev":"pg_init_begin"})");
  t.onLine(2, R"({"t":100000000,"rank":2,"pid":3,"ev":"pg_init_begin"})");
  t.onLine(1, R"({"t":0,"rank":1,"pid":2,"ev":"start"})");
  auto w = longestWait(t, {0, 1, 2}, 2700 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_TRUE(w->rendezvous);
  EXPECT_EQ(w->waiting, (std::vector<int>{0, 2}));
  EXPECT_EQ(w->missing, (std::vector<int>{1}));
  EXPECT_EQ(w->waited_ns, 2600 * kMs);
  EXPECT_EQ(w->idle_window_ns, 2500 * kMs);
  ActivityWatch a;
  a.sample(1, Activity{100, 5000, 'S'}, 100 * kMs);
  a.sample(1, Activity{100, 5000, 'S'}, 2700 * kMs);
  const WaitVerdict v = judgeWait(*w, a, 2700 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_EQ(describeHang(*w, v, AdaptiveOptions{}, {}),
            "ranks 0,2 waited 2600 ms in the rendezvous (init_process_group); rank 1 is not in it (never began it) and "
            "idle (no CPU, no I/O) for 2600 ms: idle while its peers wait, past the idle rule's 2500 ms (no rhythm "
            "needed; 0 collective(s) completed so far)");
  // Still importing torch (busy): a straggler, no hang.
  ActivityWatch busy;
  busy.sample(1, Activity{100, 5000, 'S'}, 100 * kMs);
  busy.sample(1, Activity{180, 9000, 'R'}, 2600 * kMs);
  EXPECT_FALSE(judgeWait(*w, busy, 2700 * kMs).hang);
  // Once every rank has joined, nobody waits in it.
  for (int r : {0, 1, 2}) t.onLine(r, "{\"t\":3000000000,\"rank\":" + std::to_string(r) + ",\"pid\":1,\"ev\":\"pg_init\"}");
  EXPECT_FALSE(longestWait(t, {0, 1, 2}, 9000 * kMs, AdaptiveOptions{}));
}

// A node slowed by SIGSTOP/SIGCONT (slow_node: stopped 60% of every 500 ms)
// is stopped in some samples and works in between: a straggler, never an
// idle-rule hang; frozen for good, it is one once the window has passed.
TEST(IdleRule, StoppedPartOfTheTimeIsAStragglerFrozenIsAHang) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "allreduce", 0, 0));
  t.onLine(1, R"({"t":0,"rank":1,"pid":1,"ev":"start"})");
  auto w = longestWait(t, {0, 1}, 1500 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  ActivityWatch slowed, frozen;
  uint64_t ticks = 100;
  for (int64_t at = 0; at <= 1500; at += 100) {
    const bool stopped = (at / 100) % 5 < 3;
    if (!stopped) ticks += 4;
    slowed.sample(1, Activity{ticks, 5000, stopped ? 'T' : 'S'}, at * kMs);
    frozen.sample(1, Activity{100, 5000, 'T'}, at * kMs);
  }
  EXPECT_FALSE(judgeWait(*w, slowed, 1500 * kMs).hang);
  EXPECT_TRUE(judgeWait(*w, frozen, 1500 * kMs).hang);
}

// Ranks blocked in a c10d store call while their peer waits in a collective:
// idle, judged by the idle rule (a deadlock: nobody will set the key), and
// the words say where they wait.
TEST(IdleRule, RanksWaitingInTheStoreAreJudgedAndNamed) {
  CollectiveTracker t;
  t.onLine(0, line(0, "collective_begin", "barrier", 0, 0));
  for (int r : {1, 2}) {
    t.onLine(r, "{\"t\":0,\"rank\":" + std::to_string(r) +
                    ",\"pid\":1,\"ev\":\"store_begin\",\"op\":\"get\",\"key\":\"weights_ready\",\"site\":\"/a.py:3\"}");
  }
  auto w = longestWait(t, {0, 1, 2}, 1200 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->missing, (std::vector<int>{1, 2}));
  EXPECT_EQ(w->missing_in_store.at(1), "get 'weights_ready'");
  ActivityWatch a;
  for (int r : {1, 2}) {
    a.sample(r, Activity{100, 5000, 'S'}, 100 * kMs);
    a.sample(r, Activity{100, 5000, 'S'}, 1200 * kMs);
  }
  const WaitVerdict v = judgeWait(*w, a, 1200 * kMs);
  EXPECT_TRUE(v.hang);
  EXPECT_NE(describeHang(*w, v, AdaptiveOptions{}, {}).find(
                "ranks 1,2 are not in it (in the c10d store: ranks 1,2 get 'weights_ready') and idle"),
            std::string::npos)
      << describeHang(*w, v, AdaptiveOptions{}, {});
  // The key came: out of the store.
  t.onLine(1, R"({"t":1,"rank":1,"pid":1,"ev":"store_end","op":"get"})");
  EXPECT_EQ(longestWait(t, {0, 1, 2}, 1300 * kMs, AdaptiveOptions{})->missing_in_store.count(1), 0u);
}

// DeepSpeed all-reduces its gradients on a group of every rank, numbered with
// the default group and labelled with its ranks: a wait there is judged (it
// was skipped as a subgroup's, and a hang under DeepSpeed waited for the
// fixed timeout).
TEST(IdleRule, AGroupOfEveryRankIsJudgedLikeTheDefaultGroup) {
  CollectiveTracker t;
  for (int r : {0, 2}) t.onLine(r, line(r, "collective_begin", "allreduce", 10, 0, ",\"group\":\"0,1,2\""));
  t.onLine(1, line(1, "collective_end", "allreduce", 9, 0, ",\"group\":\"0,1,2\""));
  auto w = longestWait(t, {0, 1, 2}, 1200 * kMs, AdaptiveOptions{});
  ASSERT_TRUE(w);
  EXPECT_EQ(w->seq, 10);
  EXPECT_EQ(w->missing, (std::vector<int>{1}));
}

}  // namespace
}  // namespace faultline::supervise
