// Start-up failures without a traceback, as CPython and argparse print them
// (captured from real runs under torch 1.13's and 2.13's interpreters, with
// torchrun's "[default0]:" prefix where it adds one).
#include "harness/diagnose/startup_error.h"

#include <gtest/gtest.h>

#include "harness/diagnose/rank_log.h"

namespace faultline::diagnose {
namespace {

TEST(StartupError, CantOpenFile) {
  auto e = parseCantOpenFile(
      "/usr/bin/python3: can't open file '/work/run/no_such_train.py': [Errno 2] No such file or directory");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, Kind::kExitCode);
  EXPECT_FALSE(e->collateral);
  EXPECT_TRUE(e->command_line);  // the command line named it: every rank running it fails alike
  EXPECT_EQ(e->message,
            "/usr/bin/python3: can't open file '/work/run/no_such_train.py': [Errno 2] No such file or directory");
  EXPECT_FALSE(parseCantOpenFile("I can't open file 'x' today"));  // no errno: not the interpreter's line
}

TEST(StartupError, ArgparseErrorAfterItsUsage) {
  const std::vector<std::string_view> lines = {
      "usage: needs_data_flag.py [-h] --data DATA [--epochs EPOCHS]",
      "needs_data_flag.py: error: the following arguments are required: --data",
  };
  auto e = parseUsageError(lines, 1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "needs_data_flag.py: error: the following arguments are required: --data");
  EXPECT_TRUE(e->command_line);
  // Without the usage block it is any program's "error:" line.
  const std::vector<std::string_view> alone = {"loader: error: retrying shard 3"};
  EXPECT_FALSE(parseUsageError(alone, 0));
  const std::vector<std::string_view> prose = {"usage: x", "The run hit an error: disk full"};
  EXPECT_FALSE(parseUsageError(prose, 1));
  // Another program's "error:" line after the usage block is not the usage
  // error (a Slurm task's stderr when srun cancels the step).
  const std::vector<std::string_view> slurm = {
      lines[0], lines[1], "slurmstepd-n1: error: *** STEP 392.0 ON n1 CANCELLED AT 2026-12-05T14:36:53 ***"};
  EXPECT_FALSE(parseUsageError(slurm, 2));
  const RankLog log = scanRankLog(std::string(slurm[0]) + "\n" + std::string(slurm[1]) + "\n" + std::string(slurm[2]) + "\n");
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors[0].message, slurm[1]);
}

TEST(StartupError, FoundInARanksOutputUnderTorchrunsPrefix) {
  RankLog log = scanRankLog(
      "[default1]:/opt/faultline/torch-2.13/bin/python: can't open file '/w/no_such_train.py': [Errno 2] No such file "
      "or directory\n");
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors[0].message.rfind("/opt/faultline/torch-2.13/bin/python: can't open file", 0), 0u);
}

}  // namespace
}  // namespace faultline::diagnose
