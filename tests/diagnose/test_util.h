// Helpers shared by the diagnosis tests: fixture paths and file reading.
#pragma once

#include <cstdlib>
#include <string>

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

}  // namespace faultline::diagnose::testing
