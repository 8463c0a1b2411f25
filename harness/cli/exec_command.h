// `faultline exec`: observe any command under containment and write the run directory.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/rank_env.h"
#include "harness/model/verdict.h"

namespace faultline::cli {

struct ExecOptions {
  std::optional<int> nproc;
  // --max-restarts N (builtin): a failed rank ends the attempt and every rank
  // starts again, up to N times, as under torchrun --max-restarts.
  int max_restarts = 0;
  std::string launcher;  // "" = builtin (CONTRACT.md: builtin is the default with --nproc)
  // The fixed hang timeout, the upper bound of the adaptive detection: 5
  // minutes with no progress, where Gloo's own default waits 30 and NCCL's
  // watchdog 10. 0: off.
  double hang_timeout_s = 300;
  double hang_factor = 10;     // --hang-factor: adaptive detection (0: off)
  double hang_floor_s = 0.5;   // --hang-floor
  double hang_idle_s = 1.0;    // --hang-idle: the idle rule (0: off)
  double deadline_s = 0;
  double grace_s = 3;
  std::string out_dir = "faultline-out";
  std::vector<std::string> command;
  bool allow_cgroup = true;  // FAULTLINE_NO_CGROUP=1 forces the subreaper fallback
  launch::Instruments instruments;  // the black-box instruments; empty with --no-instrument
  FailOn fail_on = FailOn::kError;  // --fail-on: the least finding severity that fails the run
  // --fault KIND:rank=R:step=N... (repeatable): scripted faults, struck by the
  // Python shim inside the ranks or by the supervisor from outside (by=supervisor).
  std::vector<std::string> faults;
  // --library-path PREFIX (repeatable): more library code (docs/DIAGNOSIS.md section 8).
  std::vector<std::string> library_paths;
};

// Runs the stack and writes OUT/report.json and OUT/supervisor.json. Returns
// the exit status of CONTRACT.md section 1 (0 clean, 1 failure or finding or
// interrupted, 2 bad usage, 3 harness failure).
int runExec(const ExecOptions& opts, std::ostream& out, std::ostream& err);

}  // namespace faultline::cli
