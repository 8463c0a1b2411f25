// Stack plans for scenarios with system-call faults: FAULTLINE_INJECT reaches
// every process of the run, on every stack, and no trainer flag is invented.
#include "harness/launch/stack_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace faultline::launch {
namespace {

scenario::Scenario injectScenario(const std::string& trainer) {
  auto s = scenario::parseScenarioText(
      "name = \"x\"\n[stack]\nlauncher = \"builtin\"\nstacks = [\"builtin\", \"torchrun\"]\ntrainer = \"" + trainer +
          "\"\ncommand = [\"/usr/bin/python3\", \"train.py\"]\nworld_size = 2\n[fault]\n"
          "inject = \"write:ENOSPC:rank=1:after=1\"\n[expect]\n\"verdict\" = \"pass\"\n",
      "s.toml");
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return *s;
}

TEST(StackPlan, InjectIsInTheEnvironmentOfEveryStack) {
  for (const char* stack : {"builtin", "torchrun"}) {
    auto plan = planStack(injectScenario("command"), stack, Tools{}, "/out", 29500, "/scenarios");
    ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
    ASSERT_EQ(plan.launch.env.count("FAULTLINE_INJECT"), 1u) << stack;
    EXPECT_EQ(plan.launch.env.at("FAULTLINE_INJECT"), "write:ENOSPC:rank=1:after=1");
  }
}

TEST(StackPlan, InjectAloneGivesTheReferenceTrainerNoFaultFlags) {
  const auto s = injectScenario("reference");
  EXPECT_TRUE(faultArgs(s).empty());
  auto plan = planStack(s, "builtin", Tools{}, "/out", 29500, "/scenarios");
  EXPECT_EQ(std::count(plan.launch.command.begin(), plan.launch.command.end(), "--fault"), 0);
}

TEST(StackPlan, ApplyEnvReplacesAndAdds) {
  std::vector<std::string> env{"PATH=/bin", "FAULTLINE_INJECT=old", "FAULTLINE_INJECTED=keep"};
  applyEnv(env, {{"FAULTLINE_INJECT", "fsync:EIO"}, {"NEW", "1"}});
  std::sort(env.begin(), env.end());
  EXPECT_EQ(env, (std::vector<std::string>{"FAULTLINE_INJECT=fsync:EIO", "FAULTLINE_INJECTED=keep", "NEW=1", "PATH=/bin"}));
}

}  // namespace
}  // namespace faultline::launch
