// ProcessOutcome: wait statuses become readable values.
#include "harness/model/outcome.h"

#include <csignal>

#include <gtest/gtest.h>

namespace faultline {

TEST(ProcessOutcome, ExitedAndKilledReadWell) {
  EXPECT_EQ(ProcessOutcome::exited(3).str(), "exited 3");
  EXPECT_EQ(ProcessOutcome::killed(SIGSEGV, true).str(), "killed by SIGSEGV (core dumped)");
  EXPECT_EQ(ProcessOutcome::notStarted().str(), "not started");
  EXPECT_TRUE(ProcessOutcome::exited(0).success());
  EXPECT_FALSE(ProcessOutcome::killed(SIGKILL).success());
  EXPECT_EQ(ProcessOutcome::killed(SIGKILL).signal(), SIGKILL);
  EXPECT_EQ(ProcessOutcome::exited(1).signal(), std::nullopt);
}

TEST(ProcessOutcome, FromWaitStatus) {
  EXPECT_EQ(ProcessOutcome::fromWaitStatus(3 << 8), ProcessOutcome::exited(3));
  EXPECT_EQ(ProcessOutcome::fromWaitStatus(SIGTERM), ProcessOutcome::killed(SIGTERM));
}

TEST(SignalNames, RoundTrip) {
  EXPECT_EQ(signalName(SIGSEGV), "SIGSEGV");
  EXPECT_EQ(signalName(77), "SIG77");
  EXPECT_EQ(signalNumber("SIGTERM"), SIGTERM);
  EXPECT_EQ(signalNumber("KILL"), SIGKILL);
  EXPECT_EQ(signalNumber("SIGNOPE"), std::nullopt);
}

}  // namespace faultline
