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

TEST(Findings, SeedMismatchNeverRepairedIsAnError) {
  // The probe's fingerprints at step 0 and 10 (no `at`): they differ at both,
  // nothing made the replicas equal.
  RunInput in = runOf({History(0).fingerprint(0, "a").fingerprint(10, "b").log(),
                       History(1).fingerprint(0, "c").fingerprint(10, "d").log()});
  auto f = findSeedMismatch(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_NE(f[0].summary.find("still differ later"), std::string::npos) << f[0].summary;
  EXPECT_TRUE(findDivergedParams(in).empty());  // never equal: the seed mismatch's, not a divergence
}

TEST(Findings, SeedMismatchThatDdpRepairedIsAWarning) {
  RunInput in = runOf({History(0).fingerprintAt("ddp_init", 0, "a").fingerprintAt("ddp_ready", 0, "a").log(),
                       History(1).fingerprintAt("ddp_init", 0, "b").fingerprintAt("ddp_ready", 0, "a").log()});
  auto f = findSeedMismatch(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, "warning");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].summary,
            "parameter fingerprints differ across ranks at init (step 0): rank 1 diverged; DDP's broadcast overwrote "
            "the parameters with rank 0's (equal right after DDP's broadcast), but the other random streams (dropout, "
            "data augmentation, sampling) still differ across ranks");
  EXPECT_TRUE(findDivergedParams(in).empty());
}

TEST(Findings, ParametersThatDivergeAfterTheBroadcastAreAnError) {
  // Equal after DDP's broadcast, different from the first optimizer step on.
  RunInput in = runOf({History(0).fingerprintAt("ddp_init", 0, "a").fingerprintAt("ddp_ready", 0, "a")
                           .fingerprintAt("optimizer_step", 1, "b").fingerprintAt("optimizer_step", 2, "c").log(),
                       History(1).fingerprintAt("ddp_init", 0, "a").fingerprintAt("ddp_ready", 0, "a")
                           .fingerprintAt("optimizer_step", 1, "x").fingerprintAt("optimizer_step", 2, "y").log()});
  EXPECT_TRUE(findSeedMismatch(in).empty());
  auto f = findDivergedParams(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::kDivergedParams);
  EXPECT_EQ(f[0].severity, "error");
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].summary.rfind("parameters diverged across ranks at step 1 (equal right after DDP's broadcast)", 0), 0u)
      << f[0].summary;
  // The probe's later fingerprints (no `at`) count as well: equal at 0, different at 10.
  RunInput probe = runOf({History(0).fingerprint(0, "a").fingerprint(10, "b").log(),
                          History(1).fingerprint(0, "a").fingerprint(10, "c").log()});
  EXPECT_TRUE(findSeedMismatch(probe).empty());
  auto g = findDivergedParams(probe);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_NE(g[0].summary.find("at step 10 (equal at init (step 0))"), std::string::npos) << g[0].summary;
}

TEST(Findings, BuffersKeptPerRankAreAnError) {
  RunInput in = runOf({History(0).fingerprintAt("ddp_ready", 0, "p").fingerprintAt("ddp_ready", 0, "s", "buffers")
                           .fingerprintAt("optimizer_step", 1, "p1").fingerprintAt("optimizer_step", 1, "s0", "buffers")
                           .log(),
                       History(1).fingerprintAt("ddp_ready", 0, "p").fingerprintAt("ddp_ready", 0, "s", "buffers")
                           .fingerprintAt("optimizer_step", 1, "p1").fingerprintAt("optimizer_step", 1, "s1", "buffers")
                           .log()});
  auto f = findDivergedParams(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(f[0].summary.rfind("buffers differ across ranks at step 1: rank 1 kept its own (DDP with "
                               "broadcast_buffers=False)", 0), 0u)
      << f[0].summary;
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

// Too few steps to tell: 4 steps, 3 of them slowed (a build beside the run).
TEST(Findings, FourStepsAreTooFewForAStraggler) {
  EXPECT_TRUE(findStraggler(runOf({stepsOf(0, {7, 6, 8, 7}), stepsOf(1, {43, 40, 5, 45})})).empty());
  auto f = findStraggler(runOf({stepsOf(0, {7, 6, 8, 7, 6}), stepsOf(1, {43, 40, 5, 45, 44})}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{1}));
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

// Multi-node: ranks 0-1 on n1, 2-3 on n2; node n2 stopped from outside at
// every 4th step, so its ranks enter that step's all-reduce 250 ms late
// while their own work per step stays what n1's is.
RunInput twoNodesWithLateSteps(const std::vector<int64_t>& n2_late_ms) {
  std::vector<EventLog> logs;
  for (int r = 0; r < 4; ++r) {
    std::vector<int64_t> work(20, 5);
    if (r >= 2) {
      for (size_t s = 0; s < work.size(); ++s) work[s] += n2_late_ms[s % n2_late_ms.size()];
    }
    logs.push_back(stepsOf(r, work));
  }
  RunInput in = runOf(logs);
  for (auto& [r, ri] : in.ranks) ri.node = r < 2 ? "n1" : "n2";
  return in;
}

TEST(Findings, ANodeTheOthersWaitForIsAStragglerNode) {
  RunInput in = twoNodesWithLateSteps({0, 0, 0, 250});
  auto f = findStragglerNode(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::kStraggler);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(f[0].summary,
            "node n2 is a straggler: the other nodes waited 1.25 s for it in 5 of 20 collectives (up to 250 ms each), "
            "its ranks 2-3 entering last");
  // Rank against rank, each of n2's compares with its sibling, as slow as
  // itself: the per-rank rule cannot see a node straggle.
  EXPECT_TRUE(findStraggler(in).empty());
}

// The first collective waits for the node that started last: start-up skew,
// however long, neither makes that node a straggler nor hides the real one.
TEST(Findings, TheFirstCollectiveWaitsForStartUpNotForAStraggler) {
  RunInput in = twoNodesWithLateSteps({0, 0, 0, 250});
  for (int r : {2, 3}) {
    Event* first = nullptr;
    for (Event& e : in.ranks[r].events.events) {
      if (e.ev == "collective_begin" && (!first || e.seq < first->seq)) first = &e;
    }
    ASSERT_NE(first, nullptr);
    first->t -= 1'000'000'000;  // n2 was up 1 s before n1 and waited for it
  }
  auto f = findStragglerNode(in);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].ranks, (std::vector<int>{2, 3}));
  EXPECT_NE(f[0].summary.find("waited 1.25 s for it in 5 of 20 collectives"), std::string::npos) << f[0].summary;
}

TEST(Findings, NoStragglerNodeForJitterARareDelayOrOneNode) {
  EXPECT_TRUE(findStragglerNode(twoNodesWithLateSteps({0, 10, 0, 15})).empty());  // jitter under 20 ms
  std::vector<int64_t> once(20, 0);
  once[7] = 300;
  EXPECT_TRUE(findStragglerNode(twoNodesWithLateSteps(once)).empty());  // one collective
  RunInput single = twoNodesWithLateSteps({0, 0, 0, 250});
  for (auto& [r, ri] : single.ranks) ri.node.clear();
  EXPECT_TRUE(findStragglerNode(single).empty());
}

// The catalog's diagnosis-local-batchnorm on slurm@2.13, at load 5 on 2
// cores: node n1 entered 3 of a short run's collectives 45-51 ms after n2,
// and the other ones first or within 20 ms. Neither far nor more often than
// a coin thrown three times: no straggler. A node late by 40 ms at every
// step is one, and so is a node late by 250 ms three times.
TEST(Findings, AFewLateCollectivesOfJitterAreNoStragglerNodeButALateNodeIs) {
  std::vector<int64_t> jitter(20, 0);
  jitter[3] = 48;
  jitter[9] = 45;
  jitter[15] = 51;
  EXPECT_TRUE(findStragglerNode(twoNodesWithLateSteps(jitter)).empty());
  const auto steady = findStragglerNode(twoNodesWithLateSteps({40}));
  ASSERT_EQ(steady.size(), 1u);
  EXPECT_EQ(steady[0].ranks, (std::vector<int>{2, 3}));
  std::vector<int64_t> far(20, 0);
  far[3] = far[9] = far[15] = 250;
  const auto stopped = findStragglerNode(twoNodesWithLateSteps(far));
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_NE(stopped[0].summary.find("in 3 of 20 collectives"), std::string::npos) << stopped[0].summary;
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
  ASSERT_EQ(unchecked.size(), 2u);  // and the divergence the same fingerprints would show
  EXPECT_EQ(unchecked[1].kind, Kind::kDivergedParams);
  EXPECT_EQ(unchecked[1].ranks, (std::vector<int>{1}));
  EXPECT_EQ(unchecked[0].kind, Kind::kSeedMismatch);
  EXPECT_EQ(unchecked[0].ranks, (std::vector<int>{1}));
  EXPECT_EQ(unchecked[0].reason, "rank 1: patch ddp.fingerprint failed: " + err);
  EXPECT_EQ(uncheckedJson({unchecked[0]}),
            nlohmann::json::parse(R"([{"kind": "seed_mismatch", "ranks": [1], "reason": "rank 1: patch ddp.fingerprint failed: )" +
                                  err + R"("}])"));
}

TEST(Findings, AFindingThatWasFoundIsNotAlsoUnchecked) {
  RunInput in = runOf({History(0).fingerprint(0, "aaaa").log(), History(1).fingerprint(0, "cccc").log(),
                       History(2).instrument("ddp.fingerprint", false, "TypeError: x").log()});
  const auto found = findFindings(in);
  ASSERT_EQ(found.size(), 1u);
  // seed_mismatch was found; only the divergence stays unknown on rank 2.
  const auto unchecked = findUnchecked(in, found);
  ASSERT_EQ(unchecked.size(), 1u);
  EXPECT_EQ(unchecked[0].kind, Kind::kDivergedParams);
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
