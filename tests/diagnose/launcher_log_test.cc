// Launcher output: torchrun's ChildFailedError block (never trusted for the
// root cause), its own crash, spawn's ProcessRaisedException, CalledProcessError.
#include "harness/diagnose/launcher_log.h"

#include <gtest/gtest.h>

#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

using testing::fixture;
using testing::readFile;

TEST(LauncherLog, TorchrunChildFailedErrorBlock) {
  LauncherLog log = parseLauncherLog(readFile(fixture("torchrun_name_error/launcher/stderr")));
  ASSERT_TRUE(log.wrapper);
  EXPECT_EQ(log.wrapper->shortType(), "ChildFailedError");
  EXPECT_FALSE(log.launcher_crashed);
  // Real torchrun 1.13 output: rank 1 raised the NameError, yet torchrun's
  // "Root Cause (first observed failure)" names rank 0 (whole-second stamps, ties to local rank 0).
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 0);
  ASSERT_EQ(log.failures.size(), 2u);
  EXPECT_EQ(log.failures[0].rank, 1);
  EXPECT_EQ(log.failures[0].local_rank, 1);
  EXPECT_EQ(log.failures[0].exit_code, 1);
  EXPECT_TRUE(log.failures[0].pid.has_value());
  EXPECT_FALSE(log.failures[0].root_cause_block);
  EXPECT_TRUE(log.failures[1].root_cause_block);
  EXPECT_EQ(log.failed_pids.size(), 1u);
  // The rank tracebacks tee'd with "[defaultN]:" are not the launcher's.
  EXPECT_TRUE(log.unattributed.empty());
}

TEST(LauncherLog, SrunBlamesTheTaskOfItsFirstLine) {
  // Real srun (Slurm 22.05, --kill-on-bad-exit): the first failed task, then
  // the tasks it ended, grouped per node.
  LauncherLog log = parseLauncherLog(
      "srun: error: n2: task 2: Exited with exit code 1\n"
      "srun: error: n1: tasks 0-1: Killed\n"
      "srun: error: n2: task 3: Killed\n");
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 2);
  EXPECT_TRUE(log.claimed_root_ranks.empty());
  EXPECT_EQ(log.srun_failed_tasks, (std::vector<int>{2, 0, 1, 3}));
}

TEST(LauncherLog, SrunFirstLineOfSeveralTasksSinglesOutNone) {
  // multinode-rank2-exception on slurm@1.13 (catalog of f0bc759): rank 2
  // raised, rank 3 of the same node failed in its next collective, and srun
  // reported both in one line, its first.
  LauncherLog log = parseLauncherLog(
      "srun: error: n2: tasks 2-3: Exited with exit code 1\n"
      "srun: error: n1: task 0: Killed\n");
  EXPECT_FALSE(log.claimed_root_rank);
  EXPECT_EQ(log.claimed_root_ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(log.srun_failed_tasks, (std::vector<int>{2, 3, 0}));
}

TEST(LauncherLog, SrunTaskListsAndLinesThatAreNotOne) {
  EXPECT_EQ(srunFailedTasks("srun: error: n1: task 12: Exited with exit code 3"), (std::vector<int>{12}));
  EXPECT_EQ(srunFailedTasks("srun: error: n1: tasks 0,2-4: Killed"), (std::vector<int>{0, 2, 3, 4}));
  EXPECT_TRUE(srunFailedTasks("srun: error: n1: tasks 3-1: Killed").empty());
  EXPECT_TRUE(srunFailedTasks("srun: error: n1: tasks 0-: Killed").empty());
  EXPECT_TRUE(srunFailedTasks("srun: error: n1: task two: Killed").empty());
  EXPECT_TRUE(srunFailedTasks("srun: error: Timed out waiting for job step to complete").empty());
  EXPECT_TRUE(srunFailedTasks("[2] srun: error: n1: task 2: Killed").empty());
}

TEST(LauncherLog, LightningChildProcessObserverBlamesTheChild) {
  // Lightning 2.6's observer in rank 0, 5 s after rank 1 exited with code 3
  // (real output; it then SIGKILLed rank 0 itself).
  LauncherLog log = parseLauncherLog(
      "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2\n"
      "[rank: 1] Child process with PID 14917 terminated with code 3. Forcefully terminating all other processes "
      "to avoid zombies \xF0\x9F\xA7\x9F\n");
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 1);
  ASSERT_EQ(log.failed_pids.size(), 1u);
  EXPECT_EQ(log.failed_pids[0].pid, 14917);
  EXPECT_EQ(log.failed_pids[0].exit_code, 3);
  // Every other process it then SIGKILLs: all but that child.
  EXPECT_EQ(log.observer_killed_all_but, 14917);
}

TEST(LauncherLog, RayWorkerGroupErrorListsEveryFailedRank) {
  // Ray 2.60's driver after rank 2 of 3 got a SIGTERM (real output,
  // shortened): its report lists every failed worker in rank order, those
  // with the same error together, and so blames no one rank.
  const std::string report =
      "ray.train.WorkerGroupError: Training failed due to worker errors:\n"
      "[Rank 0,1 Error Snippet]:\n"
      "Traceback (most recent call last):\n"
      "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:390.\n"
      "\n"
      "[Rank 2 Error Snippet]:\n"
      "A worker health check failed.\n";
  LauncherLog log = parseLauncherLog(
      "\x1b[36m(TrainController pid=18833)\x1b[0m Error: Training failed due to worker errors:\n"
      "\x1b[36m(TrainController pid=18833)\x1b[0m [Rank 0,1 Error Snippet]:\n"
      "\x1b[36m(TrainController pid=18833)\x1b[0m [Rank 2 Error Snippet]:\n" + report);
  EXPECT_EQ(log.ray_failed_ranks, (std::set<int>{0, 1, 2}));
  EXPECT_FALSE(log.claimed_root_rank);
}

TEST(LauncherLog, RayBlamesTheOneRankItsFirstReportLists) {
  // A restarted job whose first attempt failed in rank 1 and whose second
  // failed in rank 0: the first report is the run's.
  LauncherLog log = parseLauncherLog(
      "(TrainController pid=7) Error: Training failed due to worker errors:\n"
      "(TrainController pid=7) [Rank 1 Error Snippet]:\n"
      "(TrainController pid=7) NameError: name 'c' is not defined\n"
      "(TrainController pid=7) Error: Training failed due to worker errors:\n"
      "(TrainController pid=7) [Rank 0-1 Error Snippet]:\n");
  EXPECT_EQ(log.ray_failed_ranks, (std::set<int>{1}));
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 1);
}

TEST(LauncherLog, DeepSpeedBlamesTheLastRankItStarted) {
  // DeepSpeed 0.19's launch.py after rank 1 of 3 raised a NameError (real
  // output): it SIGTERMs every rank, then prints the command of the last
  // rank it started (local_rank 2) with rank 1's exit code. Its logger
  // writes to stdout.
  LauncherLog log = parseLauncherLog("");
  readLauncherStdout(
      "[2026-12-05 02:45:49,940] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 13679\n"
      "[2026-12-05 02:45:49,942] [INFO] [launch.py:253:sigkill_handler] Killing subprocess 13680\n"
      "[2026-12-05 02:45:49,944] [ERROR] [launch.py:259:sigkill_handler] ['/opt/fw/bin/python3', '-u', "
      "'deepspeed_bugs.py', '--local_rank=2', '--bug', 'name_error'] exits with return code = 1\n",
      log);
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 2);
  EXPECT_EQ(log.signals_sent[13679], std::set<std::string>{"SIGTERM"});
  EXPECT_EQ(log.signals_sent[13680], std::set<std::string>{"SIGTERM"});
  EXPECT_EQ(log.failed_rank_return_code, 1);  // the failed rank's (rank 1's) exit
  EXPECT_TRUE(log.failed_pids.empty());
  // launch.py logs "Killing subprocess" for the rank that failed too, dead
  // already: its exit (code 1, the one reported) was its own; a peer that
  // then died of the SIGTERM was killed by it.
  EXPECT_FALSE(launcherSignalEnded(log, 13679, true, 1, std::nullopt));
  EXPECT_TRUE(launcherSignalEnded(log, 13680, true, std::nullopt, "SIGTERM"));
  EXPECT_TRUE(launcherSignalEnded(log, 13680, false, std::nullopt, std::nullopt));
  EXPECT_FALSE(launcherSignalEnded(log, 4242, true, std::nullopt, "SIGTERM"));  // never signalled
  // A rank killed by a signal of its own (-15: SIGTERM) set it all off.
  LauncherLog by_signal = log;
  by_signal.failed_rank_return_code = -15;
  EXPECT_FALSE(launcherSignalEnded(by_signal, 13679, true, std::nullopt, "SIGTERM"));
  // Run with --no_local_rank its command names no rank: no blame.
  LauncherLog bare = parseLauncherLog("");
  readLauncherStdout(
      "[2026-12-05 02:45:49,944] [ERROR] [launch.py:259:sigkill_handler] ['/bin/false'] exits with return code = 1\n", bare);
  EXPECT_FALSE(bare.claimed_root_rank);
}

TEST(LauncherLog, TorchrunDefaultFlagsCrash) {
  // Debian torchrun 1.13 on Python 3.11 dies in to_map with its stock flags.
  LauncherLog log = parseLauncherLog(readFile(fixture("torchrun_default_flags/launcher/stderr")));
  ASSERT_TRUE(log.wrapper);
  EXPECT_TRUE(log.launcher_crashed);
  EXPECT_EQ(log.wrapper->type, "AttributeError");
  EXPECT_EQ(log.wrapper->message, "'NoneType' object has no attribute 'get'");
  EXPECT_EQ(log.wrapper->innermost()->function, "to_map");
}

TEST(LauncherLog, SpawnProcessRaisedException) {
  LauncherLog log = parseLauncherLog(readFile(fixture("spawn_name_error/launcher/stderr")));
  ASSERT_TRUE(log.spawn_rank);
  EXPECT_EQ(*log.spawn_rank, 1);
  ASSERT_TRUE(log.spawn_chain);
  EXPECT_EQ(log.spawn_chain->final().type, "NameError");
  EXPECT_EQ(log.spawn_chain->final().innermost()->line, 26);
  ASSERT_TRUE(log.wrapper);
  EXPECT_EQ(log.wrapper->shortType(), "ProcessRaisedException");
  EXPECT_FALSE(log.launcher_crashed);
  // spawn's own report blames the process it names, judged like torchrun's Root Cause.
  EXPECT_EQ(log.claimed_root_rank, 1);
}

TEST(LauncherLog, SpawnProcessExitedWithSignal) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/run.py\", line 30, in <module>\n"
      "    mp.spawn(train, nprocs=2)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 149, in join\n"
      "    raise ProcessExitedException(\n"
      "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV\n";
  LauncherLog log = parseLauncherLog(text);
  ASSERT_TRUE(log.spawn_rank);
  EXPECT_EQ(*log.spawn_rank, 1);
  EXPECT_EQ(log.spawn_signal, "SIGSEGV");
  EXPECT_EQ(log.claimed_root_rank, 1);
}

TEST(LauncherLog, CalledProcessErrorIsAWrapper) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/launch.py\", line 260, in main\n"
      "    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\n"
      "subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'train.py', '--local_rank=1']' returned "
      "non-zero exit status 1.\n";
  LauncherLog log = parseLauncherLog(text);
  ASSERT_TRUE(log.wrapper);
  EXPECT_EQ(log.wrapper->shortType(), "CalledProcessError");
  EXPECT_FALSE(log.launcher_crashed);
  EXPECT_TRUE(isLauncherWrapperType("subprocess.CalledProcessError"));
}

TEST(LauncherLog, SignalAsNegativeExitCode) {
  const std::string text =
      "Failures:\n  <NO_OTHER_FAILURES>\n"
      "------------------------------------------------------------\n"
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-11-30_14:10:30\n"
      "  host      : localhost\n"
      "  rank      : 3 (local_rank: 3)\n"
      "  exitcode  : -11 (pid: 4242)\n"
      "  error_file: <N/A>\n";
  LauncherLog log = parseLauncherLog(text);
  ASSERT_EQ(log.failures.size(), 1u);
  EXPECT_EQ(log.failures[0].rank, 3);
  EXPECT_EQ(log.failures[0].signal, "SIGSEGV");
  EXPECT_FALSE(log.failures[0].exit_code);
  EXPECT_EQ(log.failures[0].pid, 4242);
}

TEST(LauncherLog, EmptyTruncatedAndBinary) {
  EXPECT_FALSE(parseLauncherLog("").wrapper);
  LauncherLog t = parseLauncherLog("Root Cause (first observed failure):\n[1]:\n  exitcode  : ");
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_FALSE(t.failures[0].exit_code);
  LauncherLog b = parseLauncherLog(std::string("\x00\xFF\xFE\n[default0]:\xFF\n", 9));
  EXPECT_FALSE(b.wrapper);
}

}  // namespace
}  // namespace faultline::diagnose
