// `faultline explain RUN_DIR [--json]`: re-run diagnosis on a finished run.
#pragma once

#include <iosfwd>
#include <string>

namespace faultline::cli {

int runExplain(const std::string& run_dir, bool json, std::ostream& out, std::ostream& err);

}  // namespace faultline::cli
