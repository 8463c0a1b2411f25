// FaultDelivery on hand-written event streams: points, ranks, once only.
#include "harness/supervise/fault_delivery.h"

#include <csignal>

#include <gtest/gtest.h>

namespace faultline::supervise {
namespace {

// A fault as a scenario or `exec --fault` gives it to the supervisor.
probe::FaultSpec fault(const std::string& text) {
  auto f = probe::parseFaultSpec(text);
  EXPECT_TRUE(f) << f.error();
  return *f;
}

TEST(FaultDelivery, KindsAndTheirSignals) {
  using K = probe::FaultKind;
  EXPECT_EQ(outsideFaultSignal(K::kSigkill), SIGKILL);
  EXPECT_EQ(outsideFaultSignal(K::kSegfault), SIGSEGV);
  EXPECT_EQ(outsideFaultSignal(K::kAbort), SIGABRT);
  EXPECT_EQ(outsideFaultSignal(K::kSigterm), SIGTERM);
  EXPECT_EQ(outsideFaultSignal(K::kSigstop), SIGSTOP);
  EXPECT_EQ(outsideFaultSignal(K::kFreeze), SIGSTOP);
  EXPECT_EQ(outsideFaultSignal(K::kHungCollective), 0);
  // Every kind the supervisor strikes has its signal.
  for (auto name : probe::faultKindNames()) {
    const auto k = *probe::faultKindFromName(name);
    EXPECT_EQ(outsideFaultSignal(k) != 0, probe::layerStrikes(probe::FaultLayer::kSupervisor, k)) << name;
  }
}

TEST(FaultDelivery, StepPointStrikesItsRankOnceAtThatStep) {
  FaultDelivery d({fault("sigkill:rank=1:step=3")});
  for (int64_t s = 1; s <= 2; ++s) {
    d.onEvent(0, "step_begin", s, std::nullopt);
    d.onEvent(1, "step_begin", s, std::nullopt);
  }
  EXPECT_TRUE(d.due(1.0, {0, 1}).empty());
  d.onEvent(0, "step_begin", 3, std::nullopt);
  d.onEvent(1, "step_begin", 3, std::nullopt);
  auto strikes = d.due(1.5, {0, 1});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].rank, 1);
  EXPECT_EQ(strikes[0].signal, SIGKILL);
  EXPECT_EQ(strikes[0].point, "step 3");
  EXPECT_EQ(strikes[0].step, 3);
  d.onEvent(1, "step_begin", 4, std::nullopt);
  EXPECT_TRUE(d.due(2.0, {0, 1}).empty());
}

TEST(FaultDelivery, CollectivePointIsTheSeqAndASkippedNumberStillStrikes) {
  FaultDelivery d({fault("sigstop:rank=0,2:collective=5")});
  d.onEvent(0, "collective_begin", std::nullopt, 4);
  d.onEvent(2, "collective_begin", std::nullopt, 6);  // 5 not seen: the next one is
  d.onEvent(1, "collective_begin", std::nullopt, 5);
  auto strikes = d.due(0, {0, 1, 2});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].rank, 2);
  EXPECT_EQ(strikes[0].point, "collective #5");
  d.onEvent(0, "collective_begin", std::nullopt, 5);
  ASSERT_EQ(d.due(0, {0, 1, 2}).size(), 1u);
}

TEST(FaultDelivery, TimePointStrikesEveryAimedRunningRankAndSaysWhenItIsDue) {
  FaultDelivery d({fault("freeze:after=2.5")});
  EXPECT_EQ(d.nextTime(), 2.5);
  EXPECT_TRUE(d.due(2.0, {0, 1}).empty());
  auto strikes = d.due(2.6, {0, 1});
  ASSERT_EQ(strikes.size(), 2u);
  EXPECT_TRUE(strikes[0].whole_group);
  EXPECT_EQ(strikes[0].point, "2.5 s after start");
  EXPECT_TRUE(d.due(3.0, {0, 1}).empty());
  EXPECT_EQ(d.due(3.0, {0, 1, 2}).size(), 1u);  // a rank that appeared later
}

TEST(FaultDelivery, OtherEventsAndOtherRanksDoNothing) {
  FaultDelivery d({fault("abort:rank=1:step=1")});
  d.onEvent(1, "step_end", 1, std::nullopt);
  d.onEvent(1, "collective_begin", std::nullopt, 0);
  d.onEvent(0, "step_begin", 1, std::nullopt);
  EXPECT_TRUE(d.due(10, {0, 1}).empty());
  EXPECT_FALSE(d.nextTime());
}

}  // namespace
}  // namespace faultline::supervise
