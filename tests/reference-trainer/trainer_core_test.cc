// The trainer's torch-free pieces: sampler, bucketing, fault specs, options, environment.
#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "reference-trainer/bucketing.h"
#include "harness/probe/fault_spec.h"
#include "reference-trainer/options.h"
#include "reference-trainer/rank_env.h"
#include "reference-trainer/sampler.h"

namespace faultline::trainer {
namespace {

using namespace faultline::probe;

TEST(Sampler, ShardsAreDisjointAndComplete) {
  for (int world : {1, 2, 3, 4, 8}) {
    std::multiset<int64_t> all;
    for (int r = 0; r < world; ++r) {
      auto idx = DistributedSampler(4096, world, r, 7).indices(0);
      EXPECT_EQ(static_cast<int64_t>(idx.size()), (4096 + world - 1) / world);
      all.insert(idx.begin(), idx.end());
    }
    // 4096 is not a multiple of 3: DistributedSampler pads by wrapping around.
    const size_t padding = (world - 4096 % world) % world;
    EXPECT_EQ(all.size(), 4096 + padding) << "world " << world;
    std::set<int64_t> distinct(all.begin(), all.end());
    EXPECT_EQ(distinct.size(), 4096u) << "world " << world;
    EXPECT_EQ(*distinct.begin(), 0);
    EXPECT_EQ(*distinct.rbegin(), 4095);
  }
}

TEST(Sampler, DeterministicPerEpochAndShuffledAcrossEpochs) {
  DistributedSampler a(1000, 4, 2, 42), b(1000, 4, 2, 42), c(1000, 4, 2, 43);
  EXPECT_EQ(a.indices(3), b.indices(3));
  EXPECT_NE(a.indices(0), a.indices(1));
  EXPECT_NE(a.indices(0), c.indices(0));
  auto sorted = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  // A new epoch reshuffles the whole dataset, so a rank's set changes too.
  EXPECT_NE(sorted(a.indices(0)), sorted(a.indices(1)));
}

TEST(Sampler, KnownPermutationIsStable) {
  // Pinned so a change to the shuffle (which would change every fixture) is noticed.
  auto p = epochPermutation(8, 1234, 0);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(p, epochPermutation(8, 1234, 0));
}

TEST(Sampler, RejectsImpossibleShapes) {
  EXPECT_THROW(DistributedSampler(10, 2, 2, 0), std::invalid_argument);
  EXPECT_THROW(DistributedSampler(0, 1, 0, 0), std::invalid_argument);
}

TEST(Bucketing, ReverseOrderUnderCap) {
  // Parameters 0..4 of 40, 4, 40, 4, 100 bytes; cap 50.
  auto b = assignBuckets({40, 4, 40, 4, 100}, 50);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].params, (std::vector<size_t>{4}));  // larger than the cap: alone
  EXPECT_EQ(b[1].params, (std::vector<size_t>{3, 2, 1}));
  EXPECT_EQ(b[1].bytes, 48u);
  EXPECT_EQ(b[2].params, (std::vector<size_t>{0}));
}

TEST(Bucketing, EveryParameterExactlyOnce) {
  std::vector<size_t> sizes;
  for (size_t i = 0; i < 50; ++i) sizes.push_back(1 + (i * 7919) % 1000);
  for (size_t cap : {1ul, 500ul, 2000ul, 1ul << 30}) {
    std::map<size_t, int> seen;
    for (const auto& bucket : assignBuckets(sizes, cap)) {
      size_t bytes = 0;
      for (size_t p : bucket.params) {
        ++seen[p];
        bytes += sizes[p];
      }
      EXPECT_EQ(bytes, bucket.bytes);
      EXPECT_TRUE(bucket.params.size() == 1 || bucket.bytes <= cap);
    }
    EXPECT_EQ(seen.size(), sizes.size());
    for (auto& [p, n] : seen) EXPECT_EQ(n, 1);
  }
  EXPECT_EQ(assignBuckets(sizes, 1ul << 30).size(), 1u);
  EXPECT_TRUE(assignBuckets({}, 10).empty());
}

TEST(FaultSpec, ParsesFullForm) {
  auto f = parseFaultSpec("hung_collective:rank=1:step=3:arg=skip");
  ASSERT_TRUE(f.has_value()) << f.error();
  EXPECT_EQ(f->kind, FaultKind::kHungCollective);
  EXPECT_EQ(f->ranks, std::vector<int>{1});
  EXPECT_EQ(f->step, 3);
  EXPECT_EQ(f->arg, "skip");
  EXPECT_TRUE(f->firesAt(1, 3));
  EXPECT_FALSE(f->firesAt(0, 3));
  EXPECT_FALSE(f->firesAt(1, 4));
}

TEST(FaultSpec, DefaultsAndAllRanks) {
  auto f = parseFaultSpec("unsharded_data");
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->ranks.empty());
  EXPECT_EQ(f->step, 1);
  EXPECT_TRUE(f->targets(0) && f->targets(7));
  EXPECT_TRUE(parseFaultSpec("segfault:rank=all")->ranks.empty());
  EXPECT_EQ(rankList(parseFaultSpec("segfault:rank=all")->ranks), "all");
}

// Issue 16: the same fault on several ranks (rank=0,2), so a scenario is not
// scored on one rank choice.
TEST(FaultSpec, SeveralRanks) {
  auto f = parseFaultSpec("segfault:rank=2,0:step=3");
  ASSERT_TRUE(f.has_value()) << f.error();
  EXPECT_EQ(f->ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(rankList(f->ranks), "0,2");
  EXPECT_TRUE(f->firesAt(0, 3) && f->firesAt(2, 3));
  EXPECT_FALSE(f->targets(1));
  EXPECT_EQ(parseFaultSpec("segfault:rank=0,0").error(),
            "bad fault rank '0,0': rank 0 is listed twice, expected distinct ranks such as 0,2");
  EXPECT_EQ(parseFaultSpec("segfault:rank=0,").error(), "bad fault rank '0,', expected a rank >= 0, ranks such as 0,2, or 'all'");
  EXPECT_EQ(validateFaultSpec(*parseFaultSpec("segfault:rank=0,4"), 4).error(),
            "fault rank 4 is out of range for world size 4");
  auto o = parseOptions({"--fault", "segfault", "--fault-rank", "1,3"});
  ASSERT_TRUE(o.has_value()) << o.error();
  EXPECT_EQ(o->fault.ranks, (std::vector<int>{1, 3}));
}

TEST(FaultSpec, AttemptNamesTheRunOfTheRanksItStrikesIn) {
  auto f = parseFaultSpec("exception:rank=1:step=3:attempt=0");
  ASSERT_TRUE(f) << f.error();
  ASSERT_TRUE(f->attempt);
  EXPECT_EQ(*f->attempt, 0);
  EXPECT_TRUE(f->inAttempt(0));
  EXPECT_FALSE(f->inAttempt(1));
  EXPECT_EQ(f->text(), "exception:rank=1:step=3:attempt=0");
  auto every = parseFaultSpec("exception:rank=1:step=3");
  ASSERT_TRUE(every);
  EXPECT_TRUE(every->inAttempt(0) && every->inAttempt(2));
  EXPECT_EQ(parseFaultSpec("exception:attempt=x").error(), "bad fault attempt 'x', expected an attempt number >= 0 (0: the first)");
}

TEST(FaultSpec, BadInputSaysWhatWasExpected) {
  EXPECT_EQ(parseFaultSpec("segfalt").error().substr(0, 44), "unknown fault kind 'segfalt', expected one o");
  EXPECT_EQ(parseFaultSpec("segfault:rank=-1").error(), "bad fault rank '-1', expected a rank >= 0, ranks such as 0,2, or 'all'");
  EXPECT_EQ(parseFaultSpec("segfault:step=0").error(), "bad fault step '0', expected an integer >= 1");
  EXPECT_EQ(parseFaultSpec("segfault:step=x").error(), "bad fault step 'x', expected an integer >= 1");
  EXPECT_EQ(parseFaultSpec("segfault:when=3").error(), "unknown fault option 'when', expected rank, node, step, collective, op, nth, after, since, point, attempt, arg or by");
  EXPECT_EQ(parseFaultSpec("segfault:3").error(), "bad fault option '3', expected key=value (rank, step, arg)");
  EXPECT_EQ(parseFaultSpec("").error().substr(0, 24), "unknown fault kind '', e");
}

TEST(FaultSpec, ValidationAgainstWorldAndVariants) {
  EXPECT_EQ(validateFaultSpec(*parseFaultSpec("segfault:rank=4"), 4).error(),
            "fault rank 4 is out of range for world size 4");
  EXPECT_TRUE(validateFaultSpec(*parseFaultSpec("segfault:rank=3"), 4).has_value());
  EXPECT_EQ(validateFaultSpec(*parseFaultSpec("hung_collective:arg=nap"), 2).error(),
            "bad --fault-arg 'nap' for hung_collective, expected one of: sleep, skip");
  EXPECT_EQ(validateFaultSpec(*parseFaultSpec("exit:arg=three"), 2).error(),
            "bad --fault-arg 'three' for exit, expected an integer (exit code)");
  EXPECT_TRUE(validateFaultSpec(*parseFaultSpec("undefined_symbol:arg=now"), 2).has_value());
  for (auto name : faultKindNames()) EXPECT_EQ(faultKindName(*faultKindFromName(name)), name);
}

TEST(Options, ParsesFlagsAndFault) {
  auto o = parseOptions({"--steps", "7", "--lr=0.5", "--backend", "gloo", "--fault", "straggler", "--fault-rank", "1",
                         "--fault-step", "2", "--fault-arg", "30"});
  ASSERT_TRUE(o.has_value()) << o.error();
  EXPECT_EQ(o->steps, 7);
  EXPECT_DOUBLE_EQ(o->lr, 0.5);
  EXPECT_EQ(o->backend, "gloo");
  EXPECT_EQ(o->fault.kind, FaultKind::kStraggler);
  EXPECT_EQ(o->fault.ranks, std::vector<int>{1});
  EXPECT_EQ(o->fault.step, 2);
  EXPECT_EQ(o->fault.arg, "30");
}

TEST(Options, FaultFromEnvironmentUnlessOnCommandLine) {
  EXPECT_EQ(parseOptions({}, "abort:rank=1:step=4")->fault.kind, FaultKind::kAbort);
  EXPECT_EQ(parseOptions({"--fault", "segfault"}, "abort:rank=1")->fault.kind, FaultKind::kSegfault);
  EXPECT_EQ(parseOptions({}, "bogus").error().substr(0, 37), "FAULTLINE_FAULT: unknown fault kind '");
}

TEST(Options, NoProbeIsAFlagWithoutValue) {
  EXPECT_FALSE(parseOptions({})->no_probe);
  auto o = parseOptions({"--no-probe", "--steps", "3"});
  ASSERT_TRUE(o) << o.error();
  EXPECT_TRUE(o->no_probe);
  EXPECT_EQ(o->steps, 3);
}

TEST(Options, BadInput) {
  EXPECT_EQ(parseOptions({"--steps", "0"}).error(), "--steps: expected a number >= 1, got '0'");
  EXPECT_EQ(parseOptions({"--steps"}).error(), "--steps: expected a value");
  EXPECT_EQ(parseOptions({"--device", "tpu"}).error(), "--device: expected auto|cpu|cuda, got 'tpu'");
  EXPECT_EQ(parseOptions({"--frobnicate"}).error(), "unknown option '--frobnicate' (see --help)");
  EXPECT_EQ(parseOptions({"--fault-rank", "1"}).error(), "--fault-rank/--fault-step/--fault-arg need --fault KIND");
}

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(RankEnv, ReadsTorchrunEnvironment) {
  auto e = readRankEnv(fakeEnv({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"},
                                {"MASTER_PORT", "29500"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  ASSERT_TRUE(e.has_value()) << e.error();
  EXPECT_EQ(e->rank, 3);
  EXPECT_EQ(e->local_rank, 1);
  EXPECT_EQ(e->world_size, 4);
  EXPECT_EQ(e->master_addr, "10.0.0.1");
  EXPECT_EQ(e->master_port, 29500);
  EXPECT_TRUE(e->use_agent_store);
  EXPECT_EQ(e->restart_count, 2);
  EXPECT_EQ(e->local_world_size, 4);  // unset: the whole world is on this node
}

TEST(RankEnv, GlooBindsToTheFirstInterfaceOfGlooSocketIfname) {
  std::map<std::string, std::string> m = {{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};
  EXPECT_EQ(readRankEnv(fakeEnv(m))->gloo_ifname, "");
  m["GLOO_SOCKET_IFNAME"] = "fl1a2b3cv2";
  EXPECT_EQ(readRankEnv(fakeEnv(m))->gloo_ifname, "fl1a2b3cv2");
  m["GLOO_SOCKET_IFNAME"] = "eth0,eth1";
  EXPECT_EQ(readRankEnv(fakeEnv(m))->gloo_ifname, "eth0");
}

TEST(RankEnv, LocalWorldSizeIsReadAndBounded) {
  std::map<std::string, std::string> m = {{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                          {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}, {"LOCAL_WORLD_SIZE", "2"}};
  EXPECT_EQ(readRankEnv(fakeEnv(m))->local_world_size, 2);
  m["LOCAL_WORLD_SIZE"] = "1";  // fewer ranks on the node than LOCAL_RANK says
  EXPECT_FALSE(readRankEnv(fakeEnv(m)).has_value());
  m["LOCAL_WORLD_SIZE"] = "5";  // more than the world
  EXPECT_FALSE(readRankEnv(fakeEnv(m)).has_value());
}

TEST(Options, AutoDeviceIsCudaOnlyWithAGpuPerLocalRank) {
  EXPECT_EQ(autoDevice(true, 2, 2), "cuda");
  EXPECT_EQ(autoDevice(true, 8, 2), "cuda");
  EXPECT_EQ(autoDevice(true, 1, 2), "cpu");  // one GPU, two ranks: NCCL refuses a shared device
  EXPECT_EQ(autoDevice(true, 0, 1), "cpu");
  EXPECT_EQ(autoDevice(false, 4, 2), "cpu");  // a LibTorch without NCCL
}

TEST(RankEnv, MissingOrMalformedIsNamed) {
  std::map<std::string, std::string> ok = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29500"}};
  auto without = [&](const std::string& k) {
    auto m = ok;
    m.erase(k);
    return readRankEnv(fakeEnv(m));
  };
  auto with = [&](const std::string& k, const std::string& v) {
    auto m = ok;
    m[k] = v;
    return readRankEnv(fakeEnv(m));
  };
  EXPECT_TRUE(readRankEnv(fakeEnv(ok)).has_value());
  EXPECT_EQ(readRankEnv(fakeEnv(ok))->local_rank, 0);  // LOCAL_RANK defaults to RANK
  EXPECT_EQ(without("RANK").error().substr(0, 18), "RANK is not set; r");
  EXPECT_EQ(without("MASTER_ADDR").error(), "MASTER_ADDR is not set, expected a host name or address");
  EXPECT_EQ(with("RANK", "2").error(), "RANK='2' is not valid, expected an integer in [0, 1]");
  EXPECT_EQ(with("MASTER_PORT", "http").error(), "MASTER_PORT='http' is not valid, expected an integer in [1, 65535]");
  EXPECT_EQ(with("WORLD_SIZE", "0").error(), "WORLD_SIZE='0' is not valid, expected an integer in [1, 1048576]");
}

}  // namespace
}  // namespace faultline::trainer
