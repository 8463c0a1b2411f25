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
    d.onEvent(0, "step_begin", s, std::nullopt, 0.0);
    d.onEvent(1, "step_begin", s, std::nullopt, 0.0);
  }
  EXPECT_TRUE(d.due(1.0, {0, 1}).empty());
  d.onEvent(0, "step_begin", 3, std::nullopt, 0.0);
  d.onEvent(1, "step_begin", 3, std::nullopt, 0.0);
  auto strikes = d.due(1.5, {0, 1});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].rank, 1);
  EXPECT_EQ(strikes[0].signal, SIGKILL);
  EXPECT_EQ(strikes[0].point, "step 3");
  EXPECT_EQ(strikes[0].step, 3);
  d.onEvent(1, "step_begin", 4, std::nullopt, 0.0);
  EXPECT_TRUE(d.due(2.0, {0, 1}).empty());
}

TEST(FaultDelivery, CollectivePointIsTheSeqAndASkippedNumberStillStrikes) {
  FaultDelivery d({fault("sigstop:rank=0,2:collective=5")});
  d.onEvent(0, "collective_begin", std::nullopt, 4, 0.0);
  d.onEvent(2, "collective_begin", std::nullopt, 6, 0.0);  // 5 not seen: the next one is
  d.onEvent(1, "collective_begin", std::nullopt, 5, 0.0);
  auto strikes = d.due(0, {0, 1, 2});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].rank, 2);
  EXPECT_EQ(strikes[0].point, "collective #5");
  d.onEvent(0, "collective_begin", std::nullopt, 5, 0.0);
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

// since = "first_step": the clock starts at the rank's first step, however
// late it comes (a slow start, a loaded machine), so the strike is mid-training.
TEST(FaultDelivery, ATimeSinceTheFirstStepWaitsForThatRanksFirstStep) {
  FaultDelivery d({fault("sigkill:rank=0:after=3:since=first_step:by=supervisor")});
  EXPECT_FALSE(d.nextTime());                  // no clock runs yet
  EXPECT_TRUE(d.due(10.0, {0, 1}).empty());    // 10 s after start: still before any step
  EXPECT_FALSE(d.onEvent(1, "step_begin", 1, std::nullopt, 11.0));  // another rank's step starts no clock
  EXPECT_FALSE(d.nextTime());
  EXPECT_TRUE(d.onEvent(0, "step_begin", 1, std::nullopt, 12.0));   // rank 0's first step: its clock starts
  EXPECT_FALSE(d.onEvent(0, "step_begin", 2, std::nullopt, 12.5));  // a later step does not restart it
  EXPECT_EQ(d.nextTime(), 15.0);
  EXPECT_TRUE(d.due(14.9, {0, 1}).empty());
  auto strikes = d.due(15.0, {0, 1});
  ASSERT_EQ(strikes.size(), 1u);
  EXPECT_EQ(strikes[0].rank, 0);
  EXPECT_EQ(strikes[0].step, 2);
  EXPECT_EQ(strikes[0].point, "3 s after the first step");
  EXPECT_EQ(strikes[0].rule, "sigkill:rank=0:after=3:since=first_step");
  EXPECT_FALSE(d.nextTime());
  EXPECT_TRUE(d.due(30.0, {0, 1}).empty());
}

TEST(FaultDelivery, SinceNeedsAfterAndIsTheSupervisorsClock) {
  EXPECT_FALSE(probe::parseFaultSpec("sigkill:rank=0:since=first_step"));
  EXPECT_FALSE(probe::parseFaultSpec("sigkill:rank=0:after=3:since=later"));
  const auto f = probe::parseFaultSpec("sigkill:rank=0:after=3:since=first_step");
  ASSERT_TRUE(f);
  EXPECT_TRUE(probe::checkLayer(*f, probe::FaultLayer::kSupervisor));
  const auto shim = probe::checkLayer(*f, probe::FaultLayer::kShim);
  ASSERT_FALSE(shim);
  EXPECT_NE(shim.error().find("expected by = \"supervisor\""), std::string::npos) << shim.error();
  // Without `by`, a Python trainer's fault goes to the one layer that can strike it.
  EXPECT_EQ(probe::chooseLayer(*f, probe::FaultLayer::kShim), probe::FaultLayer::kSupervisor);
}

// A node fault as the scenario parser gives it: the node's ranks filled in.
probe::FaultSpec nodeFault(const std::string& text, std::vector<int> ranks) {
  probe::FaultSpec f = fault(text);
  f.ranks = std::move(ranks);
  return f;
}

TEST(FaultDelivery, ANodeFaultStrikesTheNodeOnceAtTheFirstOfItsRanks) {
  FaultDelivery d({nodeFault("node_loss:node=n2:step=3", {2, 3})});
  d.onEvent(0, "step_begin", 3, std::nullopt, 0.0);  // n1's rank: not the node's
  EXPECT_TRUE(d.due(0, {0, 1, 2, 3}).empty());
  d.onEvent(3, "step_begin", 3, std::nullopt, 0.0);
  d.onEvent(2, "step_begin", 3, std::nullopt, 0.0);  // the node is struck already
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
  d.onEvent(2, "step_begin", 1, std::nullopt, 0.0);
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
  d.onEvent(1, "step_end", 1, std::nullopt, 0.0);
  d.onEvent(1, "collective_begin", std::nullopt, 0, 0.0);
  d.onEvent(0, "step_begin", 1, std::nullopt, 0.0);
  EXPECT_TRUE(d.due(10, {0, 1}).empty());
  EXPECT_FALSE(d.nextTime());
}

}  // namespace
}  // namespace faultline::supervise
