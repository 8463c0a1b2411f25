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

namespace faultline::testing {

// FL_HOSTILE: the target that includes this header names tests/fixtures/hostile's binary.
inline std::string hostilePath() { return FL_HOSTILE; }

// Nothing of the run is left: no live process carrying its run id.
inline void expectNothingLeft(const std::string& run_id) {
  for (pid_t p : supervise::listPids()) {
    if (!supervise::isAlive(p)) continue;
    EXPECT_NE(supervise::environVar(p, "FAULTLINE_RUN_ID"), std::optional<std::string>(run_id)) << "pid " << p << " survived";
  }
}

}  // namespace faultline::testing
