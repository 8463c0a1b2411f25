// `faultline report RUN_DIR`: re-render junit.xml, report.md and report.html
// from report.json alone (a suite directory re-renders its index the same way).
#pragma once

#include <iosfwd>
#include <string>

namespace faultline::cli {

int runReport(const std::string& run_dir, std::ostream& out, std::ostream& err);

}  // namespace faultline::cli
