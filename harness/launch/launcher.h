// The launch stage: start a stack's processes and say which pid is which rank.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/run_layout.h"
#include "harness/model/error.h"

namespace faultline::launch {

enum class LauncherKind { kBuiltin, kExternal };
std::string launcherKindName(LauncherKind k);

struct LaunchOptions {
  LauncherKind kind = LauncherKind::kBuiltin;
  std::vector<std::string> command;  // COMMAND [ARGS...]
  int nproc = 1;                     // builtin only
  std::string run_id;                // unique per run, exported as FAULTLINE_RUN_ID
  Instruments instruments;           // in every rank's (builtin) or the launcher's (external) environment
  // Extra environment for every process of the run: each rank (builtin), or
  // the launcher, whose children inherit it (external). E.g. FAULTLINE_INJECT.
  Environment env;
};

// Sets each variable of `extra` in a "KEY=VALUE" list, replacing any earlier value.
inline void applyEnv(std::vector<std::string>& env, const Environment& extra) {
  for (const auto& [key, value] : extra) {
    std::erase_if(env, [&](const std::string& kv) {
      return kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=';
    });
    env.push_back(key + "=" + value);
  }
}

struct LaunchedProcess {
  std::optional<int> rank;  // null for the external launcher itself
  pid_t pid = 0;
  int64_t start_ns = 0;     // CLOCK_REALTIME
};

// Starts nproc copies of the command with the environment of CONTRACT.md
// section 2, each rank's stdout/stderr straight into OUT/ranks/R/. If rank k
// cannot be started, the ranks already started are returned in `started` so
// that the caller can tear them down.
struct BuiltinLaunch {
  std::vector<LaunchedProcess> ranks;
  int master_port = 0;
};
Result<BuiltinLaunch> launchBuiltin(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement,
                                    std::vector<LaunchedProcess>& started);

// Starts the command once as the launcher, output into OUT/launcher/.
Result<LaunchedProcess> launchExternal(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement);

}  // namespace faultline::launch
