// Findings on hand-written events: each pitfall found, a clean run finds nothing.
#include "harness/diagnose/findings.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::History;

RunInput runOf(std::vector<EventLog> logs) {
  RunInput in;
  in.world_size = static_cast<int>(logs.size());
  for (size_t i = 0; i < logs.size(); ++i) {
    RankInput& r = in.ranks[static_cast<int>(i)];
    r.rank = static_cast<int>(i);
    r.started = true;
    r.exit_known = true;
    r.exit_code = 0;
    r.events = std::move(logs[i]);
  }
  return in;
}

History cleanRank(int r, int64_t step_ms = 10) {
  History h(r);
  h.ev("pg_init").fingerprint(0, "aaaa");
  std::vector<int64_t> idx;
  for (int64_t i = r; i < 64; i += 2) idx.push_back(i);
  h.samples(0, idx);
  for (int s = 0; s < 5; ++s) {
    h.at(s * 100).ev("step_begin");
    h.at(s * 100 + step_ms);
    h.collective("allreduce", s, 10);
    h.metric("loss", 1.0 + r, "local", s);
    if (r == 0) h.metric("loss", 1.5, "global", s);
    h.ev("step_end");
  }
  return h.fingerprint(5, "bbbb").ev("pg_destroy").exit(0);
}

TEST(Findings, CleanRunHasNone) {
  RunInput in = runOf({cleanRank(0).log(), cleanRank(1).log()});
  EXPECT_TRUE(findFindings(in).empty());
}

TEST(Findings, SeedMismatchAtInit) {
  RunInput in = runOf({History(0).fingerprint(0, "aaaa").log(), History(1).fingerprint(0, "cccc").log(),
                       History(2).fingerprint(0, "aaaa").log()});
  auto f = findSeedMismatch(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::kSeedMismatch);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_NE(f[0].summary.find("at init"), std::string::npos);
}

TEST(Findings, SeedDriftLater) {
  RunInput in = runOf({History(0).fingerprint(0, "a").fingerprint(10, "b").log(),
                       History(1).fingerprint(0, "a").fingerprint(10, "c").log()});
  auto f = findSeedMismatch(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("from step 10"), std::string::npos);
}

TEST(Findings, UnshardedDataWithOverlapPercent) {
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 100; ++i) all.push_back(i);
  RunInput in = runOf({History(0).samples(0, all).log(), History(1).samples(0, all).log()});
  auto f = findUnshardedData(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f[0].summary.find("50%"), std::string::npos);
}

TEST(Findings, SamplerPaddingIsNotOverlap) {
  // DistributedSampler pads 10 samples to 12 on 4 ranks... on 2 ranks 11 -> 12: one repeat.
  RunInput in = runOf({History(0).samples(0, {0, 2, 4, 6, 8, 10}).log(),
                       History(1).samples(0, {1, 3, 5, 7, 9, 0}).log()});
  EXPECT_TRUE(findUnshardedData(in).empty());
}

TEST(Findings, UnshardedFromHashesOnly) {
  Event a;
  a.ev = "samples";
  a.epoch = 0;
  a.count = 5000;
  a.hash = "feed";
  EventLog l0, l1;
  l0.events.push_back(a);
  l1.events.push_back(a);
  RunInput in = runOf({l0, l1});
  auto f = findUnshardedData(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("50%"), std::string::npos);
}

TEST(Findings, UnsyncedMetricLocalReportedAsGlobal) {
  RunInput in = runOf({History(0).metric("loss", 2.0, "local", 3).metric("loss", 2.0, "global", 3).log(),
                       History(1).metric("loss", 4.0, "local", 3).log()});
  auto f = findUnsyncedMetrics(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
  EXPECT_NE(f[0].summary.find("not all-reduced"), std::string::npos);
}

TEST(Findings, UnsyncedGlobalDiffersAcrossRanks) {
  RunInput in = runOf({History(0).metric("acc", 0.5, "global", 1).log(), History(1).metric("acc", 0.7, "global", 1).log()});
  EXPECT_EQ(findUnsyncedMetrics(in).size(), 1u);
}

TEST(Findings, SumAllReduceIsSynced) {
  RunInput in = runOf({History(0).metric("n", 2, "local", 1).metric("n", 6, "global", 1).log(),
                       History(1).metric("n", 4, "local", 1).metric("n", 6, "global", 1).log()});
  EXPECT_TRUE(findUnsyncedMetrics(in).empty());
}

TEST(Findings, ConcurrentWritesWithInterleaving) {
  const std::string path = ::testing::TempDir() + "/shared_train.log";
  {
    std::ofstream out(path);
    out << "rank=0 step 1\nrank=1 step 1\nrank=0 step 2\n";
  }
  RunInput in = runOf({History(0).fileOpen(path, "w").log(), History(1).fileOpen(path, "a").log(),
                       History(2).fileOpen("/tmp/own-2.log", "w").log()});
  auto f = findConcurrentWrites(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(f[0].evidence.find("interleaved"), std::string::npos);
  std::remove(path.c_str());
  auto gone = findConcurrentWrites(in);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_NE(gone[0].evidence.find("no longer exists"), std::string::npos);
}

TEST(Findings, ReadOnlyOpensAreNotWrites) {
  RunInput in = runOf({History(0).fileOpen("/data/x", "r").log(), History(1).fileOpen("/data/x", "r").log()});
  EXPECT_TRUE(findConcurrentWrites(in).empty());
}

TEST(Findings, Straggler) {
  RunInput in = runOf({cleanRank(0, 5).log(), cleanRank(1, 80).log(), cleanRank(2, 5).log()});
  auto f = findStraggler(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
}

// Steps of the given work times (ms), 200 ms apart, each ending in an all-reduce.
EventLog stepsOf(int r, const std::vector<int64_t>& work_ms) {
  History h(r);
  h.ev("pg_init");
  for (size_t s = 0; s < work_ms.size(); ++s) {
    h.at(static_cast<int64_t>(s) * 200).ev("step_begin");
    h.at(static_cast<int64_t>(s) * 200 + work_ms[s]);
    h.collective("allreduce", static_cast<int64_t>(s), 10);
    h.ev("step_end");
  }
  return h.exit(0).log();
}

// 64 ranks on 2 cores (as measured in a 64-rank run of the reference
// trainer): each rank is slowed at random steps, some by 100 ms, and its median
// work per step lands anywhere between 1 and 40 ms. None of them is a
// straggler; a rank that works 90 ms at nearly every step among them is.
TEST(Findings, OversubscribedRanksAreNoStragglersButASleeperIs) {
  std::vector<EventLog> logs;
  for (int r = 0; r < 64; ++r) {
    const int64_t w = r % 16 == 3 ? 23 : 2 + r % 9;
    logs.push_back(stepsOf(r, {w, w + 1, w, w + 2, w, w + 1, w, w, w + 3, w}));
  }
  logs[9] = stepsOf(9, {114, 22, 18, 132, 41, 41, 18, 120, 3, 2});  // slow at half of its steps
  EXPECT_TRUE(findStraggler(runOf(logs)).empty());
  logs[37] = stepsOf(37, {4, 3, 90, 92, 95, 90, 91, 90, 93, 90});  // slow from step 2 on
  auto f = findStraggler(runOf(logs));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{37}));
}

TEST(Findings, NoPgDestroyOnlyForCleanExits) {
  RunInput in = runOf({History(0).ev("pg_init").exit(0).log(), History(1).ev("pg_init").ev("pg_destroy").exit(0).log(),
                       History(2).ev("pg_init").log()});
  in.ranks[2].exit_code = 1;  // crashed: not expected to clean up
  auto f = findNoPgDestroy(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{0}));
}

// A patch that did not apply leaves its finding unknown, not absent.
TEST(Findings, SeedMismatchIsUncheckedWhereTheFingerprintPatchFailed) {
  const std::string err = "AttributeError: type object 'DistributedDataParallel' has no attribute '__init__'";
  RunInput in = runOf({History(0).instrument("ddp.fingerprint", true).fingerprint(0, "aaaa").log(),
                       History(1).instrument("ddp.fingerprint", false, err).log(),
                       History(2).instrument("ddp.fingerprint", true).fingerprint(0, "aaaa").log()});
  const auto found = findFindings(in);
  EXPECT_TRUE(found.empty());
  const auto unchecked = findUnchecked(in, found);
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_EQ(unchecked[0].kind, Kind::kSeedMismatch);
  EXPECT_EQ(unchecked[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(unchecked[0].reason, "rank 1: patch ddp.fingerprint failed: " + err);
  EXPECT_EQ(uncheckedJson(unchecked),
            nlohmann::json::parse(R"([{"kind": "seed_mismatch", "ranks": [1], "reason": "rank 1: patch ddp.fingerprint failed: )" +
                                  err + R"("}])"));
}

TEST(Findings, AFindingThatWasFoundIsNotAlsoUnchecked) {
  RunInput in = runOf({History(0).fingerprint(0, "aaaa").log(), History(1).fingerprint(0, "cccc").log(),
                       History(2).instrument("ddp.fingerprint", false, "TypeError: x").log()});
  const auto found = findFindings(in);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_TRUE(findUnchecked(in, found).empty());
}

TEST(Findings, EveryPatchAppliedOrNoneReportedLeavesNothingUnchecked) {
  RunInput in = runOf({cleanRank(0).log(), cleanRank(1).log()});
  EXPECT_TRUE(findUnchecked(in, findFindings(in)).empty());
  in.ranks[0].events = History(0).instrument("ddp.fingerprint", true).instrument("dist.all_reduce", true).log();
  EXPECT_TRUE(findUnchecked(in, findFindings(in)).empty());
}

TEST(Findings, AnUnseenPgDestroyIsNoFinding) {
  RunInput in = runOf({History(0).instrument("dist.destroy_process_group", false, "TypeError: x").ev("pg_init").exit(0).log(),
                       History(1).ev("pg_init").ev("pg_destroy").exit(0).log()});
  const auto found = findFindings(in);
  EXPECT_TRUE(findNoPgDestroy(in).empty());
  const auto unchecked = findUnchecked(in, found);
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_EQ(unchecked[0].kind, Kind::kNoPgDestroy);
  EXPECT_EQ(unchecked[0].ranks, (std::vector<int>{0}));
}

TEST(Findings, ARankWithUntracedCollectivesIsNoStraggler) {
  // Rank 1's all-reduce waits are not traced: they would count as its work.
  History r1 = History(1);
  r1.instrument("dist.all_reduce", false, "TypeError: x");
  RunInput in = runOf({cleanRank(0, 5).log(), cleanRank(1, 80).log(), cleanRank(2, 5).log()});
  in.ranks[1].events.events.insert(in.ranks[1].events.events.begin(), r1.log().events.front());
  EXPECT_TRUE(findStraggler(in).empty());
  const auto unchecked = findUnchecked(in, findFindings(in));
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_EQ(unchecked[0].kind, Kind::kStraggler);
  EXPECT_EQ(unchecked[0].reason, "rank 1: patch dist.all_reduce failed: TypeError: x");
}

}  // namespace
}  // namespace faultline::diagnose
