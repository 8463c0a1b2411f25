// The diagnose stage: a pure function of a run directory (logs, events, error
// files, stack dumps, supervisor.json) that names the primary failure, marks
// every rank's role, and reports the silent pitfalls as findings.
#pragma once

#include <string>

#include "harness/diagnose/diagnosis.h"
#include "harness/model/error.h"

namespace faultline::diagnose {

// Reads RUN_DIR (ranks/<R>/{stdout,stderr,events.jsonl,error.json,stacks.txt},
// launcher/{stdout,stderr,logs/...}, supervisor.json) and returns what it
// says: the root cause, each rank's role and diagnosis, findings, unchecked
// findings, instruments, stack dumps, timeline entries and what the launcher
// blamed. A clean run has no root cause and no finding.
// Fails with kIo when run_dir is not a readable directory, with kHarness when
// the analysis throws; unreadable or malformed evidence files are skipped,
// never fatal. Reading the same directory twice gives the same diagnosis.
Result<Diagnosis> diagnoseRun(const std::string& run_dir);

}  // namespace faultline::diagnose
