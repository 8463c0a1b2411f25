// Helpers of the black-box tests: the catalog's trainers, lines in them, and
// the faultline binary run with an environment of the test's choosing.
#pragma once

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/supervise/test_support.h"

namespace faultline::blackbox {

using nlohmann::json;
using testing::readFile;

inline std::string trainer(const std::string& name) { return std::string(FL_SOURCE_DIR) + "/scenarios/python/" + name; }

// The line of `needle` in a trainer, so the expected location follows the source.
inline int lineOf(const std::string& file, const std::string& needle) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(needle) != std::string::npos) return n;
  }
  return -1;
}

// Runs faultline with the harness's environment plus `extra` (an empty value
// sets the variable to ""); its stdout and stderr in `log`. The exit code, or
// -1 when it did not exit.
inline int runFaultline(const std::vector<std::string>& args, const std::string& log,
                 const std::map<std::string, std::string>& extra = {}) {
  testing::SpawnOptions o;
  o.argv = {FL_FAULTLINE};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = testing::environmentWith(extra);
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::runChild(o).code();
}

inline json readJson(const std::string& path) {
  json j = json::parse(readFile(path), nullptr, false);
  return j.is_discarded() ? json() : j;
}

}  // namespace faultline::blackbox
