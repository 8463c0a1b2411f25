// The tests' own minimal launcher: N ranks of a command with the torchrun
// environment, output to files, and a bounded wait. It is what a shell loop
// does, so the trainer is tested without the harness under test.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

// readFile, freePort: the tests' own (tests/support).
#include "tests/support/files.h"
#include "tests/support/ports.h"

namespace faultline::testing {

struct RankRun {
  int rank = 0;
  int status = -1;        // the wait status
  bool killed_by_launcher = false;
  double exit_s = 0;      // seconds after launch
  std::string out;
  std::string err;
  std::vector<nlohmann::json> events;

  bool exitedWith(int code) const;
  bool killedBy(int signal) const;
  std::vector<nlohmann::json> eventsOf(const std::string& ev) const;
};

struct LaunchOptions {
  int world_size = 2;
  std::vector<std::string> args;
  // Once a rank has failed, the others get this long before they are killed.
  // Both bounds stretch by FAULTLINE_TEST_TIME_SCALE (tests/test_scale.h).
  std::chrono::milliseconds after_failure{15000};
  std::chrono::milliseconds deadline{120000};
};

struct Launch {
  std::filesystem::path dir;
  std::vector<RankRun> ranks;
};

// The trainer under test: $FAULTLINE_TRAINER_BIN (each CTest run of a trainer
// test names one trainer, one per LibTorch), else the one it was built with.
std::string trainerBin();
// Why the trainer under test cannot run, for GTEST_SKIP: the CTest run says,
// in $FAULTLINE_TRAINER_UNAVAILABLE, why the build did not make it. Empty when
// it was built.
std::string trainerUnavailable();

Launch launchRanks(const std::string& name, const LaunchOptions& options);

}  // namespace faultline::testing
