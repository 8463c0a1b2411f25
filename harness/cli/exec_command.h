// `faultline exec`: observe any command under containment and write the run directory.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/rank_env.h"
#include "harness/model/report.h"
#include "harness/supervise/supervisor.h"

namespace faultline::cli {

struct ExecOptions {
  std::optional<int> nproc;
  std::string launcher;  // "" = builtin (CONTRACT.md: builtin is the default with --nproc)
  double hang_timeout_s = 0;
  double deadline_s = 0;
  double grace_s = 3;
  std::string out_dir = "faultline-out";
  std::vector<std::string> command;
  bool allow_cgroup = true;  // FAULTLINE_NO_CGROUP=1 forces the subreaper fallback
  launch::Instruments instruments;  // the black-box instruments; empty with --no-instrument
};

// Runs the stack and writes OUT/report.json and OUT/supervisor.json. Returns
// the exit status of CONTRACT.md section 1 (0 clean, 1 failure or finding or
// interrupted, 2 bad usage, 3 harness failure).
int runExec(const ExecOptions& opts, std::ostream& out, std::ostream& err);

// The report of a supervised run, before diagnosis (root_cause null, findings empty).
Report buildReport(const supervise::SupervisedRun& run, const std::string& out_dir, int64_t wall_ms);
// clean / diagnosed / incomplete, from facts alone.
Verdict verdictOf(const Report& report, const supervise::SupervisedRun& run);

// The last `limit` bytes of a file, cut at a line start when possible, with
// invalid UTF-8 replaced (the report is JSON).
std::string fileTail(const std::string& path, size_t limit);
std::string sanitizeUtf8(const std::string& in);

}  // namespace faultline::cli
