// FaultDelivery on hand-written event streams: points, ranks, once only.
#include "harness/supervise/fault_delivery.h"

#include <csignal>

#include <gtest/gtest.h>

namespace faultline::supervise {
namespace {

OutsideFault fault(std::string kind, std::vector<int> ranks) {
  OutsideFault f;
  f.kind = std::move(kind);
  f.ranks = std::move(ranks);
  f.rule = f.kind;
  return f;
}

TEST(FaultDelivery, KindsAndTheirSignals) {
  EXPECT_EQ(outsideFaultSignal("sigkill"), SIGKILL);
  EXPECT_EQ(outsideFaultSignal("segfault"), SIGSEGV);
  EXPECT_EQ(outsideFaultSignal("abort"), SIGABRT);
  EXPECT_EQ(outsideFaultSignal("sigterm"), SIGTERM);
  EXPECT_EQ(outsideFaultSignal("sigstop"), SIGSTOP);
  EXPECT_EQ(outsideFaultSignal("freeze"), SIGSTOP);
  EXPECT_FALSE(isOutsideFaultKind("hung_collective"));
}

TEST(FaultDelivery, StepPointStrikesItsRankOnceAtThatStep) {
  auto f = fault("sigkill", {1});
  f.step = 3;
  FaultDelivery d({f});
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
  auto f = fault("sigstop", {0, 2});
  f.collective = 5;
  FaultDelivery d({f});
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
  auto f = fault("freeze", {});
  f.after_s = 2.5;
  FaultDelivery d({f});
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
  auto f = fault("abort", {1});
  f.step = 1;
  FaultDelivery d({f});
  d.onEvent(1, "step_end", 1, std::nullopt);
  d.onEvent(1, "collective_begin", std::nullopt, 0);
  d.onEvent(0, "step_begin", 1, std::nullopt);
  EXPECT_TRUE(d.due(10, {0, 1}).empty());
  EXPECT_FALSE(d.nextTime());
}

}  // namespace
}  // namespace faultline::supervise
