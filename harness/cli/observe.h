// The part of every command that runs a stack: supervise it, record what the
// supervisor saw, build the report and diagnose it. Shared by exec, run and suite.
#pragma once

#include <chrono>
#include <iosfwd>

#include "harness/model/report.h"
#include "harness/supervise/supervisor.h"

namespace faultline::cli {

struct Observed {
  Report report;       // verdict: clean | diagnosed | incomplete (before any judging)
  bool interrupted = false;
};

// Errors only when the stack could not be started (the caller writes an
// error report); once it ran, everything observed is in the report, and
// report.json, supervisor.json are written under opts.out_dir.
Result<Observed> observeStack(const supervise::SuperviseOptions& opts, std::chrono::steady_clock::time_point t0,
                              std::ostream& err);

// A report for a run that could not happen: verdict error (or unsupported).
Report harnessErrorReport(const std::string& launcher, const std::vector<std::string>& command, const Error& error,
                          int64_t wall_ms);

}  // namespace faultline::cli
