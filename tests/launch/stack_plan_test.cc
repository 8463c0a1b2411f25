// Stack plans for scenarios with system-call faults: FAULTLINE_INJECT reaches
// every process of the run, on every stack, and no trainer flag is invented.
#include "harness/launch/stack_plan.h"

#include "harness/launch/stacks.h"
#include "harness/model/node_layout.h"
#include "harness/model/torch_version.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/launch/plan_fixtures.h"

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
    auto plan = planStack(injectScenario("command"), stack, twoTorches(), "/out", 29500, "/scenarios");
    ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
    ASSERT_EQ(plan.launch.env.count("FAULTLINE_INJECT"), 1u) << stack;
    EXPECT_EQ(plan.launch.env.at("FAULTLINE_INJECT"), "write:ENOSPC:rank=1:after=1");
  }
}

TEST(StackPlan, InjectAloneGivesTheReferenceTrainerNoFaultFlags) {
  const auto s = injectScenario("reference");
  EXPECT_TRUE(faultArgs(s).empty());
  auto plan = planStack(s, "builtin", twoTorches(), "/out", 29500, "/scenarios");
  EXPECT_EQ(std::count(plan.launch.command.begin(), plan.launch.command.end(), "--fault"), 0);
}

TEST(StackPlan, BareNameTakesTheNewestTorchAndAVersionPicksItsOwn) {
  const auto s = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"/usr/bin/python3\", \"t.py\"]\n"
                       "stacks = [\"torchrun\", \"builtin\", \"spawn\"]");
  auto bare = planStack(s, "", twoTorches(), "/out", 1, "/sc");
  ASSERT_FALSE(bare.unsupported) << *bare.unsupported;
  EXPECT_EQ(bare.stack, "torchrun@2.13");
  EXPECT_EQ(bare.torch, "2.13.0+cpu");
  EXPECT_EQ(bare.launch.command.front(), "/opt/t2/bin/torchrun");
  auto old = planStack(s, "torchrun@1.13", twoTorches(), "/out", 1, "/sc");
  ASSERT_FALSE(old.unsupported) << *old.unsupported;
  EXPECT_EQ(old.launch.command.front(), "/usr/bin/torchrun");
  // A Python trainer runs on the stack's own interpreter, whatever the file says.
  auto builtin = planStack(s, "builtin@2.13", twoTorches(), "/out", 1, "/sc");
  ASSERT_FALSE(builtin.unsupported) << *builtin.unsupported;
  EXPECT_EQ(builtin.launch.command.front(), "/opt/t2/bin/python");
  Tools with_runner = twoTorches();
  with_runner.launch_scripts_dir = launchScriptsDir();
  auto spawn = planStack(s, "spawn@1.13", with_runner, "/out", 1, "/sc");
  ASSERT_FALSE(spawn.unsupported) << *spawn.unsupported;
  EXPECT_EQ(spawn.launch.command.front(), "/usr/bin/python3");
  auto missing = planStack(s, "torchrun@2.9", twoTorches(), "/out", 1, "/sc");
  ASSERT_TRUE(missing.unsupported);
  EXPECT_NE(missing.unsupported->find("torch 2.9 is not installed (installed: 2.13, 1.13"), std::string::npos) << *missing.unsupported;
  EXPECT_TRUE(planStack(s, "torchrun", Tools{}, "/out", 1, "/sc").unsupported);
}

TEST(StackPlan, AFrameworksStackRunsWhereItIsInstalledNamedByItsOwnVersion) {
  Tools tools = withFrameworks({{"lightning", "2.6.6"}, {"accelerate", "1.16.0"}});
  const auto s = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n"
                       "stacks = [\"torchrun\", \"lightning\", \"accelerate\"]\nworld_size = 3\n"
                       "[stack.command_on]\nlightning = [\"python3\", \"lit.py\"]\naccelerate = [\"python3\", \"acc.py\"]");
  auto lit = planStack(s, "lightning", tools, "/out", 29555, "/sc");
  ASSERT_FALSE(lit.unsupported) << *lit.unsupported;
  EXPECT_EQ(lit.stack, "lightning@2.6");
  EXPECT_EQ(lit.torch, "2.13.0+cpu");
  // The script is its own launcher: run once, on the framework's interpreter, with --devices N.
  EXPECT_EQ(lit.launch.command, (std::vector<std::string>{"/opt/fw/bin/python", "lit.py", "--devices", "3"}));
  EXPECT_EQ(lit.launch.env.at("MASTER_PORT"), "29555");
  auto acc = planStack(s, "accelerate@1.16", tools, "/out", 29556, "/sc");
  ASSERT_FALSE(acc.unsupported) << *acc.unsupported;
  ASSERT_GE(acc.launch.command.size(), 3u);
  EXPECT_EQ(acc.launch.command[0], "/opt/fw/bin/accelerate");
  EXPECT_EQ(acc.launch.command.back(), "acc.py");
  // torch's own stacks keep the install with nothing beside torch.
  auto plain = planStack(s, "torchrun@2.13", tools, "/out", 1, "/sc");
  EXPECT_EQ(plain.launch.command.front(), "/opt/t2/bin/torchrun");
  auto wrong = planStack(s, "lightning@2.5", tools, "/out", 1, "/sc");
  ASSERT_TRUE(wrong.unsupported);
  EXPECT_NE(wrong.unsupported->find("lightning 2.5 is not installed"), std::string::npos) << *wrong.unsupported;
  EXPECT_TRUE(planStack(s, "lightning", twoTorches(), "/out", 1, "/sc").unsupported);
}

// Issue 31: accelerate launch and deepspeed run any script a rank would run,
// as their users start a torchrun script with them, and the reference
// trainer as a program; Lightning and Ray Train run only a script written
// for them, and say so.
TEST(StackPlan, AccelerateAndDeepSpeedRunAnyTrainerLightningAndRaySayWhyNot) {
  Tools tools = withFrameworks({{"lightning", "2.6.6"}, {"accelerate", "1.16.0"}, {"deepspeed", "0.19.8"}, {"ray", "2.60.0"}});
  const std::string all = "stacks = [\"torchrun\", \"accelerate\", \"deepspeed\"]\nworld_size = 2\n";
  const auto plain = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n"
                           "args = [\"--steps\", \"4\"]\nmax_restarts = 1\n" + all);
  const auto acc = planStack(plain, "accelerate", tools, "/out", 29556, "/sc");
  ASSERT_FALSE(acc.unsupported) << *acc.unsupported;
  const auto& a = acc.launch.command;
  // Restarts are passed on to its torchrun agent; the script runs under its interpreter.
  auto restarts = std::find(a.begin(), a.end(), "--max_restarts");
  ASSERT_NE(restarts, a.end());
  EXPECT_EQ(*(restarts + 1), "1");
  EXPECT_EQ(std::vector<std::string>(a.end() - 3, a.end()), (std::vector<std::string>{"plain.py", "--steps", "4"}));
  // A torchrun script under deepspeed: LOCAL_RANK from the environment, no --local_rank flag.
  const auto ds = planStack(parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n" + all),
                            "deepspeed", tools, "/out", 29557, "/sc");
  ASSERT_FALSE(ds.unsupported) << *ds.unsupported;
  EXPECT_EQ(std::vector<std::string>(ds.launch.command.end() - 2, ds.launch.command.end()),
            (std::vector<std::string>{"--no_local_rank", "plain.py"}));
  // A script written for DeepSpeed takes the flag, as DeepSpeed's examples do.
  const auto own = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n" + all +
                         "[stack.command_on]\ndeepspeed = [\"python3\", \"ds.py\"]");
  const auto ds_own = planStack(own, "deepspeed", tools, "/out", 29557, "/sc");
  ASSERT_FALSE(ds_own.unsupported) << *ds_own.unsupported;
  EXPECT_EQ(ds_own.launch.command.back(), "ds.py");
  EXPECT_EQ(std::count(ds_own.launch.command.begin(), ds_own.launch.command.end(), "--no_local_rank"), 0);
  // The reference trainer: a program, --no_python, on both.
  const auto ref = parse("launcher = \"builtin\"\n" + all);
  for (const std::string stack : {"accelerate", "deepspeed"}) {
    const auto r = planStack(ref, stack, tools, "/out", 29558, "/sc");
    ASSERT_FALSE(r.unsupported) << stack << ": " << *r.unsupported;
    auto np = std::find(r.launch.command.begin(), r.launch.command.end(), "--no_python");
    ASSERT_NE(np, r.launch.command.end()) << stack;
    EXPECT_NE(std::find(np, r.launch.command.end(), "/b/faultline-trainer-torch2.13"), r.launch.command.end()) << stack;
  }
  // deepspeed does not restart ranks, and says so; faultline's own launcher
  // restarts them (the supervisor starts each attempt, watch_loop.cc).
  EXPECT_EQ(planStack(plain, "deepspeed", tools, "/out", 1, "/sc").unsupported,
            "restarts: the deepspeed launcher does not restart ranks");
  const auto builtin_restarts = planStack(
      parse("launcher = \"builtin\"\nmax_restarts = 1\nstacks = [\"builtin\"]\nworld_size = 2\n"), "builtin", tools, "/out", 1, "/sc");
  EXPECT_FALSE(builtin_restarts.unsupported) << *builtin_restarts.unsupported;
  // Not listed: why, in words the catalog groups by.
  const auto plain_only = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n"
                                "stacks = [\"torchrun\", \"launch\"]");
  const auto lit_only = parse("launcher = \"lightning\"\ntrainer = \"command\"\ncommand = [\"python3\", \"lit.py\"]\n"
                              "stacks = [\"lightning\"]");
  EXPECT_EQ(planStack(lit_only, "torchrun@2.13", tools, "/out", 1, "/sc").unsupported,
            "its trainer is written for lightning's own API");
  const auto nodes = parse("launcher = \"torchrun-multinode\"\nstacks = [\"torchrun-multinode\", \"slurm\"]\nnodes = 2\n"
                           "world_size = 4");
  EXPECT_EQ(planStack(nodes, "builtin@2.13", tools, "/out", 1, "/sc").unsupported,
            "a scenario of several nodes, on a one-node stack");
  // A scenario of one node that lists only stacks which could span nodes is
  // still one node's: its reason is the list.
  const auto torchrun_only = parse("launcher = \"torchrun\"\nstacks = [\"torchrun\"]\nworld_size = 2");
  EXPECT_EQ(planStack(torchrun_only, "builtin@2.13", tools, "/out", 1, "/sc").unsupported,
            "scenario 'x' applies to the stacks torchrun, not builtin@2.13");
}

TEST(StackPlan, ARendezvousBackendConcernsOnlyTheStacksThatRunTorchsAgent) {
  Tools tools = withFrameworks({{"accelerate", "1.16.0"}, {"ray", "2.60.0"}});
  tools.launch_scripts_dir = launchScriptsDir();
  const auto c10d = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"plain.py\"]\n"
                          "stacks = [\"torchrun\", \"accelerate\", \"ray\", \"torchrun-multinode\"]\nworld_size = 2\n"
                          "rendezvous = \"c10d\"\n[stack.command_on]\nray = [\"python3\", \"ray_ddp.py\"]");
  // torchrun's agent is given it.
  const auto tr = planStack(c10d, "torchrun", tools, "/out", 29560, "/sc");
  ASSERT_FALSE(tr.unsupported) << *tr.unsupported;
  EXPECT_NE(std::find(tr.launch.command.begin(), tr.launch.command.end(), "--rdzv_backend=c10d"), tr.launch.command.end());
  // Ray runs no torchelastic agent: nothing to pick, the scenario runs.
  const auto ray = planStack(c10d, "ray", tools, "/out", 29561, "/sc");
  ASSERT_FALSE(ray.unsupported) << *ray.unsupported;
  EXPECT_EQ(std::count(ray.launch.command.begin(), ray.launch.command.end(), "--rdzv_backend=c10d"), 0);
  // accelerate launch is given it; its agent meets at localhost:29400, and
  // start() runs the job in a network namespace of its own (root needed).
  const auto acc = planStack(c10d, "accelerate", tools, "/out", 29562, "/sc");
  if (::geteuid() == 0) {
    ASSERT_FALSE(acc.unsupported) << *acc.unsupported;
    const auto& a = acc.launch.command;
    auto backend = std::find(a.begin(), a.end(), "--rdzv_backend");
    ASSERT_NE(backend, a.end());
    EXPECT_EQ(*(backend + 1), "c10d");
    EXPECT_TRUE(acc.launch.own_network);
    EXPECT_FALSE(tr.launch.own_network);
  } else {
    ASSERT_TRUE(acc.unsupported);
    EXPECT_NE(acc.unsupported->find("a network namespace of its own"), std::string::npos) << *acc.unsupported;
  }
  // Across nodes every node's agent is given it (start() points the
  // endpoint at node n1's address, multinode's conformance runs it).
  const auto tmn = planStack(c10d, "torchrun-multinode", tools, "/out", 29563, "/sc");
  ASSERT_FALSE(tmn.unsupported) << *tmn.unsupported;
  EXPECT_NE(std::find(tmn.launch.command.begin(), tmn.launch.command.end(), "--rdzv_backend=c10d"), tmn.launch.command.end());
}

TEST(StackPlan, ReferenceTrainerIsTheOneBuiltForTheStacksTorch) {
  const auto s = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"torchrun\"]");
  EXPECT_EQ(planStack(s, "builtin", twoTorches(), "/out", 1, "/sc").launch.command.front(), "/b/faultline-trainer-torch2.13");
  auto old = planStack(s, "torchrun@1.13", twoTorches(), "/out", 1, "/sc");
  EXPECT_NE(std::find(old.launch.command.begin(), old.launch.command.end(), "/b/faultline-trainer-torch1.13"),
            old.launch.command.end());
  Tools unbuilt = twoTorches();
  unbuilt.torches[0].trainer.clear();
  auto none = planStack(s, "builtin", unbuilt, "/out", 1, "/sc");
  ASSERT_TRUE(none.unsupported);
  EXPECT_EQ(*none.unsupported, "no reference trainer is built against torch 2.13 (faultline-trainer-torch2.13)");
  unbuilt.trainer_override = "/my/trainer";
  EXPECT_EQ(planStack(s, "builtin", unbuilt, "/out", 1, "/sc").launch.command.front(), "/my/trainer");
}

TEST(StackPlan, ScenarioRestrictsVersionsByStackEntryAndByTorchBound) {
  const auto pinned = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\n"
                            "stacks = [\"torchrun@1.13\", \"spawn\"]");
  EXPECT_FALSE(planStack(pinned, "torchrun@1.13", twoTorches(), "/o", 1, "/s").unsupported);
  auto newer = planStack(pinned, "torchrun", twoTorches(), "/o", 1, "/s");
  ASSERT_TRUE(newer.unsupported);
  EXPECT_EQ(*newer.unsupported, "scenario 'x' applies to the stacks torchrun@1.13, spawn, not torchrun@2.13");
  const auto old_only = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]\ntorch = \"<2\"");
  EXPECT_FALSE(planStack(old_only, "torchrun@1.13", twoTorches(), "/o", 1, "/s").unsupported);
  auto two = planStack(old_only, "torchrun@2.13", twoTorches(), "/o", 1, "/s");
  ASSERT_TRUE(two.unsupported);
  EXPECT_EQ(*two.unsupported, "scenario 'x' applies to torch <2, not 2.13.0+cpu");
  // Its own launcher, no --stack: the newest torch it applies to.
  EXPECT_EQ(planStack(old_only, "", twoTorches(), "/o", 1, "/s").stack, "torchrun@1.13");
}

TEST(StackPlan, LaunchIsUnsupportedWhereTorchNoLongerShipsIt) {
  const auto s = parse("launcher = \"launch\"\ntrainer = \"command\"\ncommand = [\"python3\", \"t.py\"]");
  Tools t = twoTorches();
  t.torches[0].has_launch = false;
  auto plan = planStack(s, "launch", t, "/o", 1, "/s");
  ASSERT_TRUE(plan.unsupported);
  EXPECT_EQ(*plan.unsupported, "torch 2.13.0+cpu no longer ships torch.distributed.launch");
  EXPECT_FALSE(planStack(s, "launch@1.13", t, "/o", 1, "/s").unsupported);
}

TEST(StackName, ParsesLauncherAndSeries) {
  auto n = parseStackName("torchrun@2.13");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->launcher, "torchrun");
  EXPECT_EQ(n->series, "2.13");
  EXPECT_EQ(parseStackName("spawn")->str(), "spawn");
  EXPECT_FALSE(parseStackName("torchrun@2"));
  EXPECT_FALSE(parseStackName("torchrun@2.13.0"));
  EXPECT_FALSE(parseStackName("external@2.13"));
  auto bad = parseStackName("srun");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "unknown stack 'srun', expected builtin, torchrun, torchrun-multinode, launch, spawn, slurm, lightning, accelerate, deepspeed, ray or external, optionally @MAJOR.MINOR (torchrun@2.13)");
}

TEST(TorchVersion, SeriesOrderAndConstraints) {
  EXPECT_EQ(torchSeries("1.13.0a0"), "1.13");
  EXPECT_EQ(torchSeries("2.13.0+cpu"), "2.13");
  EXPECT_EQ(torchSeries("2"), "");
  EXPECT_LT(compareVersions("2.9.1", "2.13.0"), 0);
  EXPECT_EQ(compareVersions("1.13.0a0", "1.13"), 0);
  auto lt2 = parseVersionConstraint("<2");
  ASSERT_TRUE(lt2);
  EXPECT_TRUE(satisfies("1.13.0a0", *lt2));
  EXPECT_FALSE(satisfies("2.13.0+cpu", *lt2));
  auto range = parseVersionConstraint(">=1.13, <2.14");
  ASSERT_TRUE(range);
  EXPECT_TRUE(satisfies("2.13.0+cpu", *range));
  EXPECT_FALSE(satisfies("2.14.1", *range));
  EXPECT_TRUE(satisfies("1.13.1", *parseVersionConstraint("1.13")));
  EXPECT_FALSE(parseVersionConstraint("~=2.1"));
  EXPECT_FALSE(parseVersionConstraint(">=two"));
}

// Regression: a bare `train.py` beside the scenario stayed relative, so a
// suite run from another directory failed on every rank.
TEST(StackPlan, CommandPathsResolveAgainstTheScenarioFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("fl_plan_paths_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "python");
  std::ofstream(dir / "train.py") << "pass\n";
  std::ofstream(dir / "python" / "t.py") << "pass\n";
  const auto s = parse("launcher = \"builtin\"\ntrainer = \"command\"\n"
                       "command = [\"python3\", \"train.py\", \"python/t.py\", \"10\", \"--flag\"]");
  auto plan = planStack(s, "builtin@2.13", twoTorches(), "/o", 1, dir.string());
  ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
  EXPECT_EQ(plan.launch.command, (std::vector<std::string>{"/opt/t2/bin/python", (dir / "train.py").string(),
                                                           (dir / "python" / "t.py").string(), "10", "--flag"}));
  std::filesystem::remove_all(dir);
}

TEST(StackPlan, ApplyEnvReplacesAndAdds) {
  std::vector<std::string> env{"PATH=/bin", "FAULTLINE_INJECT=old", "FAULTLINE_INJECTED=keep"};
  applyEnv(env, {{"FAULTLINE_INJECT", "fsync:EIO"}, {"NEW", "1"}});
  std::sort(env.begin(), env.end());
  EXPECT_EQ(env, (std::vector<std::string>{"FAULTLINE_INJECT=fsync:EIO", "FAULTLINE_INJECTED=keep", "NEW=1", "PATH=/bin"}));
}

}  // namespace
}  // namespace faultline::launch

namespace faultline::launch {
namespace {

scenario::Scenario parseWith(const std::string& rest) {
  auto s = scenario::parseScenarioText("name = \"x\"\n" + rest + "\n[expect]\n\"verdict\" = \"pass\"\n", "s.toml");
  EXPECT_TRUE(s.has_value()) << s.error().message;
  return *s;
}

const char* kCommand = "[stack]\nlauncher = \"builtin\"\nstacks = [\"builtin\", \"torchrun\"]\ntrainer = \"command\"\n"
                       "command = [\"/usr/bin/python3\", \"train.py\"]\nworld_size = 3\n";

TEST(StackPlan, AScenarioNeedingMoreGpusThanTheMachineHasIsUnsupportedSayingHowMany) {
  const auto s = parseWith(std::string(kCommand) + "gpus = 2\n");
  Tools t = twoTorches();
  t.gpus = 1;
  auto plan = planStack(s, "builtin", t, "/out", 29500, "/scenarios");
  ASSERT_TRUE(plan.unsupported);
  EXPECT_EQ(*plan.unsupported, "scenario 'x' needs 2 GPU(s), this machine has 1");
  t.gpus = 2;
  EXPECT_FALSE(planStack(s, "builtin", t, "/out", 29500, "/scenarios").unsupported);
}

// Seen on the offline GPU machine, which has no eu-stack, gdb or py-spy: the
// hang scenarios without events failed there, with nothing to read.
TEST(StackPlan, AScenarioWhoseStackDumperIsMissingIsUnsupportedNamingIt) {
  const auto s = parseWith(std::string(kCommand) + "tools = [\"eu-stack|gdb\", \"py-spy\"]\n");
  Tools t = twoTorches();
  t.helpers = {"py-spy"};
  auto plan = planStack(s, "builtin", t, "/out", 29500, "/scenarios");
  ASSERT_TRUE(plan.unsupported);
  EXPECT_EQ(*plan.unsupported,
            "scenario 'x' reads its diagnosis from stack dumps by eu-stack or gdb, which this machine does not have");
  t.helpers = {"gdb", "py-spy"};
  EXPECT_FALSE(planStack(s, "builtin", t, "/out", 29500, "/scenarios").unsupported);
}

TEST(StackPlan, GpusAreTheNvidiaDeviceFiles) {
  const std::string dir = ::testing::TempDir() + "/fl-dev-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const char* f : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "null"}) std::ofstream(dir + "/" + f) << "";
  EXPECT_EQ(countGpus(dir), 2);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(countGpus(dir), 0);
}

// A command trainer's fault reaches its ranks for the shim, or the
// supervisor's list; the reference trainer's stays its --fault flags.
TEST(StackPlan, AFaultGoesToTheLayerThatStrikesIt) {
  auto shim = planStack(parseWith(std::string(kCommand) + "[fault]\nkind = \"exception\"\nrank = [0, 2]\nstep = 3\n"),
                        "torchrun", twoTorches(), "/out", 29500, "/scenarios");
  ASSERT_FALSE(shim.unsupported) << *shim.unsupported;
  EXPECT_EQ(shim.launch.env.at("FAULTLINE_FAULT"), "exception:rank=0,2:step=3");
  EXPECT_TRUE(shim.outside_faults.empty());
  auto outside = planStack(parseWith(std::string(kCommand) + "[fault]\nkind = \"freeze\"\nrank = 1\nafter_s = 2.5\n"),
                           "builtin", twoTorches(), "/out", 29500, "/scenarios");
  ASSERT_FALSE(outside.unsupported) << *outside.unsupported;
  EXPECT_EQ(outside.launch.env.count("FAULTLINE_FAULT"), 0u);
  ASSERT_EQ(outside.outside_faults.size(), 1u);
  EXPECT_EQ(outside.outside_faults[0].text(), "freeze:rank=1:after=2.5");
  auto reference = planStack(parseWith("[stack]\nlauncher = \"builtin\"\n[fault]\nkind = \"sigkill\"\nrank = 1\nstep = 2\n"),
                             "builtin", twoTorches(), "/out", 29500, "/scenarios");
  EXPECT_EQ(reference.launch.env.count("FAULTLINE_FAULT"), 0u);
  EXPECT_EQ(std::count(reference.launch.command.begin(), reference.launch.command.end(), "--fault"), 1);
}

}  // namespace
}  // namespace faultline::launch

namespace faultline::launch {
namespace {

// Issue 31: spawn runs a function, so a trainer script written for torchrun
// runs as the spawned function through the stack's runner.
TEST(SpawnPlan, APerRankScriptRunsThroughTheRunnerAProgramWrittenForSpawnRunsItself) {
  Tools t = twoTorches();
  t.launch_scripts_dir = launchScriptsDir();
  const auto per_rank = parse("launcher = \"builtin\"\ntrainer = \"command\"\ncommand = [\"python3\", \"-u\", \"/t.py\"]\n"
                              "args = [\"--steps\", \"3\"]\nworld_size = 3\nstacks = [\"builtin\", \"spawn\"]");
  auto plan = planStack(per_rank, "spawn@1.13", t, "/o", 4711, "/s");
  ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
  EXPECT_EQ(plan.launch.command, (std::vector<std::string>{"/usr/bin/python3", "-u", t.launch_scripts_dir + "/spawn_runner.py",
                                                           "--nprocs", "3", "--port", "4711", "/t.py", "--steps", "3"}));
  const auto own = parse("launcher = \"spawn\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/spawns.py\"]");
  EXPECT_EQ(planStack(own, "spawn@1.13", t, "/o", 4711, "/s").launch.command,
            (std::vector<std::string>{"/usr/bin/python3", "/spawns.py"}));
  // Said precisely where it cannot run.
  const auto code = parse("launcher = \"builtin\"\ntrainer = \"command\"\ncommand = [\"python3\", \"-c\", \"pass\"]\n"
                          "stacks = [\"builtin\", \"spawn\"]");
  EXPECT_EQ(planStack(code, "spawn", t, "/o", 1, "/s").unsupported,
            "the trainer is `python -c` code; the spawn stack runs a script or a module as each rank");
  t.launch_scripts_dir.clear();
  EXPECT_EQ(planStack(per_rank, "spawn", t, "/o", 1, "/s").unsupported,
            "the spawn runner (spawn_runner.py) was not found beside faultline; set FAULTLINE_LAUNCH_SCRIPTS to its directory");
}

// Ray Train and Lightning run a function in each rank, as spawn does: a
// plain trainer script runs as that function through the stack's runner;
// a driver or Lightning script of the scenario's own runs itself.
TEST(FrameworkPlan, APlainScriptRunsThroughTheFrameworksRunnerItsOwnTrainerRunsItself) {
  Tools t = withFrameworks({{"lightning", "2.6.6"}, {"ray", "2.60.0"}});
  t.launch_scripts_dir = launchScriptsDir();
  const auto plain = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"-u\", \"/t.py\"]\n"
                           "args = [\"--steps\", \"3\"]\nworld_size = 2\nmax_restarts = 1\n"
                           "stacks = [\"torchrun\", \"lightning\", \"ray\"]");
  const auto ray = planStack(plain, "ray", t, "/o", 4711, "/s");
  ASSERT_FALSE(ray.unsupported) << *ray.unsupported;
  const std::vector<std::string> driver = {"/opt/fw/bin/python", "-u", t.launch_scripts_dir + "/ray_script.py",
                                           "--num-workers", "2", "--max-failures", "1", "/t.py", "--steps", "3"};
  ASSERT_GE(ray.launch.command.size(), driver.size());
  EXPECT_EQ(ray.launch.command[1], t.launch_scripts_dir + "/ray_runner.py");
  EXPECT_EQ(std::vector<std::string>(ray.launch.command.end() - static_cast<std::ptrdiff_t>(driver.size()),
                                     ray.launch.command.end()),
            driver);
  const auto no_restarts = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\n"
                                 "world_size = 2\nstacks = [\"torchrun\", \"lightning\", \"ray\"]");
  const auto lit = planStack(no_restarts, "lightning", t, "/o", 4711, "/s");
  ASSERT_FALSE(lit.unsupported) << *lit.unsupported;
  EXPECT_EQ(lit.launch.command, (std::vector<std::string>{"/opt/fw/bin/python", t.launch_scripts_dir + "/lightning_script.py",
                                                          "--devices", "2", "/t.py"}));
  EXPECT_EQ(lit.launch.env.at("MASTER_PORT"), "4711");
  // A trainer written for the framework runs itself, with the framework's flags.
  const auto own = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/plain.py\"]\n"
                         "world_size = 2\nstacks = [\"torchrun\", \"lightning\", \"ray\"]\n"
                         "[stack.command_on]\nlightning = [\"python3\", \"/lit.py\"]\nray = [\"python3\", \"/ray_ddp.py\"]");
  EXPECT_EQ(planStack(own, "lightning", t, "/o", 4711, "/s").launch.command,
            (std::vector<std::string>{"/opt/fw/bin/python", "/lit.py", "--devices", "2"}));
  const auto own_ray = planStack(own, "ray", t, "/o", 4711, "/s").launch.command;
  EXPECT_EQ(std::vector<std::string>(own_ray.end() - 4, own_ray.end()),
            (std::vector<std::string>{"/opt/fw/bin/python", "/ray_ddp.py", "--num-workers", "2"}));
}

// spawn, Lightning and Ray Train run the reference trainer as a Python
// script: its library (built beside the program), called by
// reference_trainer.py, which each runs as it runs any plain script.
TEST(PythonStackPlan, TheReferenceTrainerRunsAsAScriptThatCallsItsLibrary) {
  Tools t = withFrameworks({{"lightning", "2.6.6"}, {"ray", "2.60.0"}});
  t.launch_scripts_dir = launchScriptsDir();
  const std::string bin = testing::TempDir() + "ref_trainer_bin";
  std::filesystem::remove_all(bin);
  std::filesystem::create_directories(bin);
  for (auto& torch : t.torches) {
    torch.trainer = bin + "/faultline-trainer-torch" + torch.series;
    std::ofstream(torch.trainer) << "";
  }
  const auto ref = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"spawn\", \"lightning\", \"ray\"]\n"
                         "world_size = 2\nargs = [\"--steps\", \"3\"]");
  // Without the library: said, with the file it looked for.
  EXPECT_EQ(planStack(ref, "spawn@1.13", t, "/o", 4711, "/s").unsupported,
            "the reference trainer's library (libfaultline-trainer-torch1.13.so) was not built beside " + bin +
                "/faultline-trainer-torch1.13; a Python rank calls the trainer there");
  for (const auto& torch : t.torches) std::ofstream(bin + "/libfaultline-trainer-torch" + torch.series + ".so") << "";
  const std::string script = t.launch_scripts_dir + "/reference_trainer.py";
  auto spawn = planStack(ref, "spawn@1.13", t, "/o", 4711, "/s");
  ASSERT_FALSE(spawn.unsupported) << *spawn.unsupported;
  EXPECT_EQ(spawn.launch.command,
            (std::vector<std::string>{"/usr/bin/python3", t.launch_scripts_dir + "/spawn_runner.py", "--nprocs", "2", "--port",
                                      "4711", script, bin + "/libfaultline-trainer-torch1.13.so", "--steps", "3"}));
  auto lit = planStack(ref, "lightning", t, "/o", 4711, "/s");
  ASSERT_FALSE(lit.unsupported) << *lit.unsupported;
  ASSERT_GE(lit.launch.command.size(), 4u);
  EXPECT_EQ(lit.launch.command[1], t.launch_scripts_dir + "/lightning_script.py");
  EXPECT_EQ(std::vector<std::string>(lit.launch.command.end() - 4, lit.launch.command.end()),
            (std::vector<std::string>{script, lit.launch.command.end()[-3], "--steps", "3"}));
  EXPECT_NE(lit.launch.command.end()[-3].find("/libfaultline-trainer-torch"), std::string::npos);
  auto ray = planStack(ref, "ray", t, "/o", 4711, "/s");
  ASSERT_FALSE(ray.unsupported) << *ray.unsupported;
  EXPECT_NE(std::find(ray.launch.command.begin(), ray.launch.command.end(), script), ray.launch.command.end());
  // The fault is the trainer's own flag, as under torchrun --no_python.
  const auto faulted = parseWith("[stack]\nlauncher = \"builtin\"\nstacks = [\"builtin\", \"spawn\"]\n"
                                 "[fault]\nkind = \"sigkill\"\nrank = 1\nstep = 2\n");
  auto struck = planStack(faulted, "spawn@1.13", t, "/o", 4711, "/s");
  ASSERT_FALSE(struck.unsupported) << *struck.unsupported;
  EXPECT_EQ(struck.launch.env.count("FAULTLINE_FAULT"), 0u);
  EXPECT_EQ(std::count(struck.launch.command.begin(), struck.launch.command.end(), "--fault"), 1);
}

TEST(LaunchPlan, TheReferenceTrainerRunsWithNoPython) {
  const auto s = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"launch\"]\nworld_size = 2");
  auto plan = planStack(s, "launch@1.13", twoTorches(), "/o", 4711, "/s");
  ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
  const auto& c = plan.launch.command;
  auto np = std::find(c.begin(), c.end(), "--no_python");
  ASSERT_NE(np, c.end());
  EXPECT_EQ(*(np + 1), "/b/faultline-trainer-torch1.13");
  EXPECT_EQ(c[0], "/usr/bin/python3");
}

TEST(StackPlan, AStackTheScenarioSaysItCannotRunOnIsUnsupportedWithItsReason) {
  const auto s = parse("launcher = \"builtin\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\n"
                       "stacks = [\"builtin\"]\n[stack.unsupported_on]\nspawn = \"one program parses its arguments\"");
  EXPECT_EQ(planStack(s, "spawn@2.13", twoTorches(), "/o", 1, "/s").unsupported, "one program parses its arguments");
  EXPECT_EQ(planStack(s, "launch@2.13", twoTorches(), "/o", 1, "/s").unsupported,
            "scenario 'x' applies to the stacks builtin, not launch@2.13");
}

TEST(StackPlan, TheScenariosEnvironmentIsTheJobs) {
  const auto s = parse("launcher = \"builtin\"\n[stack.env]\nTORCH_SHOW_CPP_STACKTRACES = \"1\"\nNCCL_DEBUG = \"INFO\"");
  auto plan = planStack(s, "builtin", twoTorches(), "/o", 1, "/s");
  EXPECT_EQ(plan.launch.env.at("TORCH_SHOW_CPP_STACKTRACES"), "1");
  EXPECT_EQ(plan.launch.env.at("NCCL_DEBUG"), "INFO");
}

TEST(StackPlan, AOneNodeScenarioOnAMultiNodeStackIsSpreadOverTwoNodes) {
  const auto s = parse(
      "launcher = \"builtin\"\nstacks = [\"builtin\", \"torchrun-multinode\"]\nworld_size = 4\n"
      "[expect_on.torchrun-multinode]\n\"root_cause.rank\" = 3");
  auto plan = planStack(s, "torchrun-multinode@2.13", twoTorches(), "/o", 1, "/s");
  ASSERT_EQ(plan.implied_expect.size(), 1u);
  EXPECT_EQ(plan.implied_expect[0].path, "root_cause.node");
  EXPECT_EQ(plan.implied_expect[0].value, "n2") << "rank 3 of 2 nodes x 2 ranks";
  if (!plan.unsupported) {  // torchrun-multinode plans only where it can make network namespaces
    const auto& c = plan.launch.command;
    EXPECT_NE(std::find(c.begin(), c.end(), "--nnodes=2"), c.end());
    EXPECT_NE(std::find(c.begin(), c.end(), "--nproc_per_node=2"), c.end());
  }
  // On a one-node stack it runs as written.
  const auto builtin = planStack(s, "builtin@2.13", twoTorches(), "/o", 1, "/s");
  EXPECT_TRUE(builtin.implied_expect.empty());
  EXPECT_TRUE(builtin.launch.node_procs.empty());
}

TEST(StackPlan, LaunchRunsAScenarioOfSeveralNodesAcrossThemAndOneOfOneNodeOnOne) {
  // A scenario of 2 nodes that lists launch: one launch agent per node.
  const auto two = parse("launcher = \"torchrun-multinode\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\n"
                         "stacks = [\"torchrun-multinode\", \"launch\"]\nnodes = 2\nworld_size = 4\n"
                         "[expect_on.launch]\n\"root_cause.rank\" = 2");
  const auto plan = planStack(two, "launch@2.13", twoTorches(), "/o", 1, "/s");
  EXPECT_TRUE(plan.implied_expect.empty()) << "written for its nodes: its own expectations name the node";
  if (!plan.unsupported) {  // only where network namespaces can be made
    const auto& c = plan.launch.command;
    const auto at = std::find(c.begin(), c.end(), "--use_env");
    ASSERT_NE(at, c.end());
    EXPECT_EQ(*(at + 1), "--nnodes=2") << "the node's flags go before it (node_driver.cc)";
    EXPECT_EQ(*(at + 2), "--nproc_per_node=2");
    EXPECT_TRUE(plan.launch.node_procs.empty()) << "the same ranks on each node";
  }
  // A scenario of one node stays on one: launch does not spread it.
  const auto one = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"launch\"]\nworld_size = 4");
  const auto single = planStack(one, "launch@2.13", twoTorches(), "/o", 1, "/s");
  ASSERT_FALSE(single.unsupported) << *single.unsupported;
  const auto& c = single.launch.command;
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const std::string& a) { return a.rfind("--nnodes", 0) == 0; }), 0);
  EXPECT_NE(std::find(c.begin(), c.end(), "--nproc_per_node=4"), c.end());
  EXPECT_TRUE(single.implied_expect.empty());
  EXPECT_TRUE(single.launch.node_procs.empty());
  // builtin, a one-node stack, still says so.
  EXPECT_EQ(planStack(two, "builtin@2.13", twoTorches(), "/o", 1, "/s").unsupported,
            "a scenario of several nodes, on a one-node stack");
}

TEST(StackPlan, AccelerateAndDeepSpeedRunOneLauncherPerNodeOfAScenarioOfSeveral) {
  Tools tools = withFrameworks({{"accelerate", "1.16.0"}, {"deepspeed", "0.19.0"}});
  const auto two = parse("launcher = \"torchrun-multinode\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\n"
                         "stacks = [\"torchrun-multinode\", \"accelerate\", \"deepspeed\"]\nnodes = 2\nworld_size = 4\n");
  const auto acc = planStack(two, "accelerate", tools, "/o", 29500, "/s");
  if (acc.unsupported) {  // only where network namespaces can be made
    EXPECT_NE(acc.unsupported->find("network"), std::string::npos) << *acc.unsupported;
    return;
  }
  EXPECT_EQ(acc.launch.nodes, 2);
  const auto& a = acc.launch.command;
  const auto machines = std::find(a.begin(), a.end(), "--num_machines");
  ASSERT_NE(machines, a.end());
  EXPECT_EQ(*(machines + 1), "2");
  EXPECT_EQ(*(std::find(a.begin(), a.end(), "--num_processes") + 1), "4") << "accelerate's count is the whole job's";
  const auto ds = planStack(two, "deepspeed", tools, "/o", 29500, "/s");
  ASSERT_FALSE(ds.unsupported) << *ds.unsupported;
  EXPECT_EQ(ds.launch.nodes, 2);
  const auto& d = ds.launch.command;
  EXPECT_EQ(std::vector<std::string>(d.begin() + 1, d.begin() + 5),
            (std::vector<std::string>{"--num_nodes=2", "--hostfile", "/o/launcher/hostfile", "--no_ssh"}));
  EXPECT_EQ(*(std::find(d.begin(), d.end(), "--num_gpus") + 1), "2") << "DeepSpeed's count is each node's";
  // One node: as before, no node flags.
  const auto one = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"deepspeed\"]\nworld_size = 4");
  const auto single = planStack(one, "deepspeed", tools, "/o", 29500, "/s");
  ASSERT_FALSE(single.unsupported) << *single.unsupported;
  EXPECT_EQ(single.launch.nodes, 1);
  EXPECT_EQ(std::count(single.launch.command.begin(), single.launch.command.end(), "--no_ssh"), 0);
}

TEST(StackPlan, TorchrunRunsAScenarioOfSeveralNodesAsTorchrunMultinodeDoes) {
  const auto two = parse("launcher = \"torchrun-multinode\"\ntrainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\n"
                         "stacks = [\"torchrun-multinode\", \"torchrun\"]\nnodes = 2\nworld_size = 4\n");
  const auto torchrun = planStack(two, "torchrun@2.13", twoTorches(), "/o", 1, "/s");
  const auto multinode = planStack(two, "torchrun-multinode@2.13", twoTorches(), "/o", 1, "/s");
  if (!multinode.unsupported) {  // only where network namespaces can be made
    ASSERT_FALSE(torchrun.unsupported) << *torchrun.unsupported;
    EXPECT_EQ(torchrun.launch.command, multinode.launch.command) << "one agent per node, the same command lines";
    EXPECT_NE(std::find(torchrun.launch.command.begin(), torchrun.launch.command.end(), "--nnodes=2"),
              torchrun.launch.command.end());
  }
  // A scenario of one node stays on one: torchrun does not spread it, torchrun-multinode does.
  const auto one = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"torchrun\"]\nworld_size = 4");
  const auto single = planStack(one, "torchrun@2.13", twoTorches(), "/o", 1, "/s");
  ASSERT_FALSE(single.unsupported) << *single.unsupported;
  const auto& c = single.launch.command;
  EXPECT_EQ(std::count_if(c.begin(), c.end(), [](const std::string& a) { return a.rfind("--nnodes", 0) == 0; }), 0);
  EXPECT_NE(std::find(c.begin(), c.end(), "--nproc_per_node=4"), c.end());
  EXPECT_TRUE(single.implied_expect.empty());
}

TEST(StackPlan, AnOddWorldSpreadsWithOneRankMoreOnTheFirstNode) {
  const auto s = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"torchrun-multinode\", \"slurm\"]\nworld_size = 3\n"
                       "[expect_on.slurm]\n\"root_cause.rank\" = 2");
  auto plan = planStack(s, "torchrun-multinode@2.13", twoTorches(), "/o", 1, "/s");
  if (!plan.unsupported) {
    EXPECT_EQ(plan.launch.node_procs, (std::vector<int>{2, 1}));
    const auto& c = plan.launch.command;
    EXPECT_NE(std::find(c.begin(), c.end(), "--nproc_per_node=2"), c.end()) << "n1's; start() gives n2 its own";
  }
  const auto slurm = planStack(s, "slurm@2.13", twoTorches(), "/o", 1, "/s");
  ASSERT_EQ(slurm.implied_expect.size(), 1u);
  EXPECT_EQ(slurm.implied_expect[0].value, "n2");
  const auto one = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"slurm\"]\nworld_size = 1");
  EXPECT_EQ(planStack(one, "slurm@2.13", twoTorches(), "/o", 1, "/s").unsupported,
            "scenario 'x' has 1 rank, too few for 2 nodes");
}

TEST(NodeLayout, ConsecutiveRanksPerNodeTheFirstNodesOneMore) {
  EXPECT_EQ(ranksPerNode(4, 2), (std::vector<int>{2, 2}));
  EXPECT_EQ(ranksPerNode(3, 2), (std::vector<int>{2, 1}));
  EXPECT_EQ(ranksPerNode(5, 3), (std::vector<int>{2, 2, 1}));
  EXPECT_TRUE(ranksPerNode(0, 2).empty());
  EXPECT_TRUE(ranksPerNode(2, 0).empty());
  const std::vector<int> three = {2, 1};
  EXPECT_EQ(nodeOfRank(0, three), 1);
  EXPECT_EQ(nodeOfRank(1, three), 1);
  EXPECT_EQ(nodeOfRank(2, three), 2);
  EXPECT_EQ(nodeOfRank(3, three), 0);
  EXPECT_EQ(nodeOfRank(-1, three), 0);
  EXPECT_EQ(globalRank(2, 0, three), 2);
  EXPECT_EQ(globalRank(1, 1, three), 1);
  EXPECT_EQ(globalRank(2, 1, three), -1);
  EXPECT_EQ(globalRank(3, 0, three), -1);
  EXPECT_EQ(nodeLayoutProblem(3, 2), "");
  EXPECT_EQ(nodeLayoutProblem(1, 2), "1 rank(s) cannot fill 2 node(s)");
  EXPECT_EQ(nodeLayoutProblem(4, 0), "4 rank(s) cannot fill 0 node(s)");
}

TEST(NodeExpectations, TheRootCausesRankNamesItsNode) {
  auto expect = [](const std::string& path, nlohmann::json v, scenario::MatchOp op = scenario::MatchOp::kEquals) {
    scenario::Expect e;
    e.path = path;
    e.value = std::move(v);
    e.op = op;
    return e;
  };
  const std::vector<int> two_by_one = {1, 1}, two_by_two = {2, 2};
  const auto one = nodeExpectations({expect("root_cause.rank", 1), expect("ranks[0].role", "collateral")}, two_by_one);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].value, "n2");
  EXPECT_EQ(nodeExpectations({expect("root_cause.rank", 1)}, two_by_two)[0].value, "n1");
  // A bound, a set of ranks, a rank on no node or a node the scenario names itself: nothing implied.
  EXPECT_TRUE(nodeExpectations({expect("root_cause.rank", {0, 1}, scenario::MatchOp::kIn)}, two_by_two).empty());
  EXPECT_TRUE(nodeExpectations({expect("root_cause.rank", 3), expect("root_cause.node", "n1")}, two_by_two).empty());
  EXPECT_TRUE(nodeExpectations({expect("root_cause.rank", nullptr, scenario::MatchOp::kNull)}, two_by_two).empty());
  EXPECT_TRUE(nodeExpectations({expect("root_cause.rank", 7)}, two_by_two).empty());
}

}  // namespace
}  // namespace faultline::launch
