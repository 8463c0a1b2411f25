// A user's conformance tests over their own trainer, with faultline's GoogleTest helper.
#include <faultline/gtest.h>

TEST(TinyTrainer, ARankThatThrowsIsTheRootCause) {
  faultline::testing::Options o;
  o.nproc = 2;
  o.hang_timeout_s = 10;
  o.deadline_s = 60;
  const auto run = faultline::testing::exec({TRAINER, "1"}, o);
  EXPECT_TRUE(run.failed());
  EXPECT_EQ(run.at("root_cause.kind"), "cpp_exception");
  EXPECT_EQ(run.at("root_cause.rank"), 1);
  EXPECT_EQ(run.at("ranks[1].role"), "root_cause");
  EXPECT_EQ(run.at("teardown.clean"), true);
  EXPECT_TRUE(run.at("no.such.field").is_null());
}

TEST(TinyTrainer, ACleanRunIsClean) {
  faultline::testing::Options o;
  o.nproc = 2;
  const auto run = faultline::testing::exec({TRAINER}, o);
  EXPECT_FALSE(run.failed()) << run.output();
  EXPECT_EQ(run.at("verdict"), "clean");
  EXPECT_GT(run.at("spans").size(), 0u);
}

TEST(TinyTrainer, ScenarioPasses) { FAULTLINE_EXPECT_SCENARIO_PASSES(SCENARIO); }

TEST(TinyTrainer, AScenarioThatDoesNotHoldSaysWhich) {
  const auto j = faultline::testing::judgeScenario(WRONG_SCENARIO);
  EXPECT_FALSE(j.passed);
  EXPECT_FALSE(j.unsupported);
  EXPECT_NE(j.message.find("verdict fail"), std::string::npos) << j.message;
  EXPECT_NE(j.message.find("root_cause.rank: expected 0, got 1"), std::string::npos) << j.message;
}

TEST(TinyTrainer, OnAnotherStackItRunsOrSaysWhyNot) {
  const auto j = faultline::testing::judgeScenario(SCENARIO, "torchrun");
  // A command trainer under torchrun needs torchrun on this machine: either
  // it ran (and passed) or it is unsupported with the reason; never silently failed.
  EXPECT_TRUE(j.passed || j.unsupported) << j.message;
}

TEST(TinyTrainer, BadInputIsAnError) {
  EXPECT_THROW(faultline::testing::runScenario("/nonexistent/scenario.toml"), faultline::testing::Error);
}
