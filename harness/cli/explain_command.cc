// `faultline explain`: read report.json, diagnose again from the run's files, print.
#include "harness/cli/explain_command.h"

#include <ostream>

#include "harness/model/report.h"
#include "harness/diagnose/diagnose.h"

namespace faultline::cli {

int runExplain(const std::string& run_dir, bool json, std::ostream& out, std::ostream& err) {
  auto report = readReport(run_dir + "/report.json");
  if (!report) {
    err << "faultline explain: " << report.error().str() << "\n";
    return 2;
  }
  // Start from the supervisor's facts only: diagnosis output is recomputed.
  report->root_cause.reset();
  report->findings.clear();
  try {
    auto d = diagnose::diagnoseRun(run_dir, *report);
    if (!d) {
      err << "faultline explain: diagnosis failed: " << d.error().str() << "\n";
      return 3;
    }
  } catch (const std::exception& e) {
    err << "faultline explain: diagnosis failed: " << e.what() << "\n";
    return 3;
  }
  if (json) {
    out << toJson(*report).dump(2) << "\n";
  } else {
    out << "run: " << run_dir << "\n";
    out << "stack: " << report->stack.launcher << ", " << report->stack.world_size << " rank(s)\n";
    if (report->root_cause) {
      out << "root cause: " << report->root_cause->summary << "\n";
      for (const auto& l : report->root_cause->layers) out << "  [" << l.layer << "] " << l.text << "\n";
    } else {
      out << "root cause: none found\n";
    }
    for (const auto& r : report->ranks) {
      out << "  rank " << r.rank << ": " << roleName(r.role) << " - " << r.diagnosis << "\n";
    }
    for (const auto& f : report->findings) out << "finding: " << kindName(f.kind) << ": " << f.summary << "\n";
    out << "teardown: " << (report->teardown.clean ? "clean" : "not clean") << " ("
        << escalationName(report->teardown.escalation) << ", " << report->teardown.duration_ms << " ms)\n";
  }
  const bool failure = report->root_cause || !report->findings.empty();
  return failure ? 1 : 0;
}

}  // namespace faultline::cli
