// `faultline explain`: a finished run's report built again from its files,
// by the path a live run takes (supervisor.json + diagnosis + assembly), printed.
#include "harness/cli/explain_command.h"

#include <ostream>

#include "harness/assemble/assemble.h"
#include "harness/model/report.h"
#include "harness/model/run_layout.h"
#include "reports/explain_text.h"

namespace faultline::cli {

int runExplain(const std::string& run_dir, bool json, std::ostream& out, std::ostream& err) {
  const RunLayout layout(run_dir);
  auto stored = readReport(layout.reportPath());
  if (!stored) {
    err << "faultline explain: " << stored.error().str() << "\n";
    return 2;
  }
  std::optional<SupervisorRecord> record;
  if (auto rec = readSupervisorRecord(layout.supervisorPath())) record = std::move(*rec);
  const bool supervised = record.has_value();
  assemble::RunContext ctx;
  ctx.scenario = stored->scenario;
  ctx.stack = stored->stack.launcher;
  ctx.torch = stored->stack.torch;
  ctx.wall_ms = stored->harness.wall_ms;
  Report report = assemble::reportOfRun(run_dir, ctx, std::move(record));
  if (report.problems.diagnose_error) {
    err << "faultline explain: diagnosis failed: " << *report.problems.diagnose_error << "\n";
    return 3;
  }
  // The run's own verdict, diagnosed again, decides the exit status.
  const int status = exitStatusOf(report);
  // What the diagnosis does not decide stays as stored: how the run was
  // started, the scenario's judged expectations and verdict, fields of
  // other stages; without supervisor.json, the supervisor's facts too.
  report.stack = stored->stack;
  report.expectations = stored->expectations;
  report.verdict = stored->verdict;
  report.harness = stored->harness;
  report.problems.harness_error = stored->problems.harness_error;
  report.problems.unsupported_reason = stored->problems.unsupported_reason;
  report.problems.bad_input = stored->problems.bad_input;
  if (!supervised) {
    report.launcher.exit_code = stored->launcher.exit_code;
    report.launcher.signal = stored->launcher.signal;
    report.teardown = stored->teardown;
  }
  for (const auto& [key, value] : stored->extra.items()) {
    const bool diagnosed = key == "unchecked_findings" || key == "launcher_root_cause_rank" || key == "stack_dumps";
    if (!diagnosed && !report.extra.contains(key)) report.extra[key] = value;
  }
  if (json) {
    out << toJson(report).dump(2) << "\n";
  } else {
    out << reports::explainText(report, run_dir);
  }
  return status;
}

}  // namespace faultline::cli
