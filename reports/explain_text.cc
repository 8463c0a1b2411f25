// explainText (moved from cli/explain_command.cc).
#include "reports/explain_text.h"

#include <sstream>

#include "reports/render.h"

namespace faultline::reports {

std::string explainText(const Report& r, const std::string& run_dir) {
  std::ostringstream out;
  out << "run: " << run_dir << "\n";
  out << "stack: " << r.stack.launcher << ", " << r.stack.world_size << " rank(s)\n";
  if (r.root_cause) {
    out << "root cause: " << r.root_cause->summary << "\n";
    for (const auto& l : blameLines(*r.root_cause)) out << "  " << l << "\n";
    for (const auto& l : r.root_cause->layers) out << "  [" << l.layer << "] " << l.text << "\n";
  } else {
    out << "root cause: none found\n";
  }
  for (const auto& k : r.ranks) out << "  rank " << k.rank << ": " << roleName(k.role) << " - " << k.diagnosis << "\n";
  for (const auto& f : r.findings) out << "finding: " << kindName(f.kind) << ": " << f.summary << "\n";
  for (const auto& f : r.faults) {
    out << "fault: " << f.fault.rule << " (" << f.fault.point << "): "
        << (f.struck ? "struck" : "NOT struck: " + f.reason) << "\n";
  }
  out << "teardown: " << (r.teardown.clean ? "clean" : "not clean") << " (" << escalationName(r.teardown.escalation)
      << ", " << r.teardown.duration_ms << " ms)\n";
  return out.str();
}

}  // namespace faultline::reports
