// The launcher registry and each stack's Launcher: one per stack name, what
// the supervisor will ask of it, and the command line it plans.
#include "harness/launch/launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/launch/plan_fixtures.h"

#include "harness/launch/stack_plan.h"
#include "harness/launch/stacks.h"
#include "harness/model/stack_name.h"

namespace faultline::launch {
namespace {

using Strings = std::vector<std::string>;

TEST(LauncherRegistry, EveryStackNameHasItsLauncherAndNoOtherIsRegistered) {
  const auto& names = stackLaunchers();
  const auto& all = allLaunchers();
  ASSERT_EQ(all.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(all[i]->name(), names[i].name);
    EXPECT_EQ(launcherNamed(names[i].name), all[i]);
  }
  EXPECT_EQ(launcherNamed("mpirun"), nullptr);
}

TEST(LauncherRegistry, WhatTheSupervisorAsksEachLauncher) {
  const Launcher& builtin = *launcherNamed("builtin");
  EXPECT_EQ(builtin.rankDiscovery(), RankDiscovery::kStarted);
  EXPECT_EQ(builtin.onRankFailure(), OnRankFailure::kSupervisorStops);
  EXPECT_FALSE(builtin.exitEndsRun());
  LaunchOptions four;
  four.nproc = 4;
  EXPECT_EQ(builtin.ranksKnownUpFront(four), 4);
  RunLayout layout("/out");
  EXPECT_TRUE(builtin.ownLog(four, layout).stdout_path.empty());
  for (const char* name : {"external", "torchrun", "launch", "spawn"}) {
    const Launcher& l = *launcherNamed(name);
    EXPECT_EQ(l.rankDiscovery(), RankDiscovery::kDescendants) << name;
    EXPECT_EQ(l.onRankFailure(), OnRankFailure::kLauncherStops) << name;
    EXPECT_EQ(l.stopOrder(), StopOrder::kWholeTree) << name;
    EXPECT_TRUE(l.exitEndsRun()) << name;
    EXPECT_EQ(l.ranksKnownUpFront(four), 0) << name;
    EXPECT_EQ(l.ownLog(four, layout).stderr_path, "/out/launcher/stderr") << name;
  }
}

// DeepSpeed's CPU all-reduce buffers outlive every rank: those of a rank
// that died before the leak check looked (before its first step) are found
// by their name (the run's master port), removed and named; another run's
// (another port) and any other file are left alone.
TEST(LauncherRegistry, DeepSpeedsFinishRemovesTheRunsLeftAllReduceBuffers) {
  const std::string uid = std::to_string(::getuid());
  const std::string port = std::to_string(40000 + ::getpid() % 20000);
  const std::string mine = "/dev/shm/deepspeed_allreduce_buffer_" + uid + "_127.0.0.1_" + port + "_1";
  const std::string other = "/dev/shm/deepspeed_allreduce_buffer_" + uid + "_127.0.0.1_" + port + "1_1";
  for (const auto& p : {mine, other}) std::ofstream(p) << "x";
  LaunchOptions opts;
  opts.command = {"deepspeed", "--num_gpus", "2", "--master_port", port, "train.py"};
  const auto left = launcherNamed("deepspeed")->finish(opts);
  EXPECT_EQ(left, std::vector<std::string>{"shm:" + mine + " (left behind)"});
  EXPECT_FALSE(std::filesystem::exists(mine));
  EXPECT_TRUE(std::filesystem::exists(other));
  opts.command = {"deepspeed", "--master_port=" + port + "1", "train.py"};
  EXPECT_EQ(launcherNamed("deepspeed")->finish(opts).size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(other));
  EXPECT_TRUE(launcherNamed("deepspeed")->finish(opts).empty());
}

TEST(LauncherRegistry, TheElasticLaunchersSayWhereTheirLogDirIs) {
  const auto s = parse("launcher = \"torchrun\"\ntrainer = \"command\"\ncommand = [\"/usr/bin/python3\", \"/t.py\"]\n");
  auto plan = planStack(s, "torchrun@2.13", twoTorches(), "/out", 29500, "/sc");
  ASSERT_FALSE(plan.unsupported) << *plan.unsupported;
  auto log = launcherNamed("torchrun")->ownLog(plan.launch, RunLayout("/out"));
  EXPECT_EQ(log.log_dir, "/out/launcher/logs");
  EXPECT_EQ(log.format, "torchelastic");
  LaunchOptions own;
  own.command = {"torchrun", "--log_dir=/mine", "t.py"};
  EXPECT_EQ(launcherNamed("launch")->ownLog(own, RunLayout("/out")).log_dir, "/mine");
  EXPECT_EQ(launcherNamed("spawn")->ownLog(own, RunLayout("/out")).format, "plain");
}

// The command lines are those the stacks had before they were classes.
TEST(LauncherPlans, EachStackPlansItsCommandLine) {
  const auto py = parse("launcher = \"builtin\"\nstacks = [\"builtin\", \"torchrun\", \"launch\", \"spawn\", \"external\"]\n"
                        "trainer = \"command\"\ncommand = [\"python3\", \"/t.py\"]\nargs = [\"--x\"]\nworld_size = 3\n");
  const Strings logs = {"--redirects", "2", "--tee", "2", "--log_dir", "/out/launcher/logs"};
  Tools tools = twoTorches();
  tools.launch_scripts_dir = launchScriptsDir();
  auto plan = [&](const scenario::Scenario& s, const std::string& stack) {
    auto p = planStack(s, stack, tools, "/out", 29500, "/sc");
    EXPECT_FALSE(p.unsupported) << stack << ": " << p.unsupported.value_or("");
    return p;
  };
  auto builtin = plan(py, "builtin@2.13");
  EXPECT_EQ(builtin.launch.launcher, "builtin");
  EXPECT_EQ(builtin.launch.nproc, 3);
  EXPECT_EQ(builtin.launch.command, (Strings{"/opt/t2/bin/python", "/t.py", "--x"}));
  auto torchrun = plan(py, "torchrun@2.13");
  EXPECT_EQ(torchrun.launch.launcher, "torchrun");
  EXPECT_EQ(torchrun.launch.nproc, 1);
  Strings want = {"/opt/t2/bin/torchrun", "--nproc_per_node=3", "--master_port=29500"};
  want.insert(want.end(), logs.begin(), logs.end());
  want.insert(want.end(), {"/t.py", "--x"});
  EXPECT_EQ(torchrun.launch.command, want);
  auto launch = plan(py, "launch@1.13");
  EXPECT_EQ(launch.launch.launcher, "launch");
  want = {"/usr/bin/python3", "-m", "torch.distributed.launch", "--use_env", "--nproc_per_node=3", "--master_port=29500"};
  want.insert(want.end(), logs.begin(), logs.end());
  want.insert(want.end(), {"/t.py", "--x"});
  EXPECT_EQ(launch.launch.command, want);
  auto spawn = plan(py, "spawn@2.13");
  EXPECT_EQ(spawn.launch.launcher, "spawn");
  // spawn runs the per-rank script as the spawned function, through its runner.
  EXPECT_EQ(spawn.launch.command, (Strings{"/opt/t2/bin/python", tools.launch_scripts_dir + "/spawn_runner.py", "--nprocs",
                                           "3", "--port", "29500", "/t.py", "--x"}));
  auto external = plan(py, "external");
  EXPECT_EQ(external.stack, "external");
  EXPECT_EQ(external.launch.launcher, "external");
  EXPECT_EQ(external.launch.command, (Strings{"/opt/t2/bin/python", "/t.py", "--x"}));

  // The reference trainer: torchrun and launch run it with --no_python;
  // spawn as a script that calls its library (none is built beside /b);
  // external cannot run it.
  const auto ref = parse("launcher = \"torchrun\"\nstacks = [\"torchrun\", \"launch\", \"spawn\", \"external\"]\nworld_size = 2\n");
  auto ref_torchrun = plan(ref, "torchrun@1.13");
  ASSERT_GE(ref_torchrun.launch.command.size(), 2u);
  EXPECT_EQ(ref_torchrun.launch.command[ref_torchrun.launch.command.size() - 2], "--no_python");
  EXPECT_EQ(ref_torchrun.launch.command.back(), "/b/faultline-trainer-torch1.13");
  auto ref_launch = plan(ref, "launch@1.13");
  ASSERT_GE(ref_launch.launch.command.size(), 2u);
  EXPECT_EQ(ref_launch.launch.command[ref_launch.launch.command.size() - 2], "--no_python");
  EXPECT_EQ(ref_launch.launch.command.back(), "/b/faultline-trainer-torch1.13");
  for (const char* stack : {"spawn", "external"}) {
    auto p = planStack(ref, stack, tools, "/out", 29500, "/sc");
    ASSERT_TRUE(p.unsupported) << stack;
  }
  EXPECT_EQ(*planStack(ref, "spawn", tools, "/out", 1, "/sc").unsupported,
            "the reference trainer's library (libfaultline-trainer-torch2.13.so) was not built beside "
            "/b/faultline-trainer-torch2.13; a Python rank calls the trainer there");
}

// `faultline stacks` lists what each launcher offers, per install, newest first.
TEST(LauncherOffers, AvailableStacksComeFromTheLaunchers) {
  auto t = twoTorches();
  t.torches[0].has_launch = false;
  t.torches[1].trainer.clear();
  t.torches.push_back({"/opt/bad/bin/python", "", "", "", "", false, "cannot run /opt/bad/bin/python"});
  const auto stacks = availableStacks(t.torches, /*check=*/false);
  std::vector<std::string> names;
  for (const auto& a : stacks) names.push_back(a.name);
  EXPECT_EQ(names, (Strings{"builtin@2.13", "torchrun@2.13", "torchrun-multinode@2.13", "launch@2.13", "spawn@2.13",
                            "slurm@2.13", "builtin@1.13", "torchrun@1.13", "torchrun-multinode@1.13", "launch@1.13",
                            "spawn@1.13", "slurm@1.13", "builtin", "torchrun", "torchrun-multinode", "launch", "spawn",
                            "slurm", "external"}));
  EXPECT_EQ(stacks[0].program, "faultline's launcher; Python trainers on /opt/t2/bin/python; reference trainer /b/faultline-trainer-torch2.13");
  EXPECT_EQ(stacks[1].program, "/opt/t2/bin/torchrun");
  EXPECT_EQ(stacks[2].program, "/opt/t2/bin/torchrun");  // torchrun-multinode: the same torchrun, one per node
  EXPECT_EQ(stacks[3].problem, "torch 2.13.0+cpu no longer ships torch.distributed.launch");
  EXPECT_EQ(stacks[4].program, "/opt/t2/bin/python (torch.multiprocessing.spawn)");
  EXPECT_EQ(stacks[6].problem, "Python trainers only: no reference trainer built against torch 1.13 (faultline-trainer-torch1.13)");
  EXPECT_EQ(stacks[9].program, "/usr/bin/python3 -m torch.distributed.launch");
  EXPECT_TRUE(stacks[9].problem.empty());
  EXPECT_EQ(stacks[12].problem, "cannot run /opt/bad/bin/python");
  EXPECT_EQ(stacks[18].program, "the scenario's own command");
  EXPECT_TRUE(stacks[18].torch.empty());
}

}  // namespace
}  // namespace faultline::launch
