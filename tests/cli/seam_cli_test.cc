// `faultline exec` in process, its run-directory writes failing through the
// OS seam: a report.json that cannot be written (ENOSPC) leaves the
// provisional report and the supervisor's record, and exits 3.
#include <signal.h>

#include <cerrno>
#include <sstream>

#include <gtest/gtest.h>

#include "harness/cli/exec_command.h"
#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "tests/support/faulty_sys.h"
#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

using faultline::testing::FaultySys;
using faultline::testing::hostilePath;
using faultline::testing::LeakGuard;
using faultline::testing::TempDir;
using Call = FaultySys::Call;

TEST(ExecSeam, NoSpaceForTheReportLeavesTheProvisionalOneAndExitsThree) {
  LeakGuard guard;
  TempDir dir;
  cli::ExecOptions opts;
  opts.nproc = 2;
  opts.grace_s = 1;
  opts.out_dir = dir / "run";
  opts.command = {hostilePath(), "1=exit:3", "*=sleep:60"};
  FaultySys sys;
  // The provisional report goes through; the real one finds the disk full.
  sys.add(FaultySys::Rule(Call::kWrite, ENOSPC).onPath("report.json.tmp").skipping(1));
  std::ostringstream out, err;
  int status;
  {
    os::ScopedSys scoped(sys);
    status = cli::runExec(opts, out, err);
  }
  ::signal(SIGINT, SIG_DFL);  // superviseStack leaves the CLI's dispositions
  ::signal(SIGTERM, SIG_DFL);
  EXPECT_EQ(status, 3) << err.str();
  EXPECT_EQ(sys.failed(Call::kWrite), 1);
  EXPECT_NE(err.str().find("no report written"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("No space left on device"), std::string::npos) << err.str();
  auto report = readReport(opts.out_dir + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kError);
  EXPECT_NE(report->problems.harness_error.value_or("").find("ended before it wrote"), std::string::npos);
  auto record = readSupervisorRecord(opts.out_dir + "/supervisor.json");
  ASSERT_TRUE(record) << record.error().str();
  EXPECT_EQ(record->ranks.size(), 2u);
}

}  // namespace
}  // namespace faultline
