// Scripted faults from the command line (`faultline exec --fault`), end to
// end: the Python shim strikes an unmodified DDP trainer at a step, the
// supervisor kills or freezes a rank from outside, and a fault no layer can
// strike is bad usage. Each run is diagnosed and torn down for real.
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

using faultline::testing::hostilePath;
using faultline::testing::LeakGuard;
using faultline::testing::readFile;
using faultline::testing::TempDir;

int runFaultline(const std::vector<std::string>& args, const std::string& log) {
  testing::SpawnOptions o;
  o.argv = {FL_FAULTLINE};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::waitChild(testing::spawnChild(o)).code();
}

// The interpreters with torch ci/deps installs: Debian's, and the 2.13 venv.
std::vector<std::string> torchPythons() {
  std::vector<std::string> out;
  for (const char* p : {"/usr/bin/python3", "/opt/faultline/torch-2.13/bin/python"}) {
    if (::access(p, X_OK) == 0) out.push_back(p);
  }
  return out;
}

std::string plainTrainer() { return std::string(FL_SOURCE_DIR) + "/scenarios/python/plain_ddp.py"; }

// The `fault` events of rank R's events file.
std::vector<nlohmann::json> faultEvents(const std::string& out, int rank) {
  std::vector<nlohmann::json> found;
  std::istringstream in(readFile(out + "/ranks/" + std::to_string(rank) + "/events.jsonl"));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("ev", "") == "fault") found.push_back(j);
  }
  return found;
}

TEST(FaultCli, TheShimStrikesAnUnmodifiedTrainerAtItsStep) {
  const auto pythons = torchPythons();
  ASSERT_FALSE(pythons.empty()) << "no python with torch (ci/deps installs them)";
  for (const std::string& python : pythons) {
    SCOPED_TRACE(python);
    LeakGuard guard;
    TempDir dir;
    const std::string out = dir / "run";
    const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "20", "--deadline", "120", "-o", out,
                                 "--fault", "exception:rank=1:step=2", "--", python, plainTrainer(), "--steps", "6"},
                                dir / "log");
    EXPECT_EQ(rc, 1) << readFile(dir / "log");
    auto report = readReport(out + "/report.json");
    ASSERT_TRUE(report) << report.error().str();
    ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
    EXPECT_EQ(report->root_cause->kind, Kind::kPythonException);
    EXPECT_EQ(report->root_cause->rank, 1);
    EXPECT_EQ(report->root_cause->exception_type, "NameError");
    ASSERT_TRUE(report->root_cause->location);
    EXPECT_NE(report->root_cause->location->file.find("plain_ddp.py"), std::string::npos);
    EXPECT_TRUE(report->teardown.clean);
    const auto faults = faultEvents(out, 1);
    ASSERT_EQ(faults.size(), 1u) << readFile(out + "/ranks/1/events.jsonl");
    EXPECT_EQ(faults[0]["kind"], "exception");
    EXPECT_EQ(faults[0]["point"], "step 2");
    EXPECT_EQ(faults[0]["source"], "shim");
    EXPECT_EQ(faults[0]["step"], 2);
    EXPECT_TRUE(faultEvents(out, 0).empty());
  }
}

TEST(FaultCli, TheSupervisorKillsARankFromOutsideAtItsStep) {
  const auto pythons = torchPythons();
  ASSERT_FALSE(pythons.empty());
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "20", "--deadline", "120", "-o", out,
                               "--fault", "sigkill:rank=0:step=3:by=supervisor", "--", pythons.back(), plainTrainer(),
                               "--steps", "8"},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
  EXPECT_EQ(report->root_cause->kind, Kind::kSignal);
  EXPECT_EQ(report->root_cause->rank, 0);
  EXPECT_EQ(report->root_cause->signal, "SIGKILL");
  EXPECT_TRUE(report->teardown.clean);
  const auto faults = faultEvents(out, 0);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["source"], "supervisor");
  EXPECT_EQ(faults[0]["point"], "step 3");
  EXPECT_EQ(faults[0]["rule"], "sigkill:rank=0:step=3");
}

// A frozen rank makes no progress whatever it was doing: the supervisor's
// hang check names it (process state T), whether or not it is instrumented.
TEST(FaultCli, AFrozenRankIsAHangThatNamesIt) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "2", "--deadline", "60", "--grace", "1",
                               "-o", out, "--fault", "freeze:rank=1:after=0.5", "--", hostilePath(), "*=sleep:30"},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto sup = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(sup) << sup.error().str();
  EXPECT_EQ(sup->trigger.kind, TriggerKind::kHang) << sup->trigger.detail;
  EXPECT_EQ(sup->trigger.rank, 1) << sup->trigger.detail;
  EXPECT_NE(sup->trigger.detail.find("stopped"), std::string::npos) << sup->trigger.detail;
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
  EXPECT_EQ(report->root_cause->rank, 1);
  EXPECT_TRUE(report->teardown.clean);
  // The teardown continues a stopped rank with its SIGTERM: it ends within the grace, no SIGKILL.
  EXPECT_EQ(report->teardown.escalation, Escalation::kSigterm);
  const auto faults = faultEvents(out, 1);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["kind"], "freeze");
  EXPECT_EQ(faults[0]["point"], "0.5 s after start");
}

TEST(FaultCli, AFaultNoLayerCanStrikeIsBadUsage) {
  TempDir dir;
  struct Case {
    std::vector<std::string> extra;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--fault", "freeze:rank=0:op=allreduce"}, "not by op"},
           {{"--fault", "nosuch:rank=0"}, "unknown fault kind 'nosuch'"},
           {{"--fault", "sigkill:rank=5"}, "out of range for world size 2"},
           {{"--fault", "undefined_symbol:rank=0"}, "is struck by: the reference trainer"},
           {{"--no-instrument", "--fault", "exception:rank=0"}, "this run has none"},
           {{"--fault", "sigkill:step=2:collective=3"}, "one point"},
       }) {
    std::vector<std::string> args = {"exec", "--nproc", "2", "-o", dir / "run"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    args.insert(args.end(), {"--", hostilePath(), "*=ok"});
    EXPECT_EQ(runFaultline(args, dir / "log"), 2) << c.extra.back();
    EXPECT_NE(readFile(dir / "log").find(c.says), std::string::npos) << readFile(dir / "log");
    EXPECT_FALSE(testing::fileExists(dir / "run/report.json"));
  }
}

}  // namespace
}  // namespace faultline
