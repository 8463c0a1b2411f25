// Helpers shared by the diagnosis tests: fixture paths and file reading.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace faultline::diagnose::testing {

inline std::string sourceDir() {
  const char* s = std::getenv("FAULTLINE_SOURCE_DIR");
  return s ? s : FAULTLINE_TEST_SOURCE_DIR;
}

inline std::string fixtureDir() { return sourceDir() + "/tests/fixtures/diagnose"; }

inline std::string fixture(const std::string& rel) { return fixtureDir() + "/" + rel; }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace faultline::diagnose::testing
