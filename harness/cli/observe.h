// The part of every command that runs a stack: supervise it and record what
// the supervisor saw in OUT/supervisor.json. Shared by exec, run and suite.
#pragma once

#include <iosfwd>

#include "harness/model/supervisor_record.h"
#include "harness/supervise/supervisor.h"

namespace faultline::cli {

// Errors only when the stack could not be started (the caller writes an
// error report); once it ran, everything the supervisor saw is in the
// returned record, also written to OUT/supervisor.json.
Result<SupervisorRecord> superviseStack(const supervise::SuperviseOptions& opts, std::ostream& err);

// Library path prefixes for the run (`--library-path`, `[diagnose]
// library_paths`), each made absolute against `base` when relative: recorded
// in supervisor.json for the diagnosis, and given to the shim in every
// process as FAULTLINE_LIBRARY_PATHS (":"-separated).
void addLibraryPaths(supervise::SuperviseOptions& so, const std::vector<std::string>& paths, const std::string& base);

}  // namespace faultline::cli
