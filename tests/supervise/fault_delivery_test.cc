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
  EXPECT_EQ(probe::faultSignal(K::kSigkill), SIGKILL);
  EXPECT_EQ(probe::faultSignal(K::kSegfault), SIGSEGV);
  EXPECT_EQ(probe::faultSignal(K::kAbort), SIGABRT);
  EXPECT_EQ(probe::faultSignal(K::kSigterm), SIGTERM);
  EXPECT_EQ(probe::faultSignal(K::kSigstop), SIGSTOP);
  EXPECT_EQ(probe::faultSignal(K::kFreeze), SIGSTOP);
  EXPECT_EQ(probe::faultSignal(K::kHungCollective), 0);
  // Every kind the supervisor strikes at a rank has its signal (node faults
  // are struck on the node's processes and links, node_faults.cc).
  for (auto name : probe::faultKindNames()) {
    const auto k = *probe::faultKindFromName(name);
    if (probe::isNodeFault(k)) continue;
    EXPECT_EQ(probe::faultSignal(k) != 0, probe::layerStrikes(probe::FaultLayer::kSupervisor, k)) << name;
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

// A node fault as the scenario parser gives it: the node's ranks filled in.
probe::FaultSpec nodeFault(const std::string& text, std::vector<int> ranks) {
  probe::FaultSpec f = fault(text);
  f.ranks = std::move(ranks);
  return f;
}

TEST(FaultDelivery, ANodeFaultStrikesTheNodeOnceAtTheFirstOfItsRanks) {
  FaultDelivery d({nodeFault("node_loss:node=n2:step=3", {2, 3})});
  d.onEvent(0, "step_begin", 3, std::nullopt);  // n1's rank: not the node's
  EXPECT_TRUE(d.due(0, {0, 1, 2, 3}).empty());
  d.onEvent(3, "step_begin", 3, std::nullopt);
  d.onEvent(2, "step_begin", 3, std::nullopt);  // the node is struck already
  auto strikes = d.due(0, {0, 1, 2, 3});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].node, "n2");
  EXPECT_EQ(strikes[0].rank, 3);
  EXPECT_EQ(strikes[0].kind, "node_loss");
  EXPECT_EQ(strikes[0].rule, "node_loss:node=n2:step=3");
  EXPECT_TRUE(d.due(5, {0, 1, 2, 3}).empty());
}

TEST(FaultDelivery, ANodeFaultAtATimeStrikesOnceWithItsArg) {
  FaultDelivery d({nodeFault("partition:node=n2:after=1:arg=2.5", {2, 3})});
  EXPECT_EQ(d.nextTime(), 1.0);
  auto strikes = d.due(1.2, {0, 1, 2, 3});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].arg, "2.5");
  EXPECT_FALSE(d.nextTime());
}

TEST(FaultDelivery, AgentKillInRendezvousWaitsForTheWatchLoopAndStrikesOnce) {
  FaultDelivery d({nodeFault("agent_kill:node=n2:point=rendezvous", {2, 3})});
  EXPECT_EQ(d.awaitingRendezvous(), std::vector<std::string>{"n2"});
  d.onEvent(2, "step_begin", 1, std::nullopt);
  EXPECT_TRUE(d.due(100, {2, 3}).empty());  // no step or time point
  EXPECT_FALSE(d.atRendezvous("n1"));
  auto s = d.atRendezvous("n2");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->point, "rendezvous");
  EXPECT_EQ(s->rank, -1);
  EXPECT_TRUE(d.awaitingRendezvous().empty());
  EXPECT_FALSE(d.atRendezvous("n2"));
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
