// Helpers shared by the supervision and CLI tests: the hostile fixture's path,
// and (from tests/support) temp run directories, files, waiting, free ports
// and the no-zombie / no-fd-leak checks every test ends with.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/launch/rank_env.h"
#include "harness/supervise/proc_fs.h"
#include "tests/support/files.h"
#include "tests/support/leak_guard.h"
#include "tests/support/ports.h"
#include "tests/support/process.h"
#include "tests/test_scale.h"

namespace faultline::testing {

// FL_HOSTILE: the target that includes this header names tests/fixtures/hostile's binary.
inline std::string hostilePath() { return FL_HOSTILE; }

// A hostile child in MODE (every rank's), its stdout in `dir`, returned once
// it has printed its line (its signal dispositions are set by then).
inline pid_t startHostile(const TempDir& dir, const std::string& mode) {
  SpawnOptions o;
  o.argv = {hostilePath(), "*=" + mode};
  o.stdout_path = dir / ("out-" + std::to_string(::getpid()) + "-" + mode);
  const pid_t pid = spawnChild(o);
  EXPECT_TRUE(waitFor([&] { return readFile(o.stdout_path).find("hostile rank") != std::string::npos; },
                      scaled(std::chrono::seconds(10))))
      << mode << " never started";
  return pid;
}

// Nothing of the run is left: no live process carrying its run id.
inline void expectNothingLeft(const std::string& run_id) {
  for (pid_t p : supervise::listPids()) {
    if (!supervise::isAlive(p)) continue;
    EXPECT_NE(supervise::environVar(p, "FAULTLINE_RUN_ID"), std::optional<std::string>(run_id)) << "pid " << p << " survived";
  }
}

}  // namespace faultline::testing
