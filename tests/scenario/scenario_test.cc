// Scenario parsing: the contract's example parses; every error class names file:line:col and what was expected.
#include "harness/model/report.h"
#include "harness/scenario/scenario.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace faultline::scenario {
namespace {

const char* kExample = R"(name = "hung-collective"
description = "Rank 1 never enters the step-3 gradient all-reduce."
tags = ["core", "hang"]

[stack]
launcher = "builtin"
trainer = "reference"
world_size = 4

[fault]
kind = "hung_collective"
rank = 1
step = 3

[limits]
hang_timeout_s = 5
deadline_s = 60
grace_s = 3

[expect]
"root_cause.kind" = "hung_collective"
"root_cause.rank" = 1
"teardown.clean" = true
"teardown.duration_ms" = { max = 3000 }
"root_cause.summary" = "~rank 1"
"findings.kind" = { contains = "straggler" }
"root_cause.symbol" = { null = true }
)";

std::string errorOf(const std::string& text) {
  auto s = parseScenarioText(text, "s.toml");
  EXPECT_FALSE(s.has_value());
  return s ? "" : s.error().message;
}

TEST(Scenario, ParsesContractExample) {
  auto s = parseScenarioText(kExample, "scenarios/hung.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->name, "hung-collective");
  EXPECT_TRUE(s->hasTag("hang"));
  EXPECT_EQ(s->stack.world_size, 4);
  ASSERT_TRUE(s->fault.has_value());
  EXPECT_EQ(s->fault->text(), "hung_collective:rank=1:step=3");
  EXPECT_DOUBLE_EQ(s->limits.hang_timeout_s, 5);
  ASSERT_EQ(s->expect.size(), 7u);
  EXPECT_EQ(s->expect[6].op, MatchOp::kNull);
  EXPECT_EQ(s->expect[0].path, "root_cause.kind");
  EXPECT_EQ(s->expect[0].pos.str(), "scenarios/hung.toml:21:1");
  EXPECT_EQ(s->expect[3].op, MatchOp::kMax);
  EXPECT_EQ(s->expect[3].asWritten(), nlohmann::json({{"max", 3000}}));
  EXPECT_EQ(s->expect[4].op, MatchOp::kRegex);
  EXPECT_EQ(s->expect[4].value, "rank 1");
  EXPECT_EQ(s->expect[5].op, MatchOp::kContains);
}

TEST(Scenario, FaultWithoutRankMeansEveryRank) {
  auto s = parseScenarioText("name = \"x\"\n[fault]\nkind = \"unsharded_data\"\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->fault->text(), "unsharded_data:rank=all:step=1");
}

// Issue 16: the same fault on several ranks, so no scenario is scored on one rank choice.
TEST(Scenario, FaultOnSeveralRanks) {
  auto s = parseScenarioText(
      "name = \"x\"\n[stack]\nworld_size = 3\n[fault]\nkind = \"segfault\"\nrank = [2, 0]\nstep = 3\n"
      "[expect]\n\"root_cause.rank\" = { in = [0, 2] }\n",
      "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->fault->ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(s->fault->text(), "segfault:rank=0,2:step=3");
  EXPECT_EQ(s->fault->rankList(), "0,2");
  auto one = parseScenarioText("name = \"x\"\n[fault]\nkind = \"segfault\"\nrank = 1\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  ASSERT_TRUE(one.has_value()) << one.error().message;
  EXPECT_EQ(one->fault->rankList(), "1");
  const std::string head = "name = \"x\"\n[stack]\nworld_size = 3\n[fault]\nkind = \"segfault\"\n";
  EXPECT_EQ(errorOf(head + "rank = [0, 3]\n"), "s.toml:6:12: fault.rank: rank 3 is impossible with world_size 3, expected 0..2");
  EXPECT_EQ(errorOf(head + "rank = [1, 1]\n"), "s.toml:6:12: fault.rank: rank 1 is listed twice, expected distinct ranks such as [0, 2]");
  EXPECT_EQ(errorOf(head + "rank = []\n"),
            "s.toml:6:8: fault.rank: an empty array, expected a rank or ranks such as [0, 2] (leave rank out for every rank)");
  EXPECT_EQ(errorOf(head + "rank = [0, \"1\"]\n"),
            "s.toml:6:12: fault.rank: expected a rank or an array of ranks such as [0, 2], got a string");
  EXPECT_EQ(errorOf(head + "rank = \"1\"\n"), "s.toml:6:8: fault.rank: expected a rank or an array of ranks such as [0, 2], got a string");
}

// fault.since = "first_step": after_s from the rank's first step, the supervisor's clock.
TEST(Scenario, ATimeSinceTheFirstStepIsTheSupervisors) {
  const std::string head = "name = \"x\"\n[stack]\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\n"
                           "[fault]\nkind = \"sigkill\"\nrank = 0\n";
  auto s = parseScenarioText(head + "after_s = 3\nsince = \"first_step\"\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_TRUE(s->fault->since_first_step);
  EXPECT_EQ(s->fault->by, "supervisor");  // the shim cannot count from a first step: the supervisor strikes it
  EXPECT_EQ(s->fault->text(), "sigkill:rank=0:after=3:since=first_step");
  EXPECT_EQ(s->fault->point(), "3 s after the first step");
  EXPECT_EQ(errorOf(head + "since = \"first_step\"\n[expect]\n\"verdict\" = \"pass\"\n"),
            "s.toml:8:9: fault.since: says where after_s counts from, expected after_s = T with it");
  EXPECT_EQ(errorOf(head + "after_s = 3\nsince = \"later\"\n[expect]\n\"verdict\" = \"pass\"\n"),
            "s.toml:9:9: fault.since: unknown 'later', expected start (the default) or first_step");
  const auto shim = errorOf(head + "after_s = 3\nsince = \"first_step\"\nby = \"trainer\"\n[expect]\n\"verdict\" = \"pass\"\n");
  EXPECT_NE(shim.find("since = \"first_step\" is the supervisor's"), std::string::npos) << shim;
}

TEST(Scenario, InjectAloneIsAFault) {
  auto s = parseScenarioText(
      "name = \"x\"\n[stack]\nworld_size = 2\n[fault]\ninject = \"write:ENOSPC:rank=1:after=100;fsync:EIO\"\n"
      "[expect]\n\"verdict\" = \"pass\"\n",
      "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  ASSERT_TRUE(s->fault);
  EXPECT_EQ(s->fault->inject, "write:ENOSPC:rank=1:after=100;fsync:EIO");
  EXPECT_FALSE(s->fault->scripted());
  auto both = parseScenarioText(
      "name = \"x\"\n[fault]\nkind = \"straggler\"\nrank = 1\ninject = \"connect:ECONNREFUSED:rank=0\"\n"
      "[expect]\n\"verdict\" = \"pass\"\n",
      "s.toml");
  ASSERT_TRUE(both.has_value()) << both.error().message;
  EXPECT_EQ(both->fault->kind, probe::FaultKind::kStraggler);
  EXPECT_EQ(both->fault->inject, "connect:ECONNREFUSED:rank=0");
}

TEST(ScenarioErrors, BadInjectSpecsPointIntoTheString) {
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\ninject = \"write:ENOSPACE\"\n"),
            "s.toml:3:17: fault.inject: unknown errno 'ENOSPACE', expected an errno name such as ENOSPC, EIO, EDQUOT, "
            "EROFS, EACCES, ECONNREFUSED, ECONNRESET, ETIMEDOUT (as in write:ENOSPC)");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\ninject = \"fsync:EIO;wrte:EIO\"\n"),
            "s.toml:3:21: fault.inject: unknown call 'wrte', expected one of: write, read, fsync, fdatasync, open, "
            "connect (as in write:ENOSPC)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld_size = 2\n[fault]\ninject = \"write:ENOSPC:rank=2\"\n"),
            "s.toml:5:10: fault.inject: rank 2 in 'write:ENOSPC:rank=2' is impossible with world_size 2, expected "
            "0..1 or all");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\ninject = \" \"\n").substr(0, 51),
            "s.toml:3:10: fault.inject: empty, expected CALL:ERR");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\ninject = 3\n"), "s.toml:3:10: fault.inject: expected a string, got an integer");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\ninject = \"fsync:EIO\"\nrank = 1\n").substr(0, 64),
            "s.toml:4:8: fault.rank: applies to fault.kind, which is not set;");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\nrank = 1\n"),
            "s.toml:2:1: [fault]: missing key 'kind' (or 'inject' for system-call faults)");
}

TEST(ScenarioErrors, SyntaxError) {
  EXPECT_EQ(errorOf("name = \"x\nfoo"),
            "s.toml:1:10: Error while parsing string: unescaped control characters other than TAB (U+0009) are explicitly prohibited");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack\n"), "s.toml:2:7: Error while parsing table header: expected ']', saw '\\n'");
}

TEST(Scenario, HangIdleIsReadAndZeroTurnsTheIdleRuleOff) {
  std::string text = kExample;
  text.replace(text.find("[limits]"), 8, "[limits]\nhang_idle_s = 2.5");
  auto s = parseScenarioText(text, "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->limits.hang_idle_s, 2.5);
  auto plain = parseScenarioText(kExample, "s.toml");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_EQ(plain->limits.hang_idle_s, 1.0) << "the CLI's default";
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\nhang_idle_s = -1\n"),
            "s.toml:3:15: limits.hang_idle_s: -1.0 is impossible, expected seconds >= 0 (0: the idle rule off)");
}

TEST(ScenarioErrors, UnknownKeys) {
  EXPECT_EQ(errorOf("name = \"x\"\ncolour = 1\n"),
            "s.toml:2:1: unknown key 'colour' in the scenario, expected one of: name, description, tags, stack, fault, limits, diagnose, expect, expect_on");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld = 2\n"),
            "s.toml:3:1: unknown key 'world' in [stack], expected one of: launcher, trainer, command, command_on, args, args_on, launcher_args, world_size, nodes, gpus, stacks, torch, instrument, tools, env, unsupported_on, max_restarts, rendezvous");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\nkind = \"segfault\"\nwhen = 3\n"),
            "s.toml:4:1: unknown key 'when' in [fault], expected one of: kind, rank, node, step, collective, op, nth, after_s, since, point, arg, by, inject, attempt");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\nhang = 3\n"),
            "s.toml:3:1: unknown key 'hang' in [limits], expected one of: hang_timeout_s, deadline_s, grace_s, hang_factor, hang_floor_s, hang_idle_s");
}

TEST(Scenario, AFrameworksStackHasItsOwnTrainerAndExpectations) {
  const std::string head =
      "name = \"x\"\n[stack]\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n"
      "stacks = [\"torchrun\", \"lightning\"]\n";
  auto s = parseScenarioText(head + "[stack.command_on]\nlightning = [\"python3\", \"lit.py\"]\n"
                                    "[expect]\n\"teardown.clean\" = true\n\"root_cause.rank\" = 1\n"
                                    "[expect_on.lightning]\n\"teardown.clean\" = false\n\"teardown.escalation\" = \"sigkill\"\n",
                             "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->stack.commandOn("lightning"), (std::vector<std::string>{"python3", "lit.py"}));
  EXPECT_EQ(s->stack.commandOn("torchrun"), (std::vector<std::string>{"python3", "plain.py"}));
  const auto plain = s->expectationsOn("torchrun");
  ASSERT_EQ(plain.size(), 2u);
  EXPECT_EQ(plain[0].value, true);
  const auto lit = s->expectationsOn("lightning");
  ASSERT_EQ(lit.size(), 3u);
  EXPECT_EQ(lit[0].path, "root_cause.rank");
  EXPECT_EQ(lit[1].path, "teardown.clean");
  EXPECT_EQ(lit[1].value, false);
  EXPECT_EQ(lit[2].path, "teardown.escalation");

  EXPECT_EQ(errorOf(head + "[stack.command_on]\nlaunch = [\"python3\", \"l.py\"]\n[expect]\n\"a\" = 1\n"),
            "s.toml:7:10: stack.command_on.launch: launch is not in stack.stacks, so this command never runs");
  EXPECT_EQ(errorOf(head + "[stack.command_on]\nmpirun = [\"x\"]\n[expect]\n\"a\" = 1\n").substr(0, 66),
            "s.toml:7:10: stack.command_on.mpirun: unknown launcher 'mpirun', e");
  EXPECT_EQ(errorOf(head + "[stack.command_on]\nlightning = []\n[expect]\n\"a\" = 1\n"),
            "s.toml:7:13: stack.command_on.lightning: expected [\"program\", ...], got []");
  EXPECT_EQ(errorOf(head + "[expect]\n\"verdict\" = \"pass\"\n[expect_on.spawn]\n\"verdict\" = \"fail\"\n"),
            "s.toml:8:12: expect_on.spawn: spawn is not in stack.stacks, so these never apply");
}

// One row per fault: a framework's trainer takes its own arguments, and one
// stack (a torch series) may differ from its launcher's others.
TEST(Scenario, ArgumentsPerLauncherAndExpectationsPerStack) {
  const std::string head =
      "name = \"x\"\n[stack]\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\nargs = [\"--fault-rank\", \"2\"]\n"
      "stacks = [\"torchrun\", \"torchrun-multinode\", \"lightning\"]\n";
  auto s = parseScenarioText(head + "[stack.command_on]\nlightning = [\"python3\", \"lit.py\"]\n"
                                    "[stack.args_on]\nlightning = [\"--bug\", \"name_error\"]\ntorchrun = []\n"
                                    "[expect]\n\"teardown.clean\" = true\n\"root_cause.rank\" = 2\n"
                                    "[expect_on.torchrun-multinode]\n\"root_cause.rank\" = 3\n"
                                    "[expect_on.\"torchrun-multinode@1.13\"]\n\"teardown.clean\" = false\n",
                             "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->stack.argsOn("lightning"), (std::vector<std::string>{"--bug", "name_error"}));
  EXPECT_EQ(s->stack.argsOn("torchrun"), std::vector<std::string>{});
  EXPECT_EQ(s->stack.argsOn("torchrun-multinode"), (std::vector<std::string>{"--fault-rank", "2"}));
  const auto at = [&](const std::string& stack) {
    std::map<std::string, nlohmann::json> by_path;
    for (const auto& e : s->expectationsOn(stack)) by_path[e.path] = e.value;
    return by_path;
  };
  EXPECT_EQ(at("torchrun@2.13")["root_cause.rank"], 2);
  EXPECT_EQ(at("torchrun-multinode@2.13")["root_cause.rank"], 3);
  EXPECT_EQ(at("torchrun-multinode@2.13")["teardown.clean"], true);
  EXPECT_EQ(at("torchrun-multinode@1.13")["root_cause.rank"], 3);  // the launcher's, then the stack's
  EXPECT_EQ(at("torchrun-multinode@1.13")["teardown.clean"], false);
  EXPECT_EQ(s->expectationsOn("torchrun-multinode@1.13").size(), 2u);

  EXPECT_EQ(errorOf(head + "[stack.args_on]\nspawn = []\n[expect]\n\"a\" = 1\n"),
            "s.toml:8:9: stack.args_on.spawn: spawn is not in stack.stacks, so this never applies");
  EXPECT_EQ(errorOf(head + "[expect]\n\"verdict\" = \"pass\"\n[expect_on.\"torchrun@x\"]\n\"verdict\" = \"fail\"\n"),
            "s.toml:9:12: expect_on.torchrun@x: 'torchrun@x': 'x' is not a torch version MAJOR.MINOR (torchrun@2.13)");
  EXPECT_EQ(errorOf(head + "[expect]\n\"verdict\" = \"pass\"\n[expect_on.\"spawn@2.13\"]\n\"verdict\" = \"fail\"\n"),
            "s.toml:9:12: expect_on.spawn@2.13: spawn is not in stack.stacks, so these never apply");
}

TEST(Scenario, ToolsAreAlternativesOfTheKnownStackDumpers) {
  auto s = parseScenarioText(
      "name = \"x\"\n[stack]\ntools = [\"eu-stack|gdb\", \"py-spy\"]\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->stack.tools, (std::vector<std::vector<std::string>>{{"eu-stack", "gdb"}, {"py-spy"}}));
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntools = [\"eu-stack|lldb\"]\n"),
            "s.toml:3:9: stack.tools: unknown tool 'lldb' in \"eu-stack|lldb\", expected eu-stack, gdb or py-spy "
            "(alternatives joined by |)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntools = [\"eu-stack|\"]\n"),
            "s.toml:3:9: stack.tools: unknown tool '' in \"eu-stack|\", expected eu-stack, gdb or py-spy "
            "(alternatives joined by |)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntools = [\"\"]\n"),
            "s.toml:3:9: stack.tools: unknown tool '' in \"\", expected eu-stack, gdb or py-spy (alternatives joined by |)");
}

TEST(Scenario, InstrumentAndAdaptiveHangKeys) {
  auto s = parseScenarioText("name = \"x\"\n[stack]\ninstrument = false\n[limits]\nhang_factor = 4\nhang_floor_s = 0.25\n"
                             "[expect]\n\"root_cause\" = { null = true }\n",
                             "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->stack.instrument);
  EXPECT_DOUBLE_EQ(s->limits.hang_factor, 4);
  EXPECT_DOUBLE_EQ(s->limits.hang_floor_s, 0.25);
  auto d = parseScenarioText("name = \"x\"\n[expect]\n\"root_cause\" = { null = true }\n", "s.toml");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->stack.instrument);
  EXPECT_DOUBLE_EQ(d->limits.hang_factor, 10);
  EXPECT_DOUBLE_EQ(d->limits.hang_floor_s, 0.5);
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ninstrument = 0\n"), "s.toml:3:14: stack.instrument: expected a boolean, got an integer");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\nhang_factor = -1\n"),
            "s.toml:3:15: limits.hang_factor: -1.0 is impossible, expected a number >= 0 (0: adaptive detection off)");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\nhang_floor_s = 0\n"),
            "s.toml:3:16: limits.hang_floor_s: 0.0 is impossible, expected a positive number of seconds");
}

// Without instruments, only the supervisor (or a trainer's own code) can strike.
TEST(ScenarioErrors, NoShimOrInterposerFaultWithoutInstruments) {
  const std::string head = "name = \"x\"\n[stack]\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\n"
                           "instrument = false\n[fault]\n";
  EXPECT_EQ(errorOf(head + "kind = \"exception\"\nstep = 2\n"),
            "s.toml:7:8: [fault]: the Python shim strikes 'exception' here, and stack.instrument = false runs without "
            "it, expected by = \"supervisor\" (a signal or a freeze) or a trainer that strikes its own faults");
  EXPECT_EQ(errorOf(head + "inject = \"write:ENOSPC\"\n"),
            "s.toml:7:10: fault.inject: the LD_PRELOAD interposer strikes system-call faults, and stack.instrument = "
            "false runs without it, expected no inject or stack.instrument = true");
  auto ok = parseScenarioText(head + "kind = \"sigkill\"\nstep = 2\nby = \"supervisor\"\n[expect]\n\"root_cause.kind\" = \"signal\"\n",
                              "s.toml");
  EXPECT_TRUE(ok) << ok.error().message;
}

TEST(ScenarioErrors, WrongTypes) {
  EXPECT_EQ(errorOf("name = 3\n"), "s.toml:1:8: scenario.name: expected a string, got an integer");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld_size = \"4\"\n"),
            "s.toml:3:14: stack.world_size: expected an integer, got a string");
  EXPECT_EQ(errorOf("name = \"x\"\ntags = [\"a\", 2]\n"), "s.toml:2:14: scenario.tags: expected an array of strings, found an integer");
  EXPECT_EQ(errorOf("name = \"x\"\nstack = 3\n"), "s.toml:2:9: [stack]: expected a table, got an integer");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\ngrace_s = true\n"), "s.toml:3:11: limits.grace_s: expected a number, got a boolean");
}

TEST(ScenarioErrors, TorchVersionsAreCheckedWhereWritten) {
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntorch = \"~=2.1\"\n"),
            "s.toml:3:9: stack.torch: '~=2.1': unknown comparison '~=', expected ==, !=, <, <=, > or >=");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntorch = \">=2, <two\"\n"),
            "s.toml:3:9: stack.torch: '<two': expected a version such as 2.13 after '<'");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nstacks = [\"torchrun@2\"]\n"),
            "s.toml:3:10: stack.stacks: 'torchrun@2': '2' is not a torch version MAJOR.MINOR (torchrun@2.13)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nstacks = [\"external@2.13\"]\n"),
            "s.toml:3:10: stack.stacks: 'external@2.13': external has no torch version, expected 'external' alone");
  auto ok = parseScenarioText("name = \"x\"\n[stack]\nstacks = [\"builtin\", \"spawn@2.13\"]\ntorch = \">=1.13,<2.14\"\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->stack.torch, ">=1.13,<2.14");
  ASSERT_EQ(ok->stack.torch_bounds.size(), 2u);
  EXPECT_EQ(ok->stack.torch_bounds[1].op, "<");
}

TEST(ScenarioErrors, ImpossibleValues) {
  // An attempt the launcher never makes: max_restarts 1 gives attempts 0 and 1.
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nmax_restarts = 1\n[fault]\nkind = \"exception\"\nattempt = 2\n"),
            "s.toml:6:11: fault.attempt: 2 is impossible with stack.max_restarts = 1, expected 0..1 (0: the first attempt)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nrendezvous = \"etcd\"\n"),
            "s.toml:3:14: stack.rendezvous: 'etcd' is not a rendezvous backend faultline gives torchrun, expected static or c10d");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nmax_restarts = -1\n"),
            "s.toml:3:16: stack.max_restarts: -1 is out of range, expected 0..100 (the restarts the launcher may make)");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld_size = 2\n[fault]\nkind = \"segfault\"\nrank = 2\n"),
            "s.toml:6:8: fault.rank: rank 2 is impossible with world_size 2, expected 0..1");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\nkind = \"segfault\"\nstep = 0\n"),
            "s.toml:4:8: fault.step: 0 is impossible, expected a step >= 1");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\nhang_timeout_s = -1\n"),
            "s.toml:3:18: limits.hang_timeout_s: -1.0 is impossible, expected a positive number of seconds");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld_size = 0\n"), "s.toml:3:14: stack.world_size: 0 is out of range, expected 1..4096");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nlauncher = \"mpirun\"\n"),
            "s.toml:3:12: stack.launcher: unknown launcher 'mpirun', expected builtin, torchrun, torchrun-multinode, launch, spawn, slurm, lightning, accelerate, deepspeed, ray or external");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntrainer = \"command\"\n"),
            "s.toml:2:1: [stack]: trainer = \"command\" needs command = [\"program\", ...]");
  EXPECT_EQ(errorOf("name = \"x\"\n[fault]\nkind = \"hung_collective\"\narg = \"nap\"\n"),
            "s.toml:2:1: [fault]: bad --fault-arg 'nap' for hung_collective, expected one of: sleep, skip");
}

// Issue 16: a scenario no stack can ever run passed quietly as `unsupported`
// (exit 0); by construction it is bad input, whatever is installed.
TEST(ScenarioErrors, NoStackCanEverRunIt) {
  const std::string expect = "[expect]\n\"verdict\" = \"pass\"\n";
  const std::string tail = "), expected a stack that can: trainer = \"command\" for external, a Python trainer "
                           "for spawn and the frameworks, torch bounds that admit a version";
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nlauncher = \"external\"\ncommand = [\"torchrun\"]\n" + expect),
            "s.toml:3:12: stack.launcher: no stack can run this scenario (external runs stack.command itself, and the "
            "reference trainer needs a launcher" + tail);
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nstacks = [\"spawn\", \"lightning@2.6\"]\ntrainer = \"command\"\n"
                    "command = [\"./train\"]\n" + expect),
            "s.toml:3:10: stack.stacks: no stack can run this scenario (spawn runs Python trainers only; lightning@2.6 "
            "runs Python trainers only" + tail);
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\ntorch = \">=2.0,<2.0\"\n" + expect),
            "s.toml:3:9: stack.torch: no stack can run this scenario (torch >=2.0,<2.0 admits no version" + tail);
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nstacks = [\"torchrun@1.13\"]\ntorch = \">=2\"\n" + expect),
            "s.toml:4:9: stack.torch: no stack can run this scenario (torchrun@1.13 runs torch 1.13, outside torch >=2" + tail);
  // One stack that can run it is enough; the others stay `unsupported` when picked.
  for (const char* ok : {
           "[stack]\nlauncher = \"external\"\ncommand = [\"torchrun\"]\nstacks = [\"external\", \"builtin\"]\n",
           "[stack]\nlauncher = \"external\"\ntrainer = \"command\"\ncommand = [\"./launch.sh\"]\n",
           "[stack]\nlauncher = \"launch\"\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\n",
           "[stack]\nstacks = [\"torchrun@1.13\", \"torchrun\"]\ntorch = \">=2\"\n",
           "[stack]\ntorch = \">=1.13.1,<1.14\"\n",
           "[stack]\ntorch = \"!=1.13\"\n",
           "[stack]\nstacks = [\"builtin@1.13\"]\ntorch = \"1.13\"\n",
           "[stack]\ntrainer = \"command\"\ncommand = [\"/bin/true\"]\ntorch = \"<1,>2\"\n",  // no torch needed
       }) {
    auto s = parseScenarioText("name = \"x\"\n" + std::string(ok) + expect, "s.toml");
    EXPECT_TRUE(s.has_value()) << ok << ": " << s.error().message;
  }
}

// Caught by tests/fuzz/scenario_fuzz (range and round-trip checks): TOML's inf and nan passed as limits, and
// a date/time in [expect] became an expectation of null.
TEST(ScenarioErrors, NonFiniteLimitsAndDateTimeExpectations) {
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\ndeadline_s = inf\n"),
            "s.toml:3:14: limits.deadline_s: inf is impossible, expected a positive number of seconds");
  EXPECT_EQ(errorOf("name = \"x\"\n[limits]\ngrace_s = nan\n"),
            "s.toml:3:11: limits.grace_s: nan is impossible, expected a positive number of seconds");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"verdict\" = 1979-05-27\n"),
            "s.toml:3:13: [expect] verdict: a date/time is no report value, expected a string, number, boolean or array");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"findings.kind\" = { contains = [1, 07:32:00] }\n"),
            "s.toml:3:36: [expect] findings.kind: a date/time is no report value, expected a string, number, boolean or array");
}

TEST(ScenarioErrors, UnknownFaultKind) {
  auto e = errorOf("name = \"x\"\n[fault]\nkind = \"meteor\"\n");
  EXPECT_EQ(e.substr(0, 73), "s.toml:3:8: fault.kind: unknown fault kind 'meteor', expected one of: und");
}

TEST(ScenarioErrors, ExpectationErrors) {
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.colour\" = 1\n"),
            "s.toml:3:1: [expect]: unknown report path 'root_cause.colour', expected a field of report.json such as root_cause.kind, ranks[1].role, findings.kind or teardown.duration_ms");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"teardown.duration_ms\" = { max = \"fast\" }\n"),
            "s.toml:3:34: [expect] teardown.duration_ms: { max = ... } expects a number, got a string");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"teardown.duration_ms\" = { under = 3 }\n"),
            "s.toml:3:28: [expect] teardown.duration_ms: unknown matcher 'under', expected max, min, contains, in or null");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.message\" = \"~(unclosed\"\n").substr(0, 76),
            "s.toml:3:24: [expect] root_cause.message: bad regular expression '(unclosed'");
  // Numbers std::regex would overflow on (scenario_fuzz found the back-reference
  // one) or turn into a huge automaton.
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.message\" = '~a\\66666666666666666666'\n"),
            "s.toml:3:24: [expect] root_cause.message: bad regular expression 'a\\66666666666666666666': back-reference "
            "\\666666666666 is larger than 99");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.message\" = \"~x{2,50000}\"\n"),
            "s.toml:3:24: [expect] root_cause.message: bad regular expression 'x{2,50000}': repetition count in "
            "'{2,50000' is larger than 1000");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.message\" = \"~x{99999999999999999999}\"\n").substr(0, 60),
            "s.toml:3:24: [expect] root_cause.message: bad regular expres");
  for (const char* fine : {"~x{2,5}y", "~^rank \\\\d+ (a|b)\\\\1$", "~[{]12345678[}]", "~x{1000}"}) {
    auto s = parseScenarioText(std::string("name = \"x\"\n[expect]\n\"root_cause.message\" = \"") + fine + "\"\n",
                               "s.toml");
    EXPECT_TRUE(s.has_value()) << fine << ": " << (s ? "" : s.error().message);
  }
  EXPECT_EQ(errorOf("name = \"x\"\n"), "s.toml:1:1: no [expect] entries: a scenario must say what the report should show");
}

TEST(ReportPaths, KnownAndUnknown) {
  for (const char* ok : {"root_cause.kind", "ranks[3].role", "ranks.role", "findings.kind", "findings.ranks",
                         "teardown.survivors[0].pid", "root_cause.location.line", "verdict", "root_cause.layers.text"}) {
    EXPECT_TRUE(isReportPath(ok)) << ok;
  }
  for (const char* bad : {"", "root_cause.colour", "ranks[x].role", "verdict.kind", "ranks[1", "teardown.clean[0]"}) {
    EXPECT_FALSE(isReportPath(bad)) << bad;
  }
}

// One field table: every key report.json is written with (reportKeys) is a
// path an expectation may name, but the expectations themselves.
TEST(ReportPaths, EveryKeyOfTheReportIsAPath) {
  for (const std::string& key : reportKeys()) {
    if (key == "expectations") continue;  // a scenario's expectations cannot be about themselves
    EXPECT_FALSE(reportPathProblem(key)) << key;
  }
  EXPECT_FALSE(reportPathProblem("spans.kind"));
  EXPECT_FALSE(reportPathProblem("unsupported_reason"));
}

TEST(ReportPaths, WhatTheLauncherBlamedIsAPath) {
  // Regression: on main these were rejected when the scenario was read.
  EXPECT_TRUE(isReportPath("launcher.blamed_rank"));
  EXPECT_TRUE(isReportPath("launcher.blamed_correctly"));
  EXPECT_FALSE(isReportPath("launcher.blamed"));
}

// Issue 16: an expectation names the finding it checks.
TEST(ReportPaths, FindingsOfOneKind) {
  for (const char* ok : {"findings[seed_mismatch].ranks", "findings[straggler].severity", "findings[no_pg_destroy]",
                         "findings[concurrent_writes].summary"}) {
    EXPECT_TRUE(isReportPath(ok)) << ok;
  }
  for (const char* bad : {"ranks[root_cause].role", "findings[].ranks", "findings[seed_mismatch].colour",
                          "findings[hung_collective].ranks", "root_cause[signal]"}) {
    EXPECT_FALSE(isReportPath(bad)) << bad;
  }
  auto s = parseScenarioText("name = \"x\"\n[expect]\n\"findings[seed_mismatch].ranks\" = [1]\n", "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->expect[0].path, "findings[seed_mismatch].ranks");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"findings[seed].ranks\" = [1]\n"),
            "s.toml:3:1: [expect]: unknown finding kind 'seed' in 'findings[seed].ranks', expected "
            "findings[KIND].FIELD (findings[seed_mismatch].ranks) with KIND one of: seed_mismatch, unsharded_data, "
            "unsynced_metrics, concurrent_writes, straggler, no_pg_destroy, diverged_params");
}

TEST(ScenarioErrors, InMatcherNeedsValues) {
  auto s = parseScenarioText("name = \"x\"\n[expect]\n\"root_cause.rank\" = { in = [0, 2] }\n", "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->expect[0].op, MatchOp::kIn);
  EXPECT_EQ(s->expect[0].asWritten(), nlohmann::json({{"in", {0, 2}}}));
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.rank\" = { in = 2 }\n"),
            "s.toml:3:28: [expect] root_cause.rank: { in = ... } expects a non-empty array of values, such as [0, 2], got an integer");
  EXPECT_EQ(errorOf("name = \"x\"\n[expect]\n\"root_cause.rank\" = { in = [] }\n"),
            "s.toml:3:28: [expect] root_cause.rank: { in = ... } expects a non-empty array of values, such as [0, 2], got an empty array");
}

// What the launcher did is assertable: why the supervisor ended the run, and
// who tore the job down (issue #16).
// [diagnose] library_paths (issue 18, docs/DIAGNOSIS.md section 8) and the
// paths and matchers the diagnosis scenarios use.
TEST(ScenarioDiagnose, LibraryPathsAndTheirErrors) {
  auto s = parseScenarioText(
      "name = \"x\"\n[diagnose]\nlibrary_paths = [\"vendor\", \"/opt/lib\"]\n[expect]\n"
      "\"root_cause.native_location.function\" = \"meta\"\n"
      "\"root_cause.layers.text\" = { contains = \"~^RuntimeError\" }\n",
      "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->library_paths, (std::vector<std::string>{"vendor", "/opt/lib"}));
  EXPECT_EQ(errorOf("name = \"x\"\n[diagnose]\nlibrary_paths = [\"\"]\n[expect]\n\"root_cause.kind\" = \"oom\"\n"),
            "s.toml:3:17: diagnose.library_paths: an empty path, expected a path prefix");
  EXPECT_EQ(errorOf("name = \"x\"\n[diagnose]\npaths = [\"a\"]\n[expect]\n\"root_cause.kind\" = \"oom\"\n"),
            "s.toml:3:1: unknown key 'paths' in [diagnose], expected one of: library_paths");
  EXPECT_NE(errorOf("name = \"x\"\n[expect]\n\"root_cause.layers.text\" = { contains = \"~(\" }\n")
                .find("s.toml:3:41: [expect] root_cause.layers.text: bad regular expression '('"),
            std::string::npos);
}

TEST(ReportPaths, TriggerAndTeardownByAreExpectationPaths) {
  for (const char* ok : {"trigger.kind", "trigger.rank", "trigger.detail", "teardown.by", "teardown.duration_ms"}) {
    EXPECT_TRUE(isReportPath(ok)) << ok;
  }
  EXPECT_FALSE(isReportPath("trigger.t_ns"));  // supervisor.json's, not report.json's
  auto s = parseScenarioText(
      "name = \"x\"\n[expect]\n\"trigger.kind\" = \"rank_failure\"\n\"trigger.rank\" = 1\n\"teardown.by\" = \"faultline\"\n",
      "s.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message;
  EXPECT_EQ(s->expect.size(), 3u);
}

}  // namespace
}  // namespace faultline::scenario

namespace faultline::scenario {
namespace {

TEST(Catalog, EveryScenarioParses) {
  const char* src = std::getenv("FAULTLINE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  auto all = loadScenarios({std::string(src) + "/scenarios"});
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_GE(all->size(), 20u);
  for (const auto& s : *all) {
    EXPECT_FALSE(s.description.empty()) << s.file;
    EXPECT_FALSE(s.tags.empty()) << s.file;
  }
}

}  // namespace
}  // namespace faultline::scenario

namespace faultline::scenario {
namespace {

std::string faultError(const std::string& stack, const std::string& fault) {
  auto s = parseScenarioText("name = \"x\"\n[stack]\n" + stack + "\n[fault]\n" + fault + "\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  return s ? "" : s.error().message;
}

const char* kCmd = "trainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\nworld_size = 3";

// Issue 17: a fault the chosen layer cannot strike, or a step that never comes, is bad input.
TEST(ScenarioFaults, WhatNoLayerCanStrikeIsAnErrorWhereItIsWritten) {
  EXPECT_EQ(faultError(kCmd, "kind = \"undefined_symbol\"\nrank = 1"),
            "s.toml:7:8: [fault]: undefined_symbol is not a fault the Python shim strikes (undefined_symbol is struck by: "
            "the reference trainer); and undefined_symbol is not a fault the supervisor strikes (undefined_symbol is "
            "struck by: the reference trainer); a Python trainer is struck by the Python shim or by the supervisor "
            "(by=supervisor)");
  // A native command trainer: its in-rank layer is the probe.
  const char* native = "trainer = \"command\"\ncommand = [\"./my-trainer\", \"--steps\", \"9\"]\nworld_size = 2";
  EXPECT_NE(faultError(native, "kind = \"exception\"\nrank = 1").find("exception is not a fault the probe strikes"),
            std::string::npos);
  EXPECT_EQ(faultError(native, "kind = \"hung_collective\"\nrank = 1\nop = \"allreduce\"\nnth = 2"), "");
  EXPECT_NE(faultError(kCmd, "kind = \"freeze\"\nop = \"allreduce\"").find("not by op"), std::string::npos);
  EXPECT_NE(faultError(kCmd, "kind = \"exception\"\nby = \"supervisor\"").find("not a fault the supervisor strikes"),
            std::string::npos);
  EXPECT_NE(faultError("", "kind = \"freeze\"\nrank = 1\nby = \"trainer\"").find("not a fault the reference trainer strikes"),
            std::string::npos);
  EXPECT_NE(faultError("", "kind = \"sigkill\"\ncollective = 3\nby = \"trainer\"").find("strikes at a step"), std::string::npos);
  EXPECT_EQ(faultError("", "kind = \"freeze\"\nrank = 1"), "");  // the supervisor freezes the reference trainer
  EXPECT_EQ(faultError("args = [\"--steps\", \"10\"]", "kind = \"sigkill\"\nstep = 11"),
            "s.toml:6:8: fault.step: 11 is past the run's last step (10, from --steps), expected a step in 1..10");
  EXPECT_NE(faultError(kCmd, "kind = \"sigkill\"\nstep = 2\ncollective = 3").find("one point"), std::string::npos);
  EXPECT_NE(faultError(kCmd, "kind = \"sigkill\"\nnth = 2").find("expected op"), std::string::npos);
}

TEST(ScenarioFaults, TheLayerIsChosenAndKept) {
  auto s = parseScenarioText(std::string("name = \"x\"\n[stack]\n") + kCmd +
                                 "\n[fault]\nkind = \"sigkill\"\nrank = 2\nop = \"allreduce\"\nnth = 3\n[expect]\n\"verdict\" = \"pass\"\n",
                             "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->fault->by, "trainer");  // the shim: the supervisor has no op points
  EXPECT_EQ(s->fault->text(), "sigkill:rank=2:op=allreduce:nth=3");
  auto f = parseScenarioText(std::string("name = \"x\"\n[stack]\n") + kCmd +
                                 "\n[fault]\nkind = \"freeze\"\nrank = 1\n[expect]\n\"verdict\" = \"pass\"\n",
                             "s.toml");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->fault->by, "supervisor");
}

// Multi-node: stack.nodes and the node faults (docs/MULTINODE.md).
const std::string kTwoNodes =
    "name = \"x\"\n[stack]\nlauncher = \"torchrun-multinode\"\ntrainer = \"command\"\n"
    "command = [\"python3\", \"t.py\"]\nworld_size = 4\nnodes = 2\n";

TEST(ScenarioParse, ANodeFaultStrikesTheRanksOfItsNode) {
  auto s = parseScenarioText(kTwoNodes + "[fault]\nkind = \"partition\"\nnode = \"n2\"\nstep = 6\narg = 3\n[expect]\n\"verdict\" = \"fail\"\n", "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->stack.nodes, 2);
  EXPECT_EQ(s->fault->node, "n2");
  EXPECT_EQ(s->fault->ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(s->fault->by, "supervisor");
  EXPECT_EQ(s->fault->text(), "partition:node=n2:step=6:arg=3");
  auto r = parseScenarioText(kTwoNodes + "[fault]\nkind = \"agent_kill\"\nnode = \"n2\"\npoint = \"rendezvous\"\n[expect]\n\"verdict\" = \"fail\"\n", "s.toml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->fault->rendezvous);
  EXPECT_EQ(r->fault->point(), "rendezvous");
}

TEST(ScenarioParse, NodeFaultsThatCannotBeAreErrorsAtTheirKey) {
  const std::string expect = "[expect]\n\"verdict\" = \"fail\"\n";
  EXPECT_EQ(errorOf(kTwoNodes + "[fault]\nkind = \"node_loss\"\nnode = \"n3\"\n" + expect),
            "s.toml:10:8: fault.node: no node 'n3' in a run of 2 node(s), expected n1..n2");
  EXPECT_EQ(errorOf(kTwoNodes + "[fault]\nkind = \"node_loss\"\nnode = \"n2\"\nrank = 2\n" + expect),
            "s.toml:11:8: fault.rank: a node fault strikes every rank of fault.node, expected rank or node, not both");
  EXPECT_NE(errorOf(kTwoNodes + "[fault]\nkind = \"node_loss\"\n" + expect).find("node_loss strikes a node, expected node"),
            std::string::npos);
  EXPECT_NE(errorOf(kTwoNodes + "[fault]\nkind = \"sigkill\"\nnode = \"n2\"\n" + expect).find("sigkill strikes a rank, not a node"),
            std::string::npos);
  EXPECT_NE(errorOf(kTwoNodes + "[fault]\nkind = \"node_loss\"\nnode = \"n2\"\npoint = \"rendezvous\"\n" + expect)
                .find("point \"rendezvous\" is agent_kill's"),
            std::string::npos);
  EXPECT_NE(errorOf(kTwoNodes + "[fault]\nkind = \"slow_node\"\nnode = \"n2\"\narg = 100\n" + expect).find("1..99"),
            std::string::npos);
  EXPECT_NE(errorOf(kTwoNodes + "[fault]\nkind = \"slow_link\"\nnode = \"n2\"\narg = \"fast\"\n" + expect).find("200kbit"),
            std::string::npos);
  // A stack that cannot deliver it.
  const std::string builtin = "name = \"x\"\n[stack]\nlauncher = \"builtin\"\ntrainer = \"command\"\n"
                            "command = [\"python3\", \"t.py\"]\nworld_size = 4\nnodes = 2\n";
  EXPECT_EQ(errorOf(builtin + "[fault]\nkind = \"partition\"\nnode = \"n2\"\n" + expect),
            "s.toml:10:8: fault.node: stack builtin cannot deliver the node fault 'partition', expected stacks "
            "torchrun (every node fault), torchrun-multinode (every node fault), launch (every node fault), spawn "
            "(node_loss, partition, slow_node, slow_link), slurm (node_loss, slow_node), lightning (node_loss, "
            "partition, slow_node, slow_link), accelerate (every node fault) or deepspeed (every node fault)");
  // spawn across nodes has no agent to kill.
  const std::string spawn = "name = \"x\"\n[stack]\nlauncher = \"spawn\"\ntrainer = \"command\"\n"
                            "command = [\"python3\", \"t.py\"]\nworld_size = 4\nnodes = 2\n";
  EXPECT_NE(errorOf(spawn + "[fault]\nkind = \"agent_kill\"\nnode = \"n2\"\npoint = \"rendezvous\"\n" + expect)
                .find("stack spawn cannot deliver the node fault 'agent_kill'"),
            std::string::npos);
  // world_size not a multiple of nodes.
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nworld_size = 3\nnodes = 2\n" + expect),
            "s.toml:4:9: stack.nodes: world_size 3 is not a multiple of 2 nodes, expected world_size = nodes x ranks per node");
}

}  // namespace
}  // namespace faultline::scenario

namespace faultline::scenario {
namespace {

// Issue 31: the job's environment, and why a stack cannot run a scenario, in the scenario file.
TEST(ScenarioStack, EnvAndUnsupportedOnAreReadAndCheckedWithTheirLine) {
  auto s = parseScenarioText("name = \"x\"\n[stack]\nstacks = [\"builtin\", \"torchrun\"]\n[stack.env]\nNCCL_DEBUG = \"INFO\"\n"
                             "[stack.unsupported_on]\nspawn = \"no rank starts to fail\"\n[expect]\n\"verdict\" = \"pass\"\n",
                             "s.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->stack.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(s->stack.unsupported_on.at("spawn"), "no rank starts to fail");
  const std::string expect = "[expect]\n\"verdict\" = \"pass\"\n";
  EXPECT_EQ(errorOf("name = \"x\"\n[stack.env]\n\"A-B\" = \"1\"\n" + expect),
            "s.toml:3:9: stack.env: 'A-B' is no variable name, expected letters, digits and _");
  EXPECT_EQ(errorOf("name = \"x\"\n[stack.unsupported_on]\nmpirun = \"why\"\n" + expect).rfind(
                "s.toml:3:10: stack.unsupported_on.mpirun: unknown launcher 'mpirun', expected ", 0),
            0u);
  EXPECT_EQ(errorOf("name = \"x\"\n[stack.unsupported_on]\nspawn = \"\"\n" + expect),
            "s.toml:3:9: stack.unsupported_on.spawn: expected why, got \"\"");
  // Every stack it lists is one it cannot run on: bad input, with each reason.
  EXPECT_EQ(errorOf("name = \"x\"\n[stack]\nlauncher = \"spawn\"\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\n"
                    "[stack.unsupported_on]\nspawn = \"no reason to\"\n" + expect)
                .rfind("s.toml:3:12: stack.launcher: no stack can run this scenario (spawn: no reason to), ", 0),
            0u);
}

}  // namespace
}  // namespace faultline::scenario
