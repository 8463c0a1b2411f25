// Helpers of the black-box tests: the catalog's trainers, lines in them, and
// the faultline binary run with an environment of the test's choosing.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/supervise/test_support.h"

extern char** environ;

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

// Runs faultline with the harness's environment plus `extra` (an empty value unsets).
inline int runFaultline(const std::vector<std::string>& args, const std::string& log,
                 const std::map<std::string, std::string>& extra = {}) {
  std::vector<std::string> all{FL_FAULTLINE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : extra) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, FL_FAULTLINE, &fa, nullptr, argv.data(), envp.data()), 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline json readJson(const std::string& path) {
  json j = json::parse(readFile(path), nullptr, false);
  return j.is_discarded() ? json() : j;
}

}  // namespace faultline::blackbox
