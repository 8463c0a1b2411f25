// The diagnose stage: a pure function of a run directory (logs, events, error
// files, stack dumps, supervisor.json) that names the primary failure, marks
// every other rank's role, and reports the silent pitfalls as findings.
#pragma once

#include <string>

#include "harness/model/error.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// Reads RUN_DIR (ranks/<R>/{stdout,stderr,events.jsonl,error.json,stacks.txt},
// launcher/{stdout,stderr,logs/...}, supervisor.json) and fills
// report.root_cause, report.ranks[].role and .diagnosis, report.findings, and
// adds timeline entries. Ranks absent from report.ranks are added.
// A clean run leaves root_cause null and findings empty.
// Fails (kIo) only when run_dir is not a readable directory; unreadable or
// malformed evidence files are skipped, never fatal.
Result<void> diagnoseRun(const std::string& run_dir, Report& report);

}  // namespace faultline::diagnose
