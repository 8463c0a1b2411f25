// Scripted faults from the command line (`faultline exec --fault`), end to
// end: the Python shim strikes an unmodified DDP trainer at a step, the
// supervisor kills or freezes a rank from outside, and a fault no layer can
// strike is bad usage. Each run is diagnosed and torn down for real.
#include <unistd.h>

#include <optional>
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

// plain_ddp.py on 2 ranks for `steps` steps, rank 0 killed from outside by
// `fault`: the root cause is its SIGKILL, and its one `fault` event is the
// supervisor's, at `point`.
std::vector<nlohmann::json> supervisorKillsRank0(const std::string& fault, const std::string& steps,
                                                 const std::string& point) {
  const auto pythons = torchPythons();
  EXPECT_FALSE(pythons.empty());
  if (pythons.empty()) return {};
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "20", "--deadline", "120", "-o", out,
                               "--fault", fault, "--", pythons.back(), plainTrainer(), "--steps", steps},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  EXPECT_TRUE(report) << report.error().str();
  if (!report) return {};
  EXPECT_TRUE(report->root_cause) << readFile(out + "/report.json");
  if (report->root_cause) {
    EXPECT_EQ(report->root_cause->kind, Kind::kSignal);
    EXPECT_EQ(report->root_cause->rank, 0);
    EXPECT_EQ(report->root_cause->signal, "SIGKILL");
  }
  EXPECT_TRUE(report->teardown.clean);
  const auto faults = faultEvents(out, 0);
  EXPECT_EQ(faults.size(), 1u);
  if (faults.size() != 1) return faults;
  EXPECT_EQ(faults[0]["source"], "supervisor");
  EXPECT_EQ(faults[0]["point"], point);
  return faults;
}

TEST(FaultCli, TheSupervisorKillsARankFromOutsideAtItsStep) {
  const auto faults = supervisorKillsRank0("sigkill:rank=0:step=3:by=supervisor", "8", "step 3");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["rule"], "sigkill:rank=0:step=3");
}

// since = "first_step": the supervisor's clock starts at the rank's first
// step, so even a time of 0 strikes mid-training, never while torch imports
// or the process group forms (which a loaded machine makes take seconds).
TEST(FaultCli, TheSupervisorsClockSinceTheFirstStepStrikesMidTraining) {
  const auto faults = supervisorKillsRank0("sigkill:rank=0:after=0:since=first_step:by=supervisor", "100000",
                                           "0 s after the first step");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["rule"], "sigkill:rank=0:after=0:since=first_step");
  ASSERT_TRUE(faults[0]["step"].is_number()) << faults[0].dump();
  EXPECT_GE(faults[0]["step"].get<int>(), 1);
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

// A native trainer that links faultline::probe and has no fault code of its
// own: the probe strikes FAULTLINE_FAULT from its step and collective calls.
struct ProbeRun {
  int rc = -1;
  std::string out, log;
  std::optional<Report> report;
};

ProbeRun runProbeTrainer(const TempDir& dir, const std::vector<std::string>& flags, const std::string& steps = "6",
                         const std::string& trainer_arg = "") {
  ProbeRun r;
  r.out = dir / "run";
  std::vector<std::string> args = {"exec", "--nproc", "2", "--deadline", "60", "--grace", "1", "-o", r.out};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", FL_PROBE_TRAINER, steps});
  if (!trainer_arg.empty()) args.push_back(trainer_arg);
  r.rc = runFaultline(args, dir / "log");
  r.log = readFile(dir / "log");
  if (auto rep = readReport(r.out + "/report.json")) r.report = std::move(*rep);
  return r;
}

TEST(FaultCli, TheProbeKillsANativeTrainersRankAtItsStep) {
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "20", "--fault", "sigkill:rank=1:step=3"});
  EXPECT_EQ(r.rc, 1) << r.log;
  ASSERT_TRUE(r.report && r.report->root_cause) << r.log;
  EXPECT_EQ(r.report->root_cause->kind, Kind::kSignal);
  EXPECT_EQ(r.report->root_cause->rank, 1);
  EXPECT_EQ(r.report->root_cause->signal, "SIGKILL");
  EXPECT_TRUE(r.report->teardown.clean);
  const auto faults = faultEvents(r.out, 1);
  ASSERT_EQ(faults.size(), 1u) << readFile(r.out + "/ranks/1/events.jsonl");
  EXPECT_EQ(faults[0]["source"], "probe");
  EXPECT_EQ(faults[0]["point"], "step 3");
  EXPECT_EQ(faults[0]["step"], 3);
  EXPECT_TRUE(faultEvents(r.out, 0).empty());
}

TEST(FaultCli, TheProbeHangsANativeTrainersCollectiveAndThePeerWaitsThere) {
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "3", "--fault", "hung_collective:rank=1:collective=2"});
  EXPECT_EQ(r.rc, 1) << r.log;
  ASSERT_TRUE(r.report && r.report->root_cause) << r.log;
  EXPECT_EQ(r.report->root_cause->kind, Kind::kHungCollective) << r.report->root_cause->summary;
  EXPECT_EQ(r.report->root_cause->rank, 1);
  EXPECT_EQ(r.report->root_cause->missing_ranks, std::vector<int>{1});
  EXPECT_EQ(r.report->root_cause->waiting_ranks, std::vector<int>{0});
  ASSERT_TRUE(r.report->root_cause->collective);
  EXPECT_EQ(r.report->root_cause->collective->seq, 2);
  EXPECT_TRUE(r.report->teardown.clean);
  const auto faults = faultEvents(r.out, 1);
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["point"], "collective #2");
}

TEST(FaultCli, TheProbeExitsWithTheCodeAndSlowsAStragglersSteps) {
  {
    LeakGuard guard;
    TempDir dir;
    const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "20", "--fault", "exit:rank=0:op=allreduce:nth=2:arg=7"});
    EXPECT_EQ(r.rc, 1) << r.log;
    ASSERT_TRUE(r.report && r.report->root_cause) << r.log;
    EXPECT_EQ(r.report->root_cause->rank, 0);
    EXPECT_EQ(r.report->root_cause->exit_code, 7);
    const auto faults = faultEvents(r.out, 0);
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["point"], "allreduce call 2");
  }
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--fault", "straggler:rank=1:step=3:arg=150"}, "5");
  EXPECT_EQ(r.rc, 0) << r.log;
  ASSERT_TRUE(r.report) << r.log;
  // Rank 1's steps from 3 on take the 150 ms sleep; its steps before do not.
  for (const Span& s : r.report->spans) {
    if (s.kind != "step" || s.rank != 1 || !s.dur_ms) continue;
    if (s.index >= 3) {
      EXPECT_GE(*s.dur_ms, 150.0) << s.name;
    } else {
      EXPECT_LT(*s.dur_ms, 150.0) << s.name;
    }
  }
  ASSERT_EQ(faultEvents(r.out, 1).size(), 1u);
}

// A native trainer that calls exit(3) and then crashes on its way out (a
// thread still calling into a library being torn down; under slurm@2.13 the
// reference trainer's data loader met torch's unregistered index_select):
// the probe records the exit asked for before the static destructors run, and
// the diagnosis reports that exit, with the crash, not the crash alone.
TEST(FaultCli, AnExitThatCrashesOnItsWayOutIsTheExitItAskedFor) {
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "20"}, "6", "exit-then-crash=1:3:3");
  EXPECT_EQ(r.rc, 1) << r.log;
  ASSERT_TRUE(r.report && r.report->root_cause) << r.log;
  const RootCause& rc = *r.report->root_cause;
  EXPECT_EQ(rc.rank, 1) << rc.summary;
  EXPECT_EQ(rc.kind, Kind::kExitCode) << rc.summary;
  EXPECT_EQ(rc.exit_code, 3) << rc.summary;
  EXPECT_EQ(rc.signal, "SIGABRT") << rc.summary;  // how its process ended
  EXPECT_NE(rc.summary.find("called exit(3), then crashed on its way out: std::runtime_error: operator registry torn "
                            "down while a thread still called it"),
            std::string::npos)
      << rc.summary;
  EXPECT_TRUE(r.report->teardown.clean);
}

TEST(FaultCli, AFaultTheProbeCannotStrikeIsBadUsageNamingIt) {
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--fault", "exception:rank=1:step=2"});
  EXPECT_EQ(r.rc, 2) << r.log;
  EXPECT_NE(r.log.find("exception is not a fault the probe strikes"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("a native trainer is struck by the probe"), std::string::npos) << r.log;
}

TEST(FaultCli, AFaultNoLayerCanStrikeIsBadUsage) {
  TempDir dir;
  struct Case {
    std::vector<std::string> extra;
    std::string says;
    bool python = false;  // a Python command (the shim's layer), else the native fixture (the probe's)
  };
  for (const Case& c : std::vector<Case>{
           {{"--fault", "freeze:rank=0:op=allreduce"}, "not by op"},
           {{"--fault", "nosuch:rank=0"}, "unknown fault kind 'nosuch'"},
           {{"--fault", "sigkill:rank=5"}, "out of range for world size 2"},
           {{"--fault", "undefined_symbol:rank=0"}, "is struck by: the reference trainer"},
           {{"--no-instrument", "--fault", "exception:rank=0"}, "this run has none", true},
           {{"--fault", "exception:rank=0"}, "exception is not a fault the probe strikes"},
           {{"--fault", "hung_collective:rank=0:arg=skip"}, "skipping a collective needs the trainer's own code"},
           {{"--fault", "sigkill:step=2:collective=3"}, "one point"},
       }) {
    std::vector<std::string> args = {"exec", "--nproc", "2", "-o", dir / "run"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    if (c.python) {
      args.insert(args.end(), {"--", "/usr/bin/python3", "-c", "pass"});
    } else {
      args.insert(args.end(), {"--", hostilePath(), "*=ok"});
    }
    EXPECT_EQ(runFaultline(args, dir / "log"), 2) << c.extra.back();
    EXPECT_NE(readFile(dir / "log").find(c.says), std::string::npos) << readFile(dir / "log");
    EXPECT_FALSE(testing::fileExists(dir / "run/report.json"));
  }
}

// A fault asked for and never struck is an error, never a clean run: each
// layer's fault aimed past the trainer's last step, and the report says which
// fault, at which point, and why (docs/CONTRACT.md, `faults`).
void expectNotStruck(const std::string& out, const std::string& log, int rc, const std::string& rule,
                     const std::string& why) {
  EXPECT_EQ(rc, 3) << log;  // verdict error
  EXPECT_NE(log.find("fault not struck: " + rule), std::string::npos) << log;
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kError);
  ASSERT_TRUE(report->problems.fault_not_struck) << readFile(out + "/report.json");
  EXPECT_NE(report->problems.fault_not_struck->find(why), std::string::npos) << *report->problems.fault_not_struck;
  ASSERT_EQ(report->faults.size(), 1u);
  EXPECT_EQ(report->faults[0].fault.rule, rule);
  EXPECT_FALSE(report->faults[0].struck);
  EXPECT_TRUE(report->teardown.clean);
  for (const char* file : {"/report.md", "/report.html"}) {
    EXPECT_NE(readFile(out + file).find("not struck"), std::string::npos) << file;
  }
}

// plain_ddp.py for `steps` steps on 2 ranks, with a `fault` it never reaches.
void pythonFaultNeverReached(const std::string& fault, const std::string& steps, const std::string& rule,
                             const std::string& why) {
  const auto pythons = torchPythons();
  ASSERT_FALSE(pythons.empty());
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "20", "--deadline", "120", "-o", out, "--fault",
                               fault, "--", pythons.back(), plainTrainer(), "--steps", steps},
                              dir / "log");
  expectNotStruck(out, readFile(dir / "log"), rc, rule, why);
}

TEST(FaultCli, AShimFaultPastTheLastStepIsAnErrorSayingHowFarTheRanksGot) {
  pythonFaultNeverReached("sigkill:rank=1:step=50", "4", "sigkill:rank=1:step=50",
                          "no aimed rank reached step 50 (rank 1 last reached step 4)");
}

TEST(FaultCli, ASupervisorFaultPastTheLastStepIsAnError) {
  pythonFaultNeverReached("sigterm:rank=0:step=40:by=supervisor", "3", "sigterm:rank=0:step=40",
                          "no aimed rank reached step 40");
}

TEST(FaultCli, ASupervisorClockThatNeverStartsIsAnErrorSayingWhy) {
  pythonFaultNeverReached("sigkill:rank=0:after=0:since=first_step:by=supervisor", "0",
                          "sigkill:rank=0:after=0:since=first_step",
                          "no aimed rank recorded a step, so the fault's clock (since its first step) never started");
}

TEST(FaultCli, AProbeFaultPastTheLastStepIsAnError) {
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "20", "--fault", "segfault:rank=1:step=30"}, "3");
  expectNotStruck(r.out, r.log, r.rc, "segfault:rank=1:step=30", "no aimed rank reached step 30");
}

// A struck fault is recorded as struck, on the rank that struck it.
TEST(FaultCli, AStruckFaultIsRecordedWithItsRank) {
  LeakGuard guard;
  TempDir dir;
  const ProbeRun r = runProbeTrainer(dir, {"--hang-timeout", "20", "--fault", "sigkill:rank=1:step=3"});
  EXPECT_EQ(r.rc, 1) << r.log;
  ASSERT_TRUE(r.report) << r.log;
  EXPECT_FALSE(r.report->problems.fault_not_struck);
  ASSERT_EQ(r.report->faults.size(), 1u);
  EXPECT_TRUE(r.report->faults[0].struck);
  EXPECT_EQ(r.report->faults[0].struck_ranks, std::vector<int>{1});
  EXPECT_EQ(r.report->faults[0].fault.by, "probe");
  auto rec = readSupervisorRecord(r.out + "/supervisor.json");
  ASSERT_TRUE(rec) << rec.error().str();
  ASSERT_EQ(rec->faults.size(), 1u);
  EXPECT_EQ(rec->faults[0].rule, "sigkill:rank=1:step=3");
  EXPECT_EQ(rec->faults[0].point, "step 3");
}

}  // namespace
}  // namespace faultline
