// The report of a run, built once from the stages' values: the supervisor's
// record, the diagnosis (or why there is none), the judged expectations and
// what the command knows (scenario, stack, wall time). A live run and
// `faultline explain` take the same path: reportOfRun.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/diagnosis.h"
#include "harness/model/error.h"
#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "harness/model/verdict.h"
#include "harness/scenario/scenario.h"

namespace faultline::assemble {

// What the command knows that the run directory does not.
struct RunContext {
  std::optional<ScenarioRef> scenario;
  std::string stack;  // the stack as resolved ("torchrun@2.13"); "": the supervisor's launcher
  std::string torch;  // the torch version the stack ran; "": unknown or none
  // A scenario's expectations, judged against the report; null: none (exec).
  const std::vector<scenario::Expect>* expect = nullptr;
  FailOn fail_on = FailOn::kError;  // the least finding severity that makes a run diagnosed
  int64_t wall_ms = 0;
};

// The stages' values for one run.
struct RunValues {
  std::optional<SupervisorRecord> supervisor;   // supervisor.json; absent when it could not be read
  std::optional<diagnose::Diagnosis> diagnosis;  // absent: interrupted, or the diagnosis failed
  std::string diagnose_error;                    // non-empty: why the diagnosis failed
  std::map<int, std::string> stderr_tails;       // without a diagnosis: each rank's stderr tail
};

// Pure. The verdict is decided here, once: incomplete when interrupted;
// diagnosed for a root cause, a finding of at least ctx.fail_on's severity, a
// rank or launcher that did not exit 0, an unclean teardown or a supervisor
// trigger; clean otherwise, unresolved instead when the diagnosis failed.
// With ctx.expect, the expectations are judged against that report and the
// scenario's verdict replaces it (judge::scenarioVerdict).
Report assembleReport(const RunValues& values, const RunContext& ctx);

// Reads RUN_DIR/supervisor.json (or takes `record`, the one just written
// there), diagnoses RUN_DIR unless the run was interrupted (a diagnosis that
// fails or throws is problems.diagnose_error), and assembles. Never throws for
// what the run directory holds.
Report reportOfRun(const std::string& run_dir, const RunContext& ctx,
                   std::optional<SupervisorRecord> record = std::nullopt);

// A run that could not happen: verdict error with problems.harness_error.
Report harnessErrorReport(const std::string& launcher, const std::vector<std::string>& command, const Error& error,
                          int64_t wall_ms);
// A scenario that does not apply to the stack: verdict unsupported with problems.unsupported_reason.
Report unsupportedReport(const std::string& stack, const std::string& torch, int world_size, const std::string& reason);
// A suite's run that left no readable report.json (its `faultline run`
// crashed before the provisional one, say): verdict error, naming the run's log.
Report missingRunReport(const ScenarioRef& scenario, const Error& why, const std::string& log_path);
// A scenario file that does not parse, in a suite: verdict unresolved with
// extra.bad_input (file:line:col and what was expected).
Report badScenarioReport(const ScenarioRef& scenario, const std::string& stack, const std::string& message);

// The version written to report.json's harness.version.
std::string harnessVersion();

}  // namespace faultline::assemble
