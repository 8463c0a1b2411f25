// Start-up failures that print no traceback.
#include "harness/diagnose/startup_error.h"

#include <string>

#include "harness/diagnose/text.h"

namespace faultline::diagnose {

std::optional<Evidence> parseCantOpenFile(std::string_view line) {
  const std::string_view t = trim(line);
  const size_t p = t.find(": can't open file '");
  if (p == std::string_view::npos || t.find("[Errno ") == std::string_view::npos) return std::nullopt;
  Evidence e;
  e.kind = Kind::kExitCode;
  e.origin = "stderr";
  e.message = std::string(t);
  e.command_line = true;
  return e;
}

std::optional<Evidence> parseUsageError(const std::vector<std::string_view>& lines, size_t i) {
  if (i >= lines.size()) return std::nullopt;
  const std::string_view t = trim(lines[i]);
  const size_t p = t.find(": error: ");
  if (p == std::string_view::npos || p == 0 || t.find(' ') < p) return std::nullopt;  // "PROG: error: ..."
  // argparse's pair: "usage: PROG ..." then "PROG: error: ...", one program
  // (not another's line after it: "slurmstepd-n1: error: *** STEP ...
  // CANCELLED ***" in a task's stderr when srun ends the job).
  const std::string_view prog = t.substr(0, p);
  for (size_t k = i; k-- > 0 && i - k <= 40;) {
    const std::string_view u = trim(lines[k]);
    if (u.substr(0, 7) == "usage: " && u.substr(7, prog.size()) == prog &&
        (u.size() == 7 + prog.size() || u[7 + prog.size()] == ' ')) {
      Evidence e;
      e.kind = Kind::kExitCode;
      e.origin = "stderr";
      e.message = std::string(t);
      e.command_line = true;
      return e;
    }
  }
  return std::nullopt;
}

}  // namespace faultline::diagnose
