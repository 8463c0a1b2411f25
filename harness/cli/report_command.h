// `faultline report RUN_DIR`: re-render junit.xml, report.md and report.html
// from report.json alone (a suite directory re-renders its index the same way).
#pragma once

#include <iosfwd>
#include <string>

#include "harness/model/error.h"
#include "reports/render.h"

namespace faultline::cli {

int runReport(const std::string& run_dir, std::ostream& out, std::ostream& err);

// A suite directory's report.json with every run's report.json.
Result<reports::Suite> loadSuite(const std::string& dir);

}  // namespace faultline::cli
