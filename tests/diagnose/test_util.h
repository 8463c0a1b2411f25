// Helpers shared by the diagnosis tests: fixture paths, file reading, and a
// run directory's diagnosis as report.json would show it.
#pragma once

#include <cstdlib>
#include <string>

#include "harness/assemble/assemble.h"
#include "harness/diagnose/diagnose.h"
#include "tests/support/files.h"

namespace faultline::diagnose::testing {

inline std::string sourceDir() {
  const char* s = std::getenv("FAULTLINE_SOURCE_DIR");
  return s ? s : FAULTLINE_TEST_SOURCE_DIR;
}

inline std::string fixtureDir() { return sourceDir() + "/tests/fixtures/diagnose"; }

inline std::string fixture(const std::string& rel) { return fixtureDir() + "/" + rel; }

// The whole file (tests/support).
using faultline::testing::readFile;

// The diagnosis of DIR alone (no supervisor record, no scenario), assembled into a report.
inline Result<Report> diagnosedReport(const std::string& dir) {
  auto d = diagnoseRun(dir);
  if (!d) return tl::unexpected(d.error());
  assemble::RunValues values;
  values.diagnosis = std::move(*d);
  return assemble::assembleReport(values, {});
}

}  // namespace faultline::diagnose::testing
