// 64 ranks of the reference trainer on a small machine, end to end through
// `faultline exec`: a clean run is clean, and a fault in rank 37 is diagnosed
// on rank 37 with every other rank collateral or ended by the teardown.
// Minutes on 2 cores, so CTest label `scale`, registered only with
// -DFAULTLINE_SCALE_TESTS=ON (tests/cli/CMakeLists.txt).
#include <gtest/gtest.h>

#include "harness/model/report.h"
#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

using faultline::testing::LeakGuard;
using faultline::testing::readFile;
using faultline::testing::TempDir;

constexpr int kWorld = 64;
// A tiny model and a few steps: the test is about 64 processes, not training.
const std::vector<std::string> kTrainerArgs = {"--steps", "10", "--hidden", "16", "--batch-size", "8",
                                               "--fingerprint-every", "0"};

int runFaultline(std::vector<std::string> args, const std::string& log) {
  testing::SpawnOptions o;
  o.argv = std::move(args);
  o.argv.insert(o.argv.begin(), FL_FAULTLINE);
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::runChild(o).code();
}

std::vector<std::string> execArgs(const std::string& out, const std::vector<std::string>& fault) {
  // The deadline only bounds a broken run; a 64-rank start-up on 2 loaded cores takes a minute or two.
  std::vector<std::string> a = {"exec", "--nproc", std::to_string(kWorld), "--deadline", "900", "--grace", "10",
                                "-o", out, "--", FL_TRAINER};
  a.insert(a.end(), kTrainerArgs.begin(), kTrainerArgs.end());
  a.insert(a.end(), fault.begin(), fault.end());
  return a;
}

TEST(Scale, CleanRunOfSixtyFourRanksIsClean) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  EXPECT_EQ(runFaultline(execArgs(out, {}), dir / "log"), 0) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kClean) << readFile(dir / "log");
  EXPECT_FALSE(report->root_cause);
  EXPECT_TRUE(report->teardown.clean);
  ASSERT_EQ(report->ranks.size(), static_cast<size_t>(kWorld));
  for (const auto& r : report->ranks) {
    EXPECT_EQ(r.exit_code, 0) << "rank " << r.rank << ": " << r.diagnosis;
    EXPECT_EQ(r.role, RankRole::kClean) << "rank " << r.rank;
  }
}

TEST(Scale, FaultInRankThirtySevenOfSixtyFourIsTheRootCause) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int status = runFaultline(
      execArgs(out, {"--fault", "cpp_exception", "--fault-rank", "37", "--fault-step", "2"}), dir / "log");
  EXPECT_EQ(status, 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(dir / "log");
  EXPECT_EQ(report->root_cause->rank, 37) << report->root_cause->summary;
  EXPECT_EQ(report->root_cause->kind, Kind::kCppException) << report->root_cause->summary;
  EXPECT_TRUE(report->teardown.clean);
  ASSERT_EQ(report->ranks.size(), static_cast<size_t>(kWorld));
  for (const auto& r : report->ranks) {
    if (r.rank == 37) {
      EXPECT_EQ(r.role, RankRole::kRootCause) << r.diagnosis;
    } else {
      EXPECT_TRUE(r.role == RankRole::kCollateral || r.role == RankRole::kKilledByTeardown)
          << "rank " << r.rank << ": " << roleName(r.role) << ": " << r.diagnosis;
    }
  }
}

}  // namespace
}  // namespace faultline
