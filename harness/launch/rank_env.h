// The environment each process of a run gets (CONTRACT.md section 2).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "harness/launch/run_layout.h"
#include "harness/model/error.h"

namespace faultline::launch {

using Environment = std::map<std::string, std::string>;

// The harness's own environment (environ), as a map.
Environment currentEnvironment();

// Every process of a run carries FAULTLINE_RUN_ID, so the guardian can find
// the run's processes by environment when no cgroup contains them.
inline constexpr const char* kRunIdVar = "FAULTLINE_RUN_ID";
// The pid of the faultline process that supervises the run, in the
// launcher's environment: a node agent leaves the stop signals it sends to
// every process of the run itself unforwarded (agent.cc).
inline constexpr const char* kSupervisorPidVar = "FAULTLINE_SUPERVISOR_PID";

struct RankEnvParams {
  int rank = 0;
  int world_size = 1;
  int master_port = 0;
  std::string run_id;
  int restart_count = 0;  // the attempt: TORCHELASTIC_RESTART_COUNT
  int max_restarts = 0;   // TORCHELASTIC_MAX_RESTARTS
};

// base + torchrun 2.x's whole worker environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK=0, GROUP_WORLD_SIZE=1, ROLE_NAME=default,
// ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT,
// TORCHELASTIC_ERROR_FILE (the attempt's), TORCHELASTIC_RUN_ID (the run id),
// TORCHELASTIC_RESTART_COUNT and TORCHELASTIC_MAX_RESTARTS (p's: 0 and 0
// unless the launcher restarts),
// TORCHELASTIC_USE_AGENT_STORE=False; TORCH_NCCL_ASYNC_ERROR_HANDLING,
// NCCL_ASYNC_ERROR_HANDLING and, with several ranks, OMP_NUM_THREADS default
// to 1 and TORCHELASTIC_SIGNALS_TO_HANDLE to torchrun's list unless base has them) + FAULTLINE_RUN_DIR, FAULTLINE_EVENTS,
// FAULTLINE_RUN_ID, and torch 2.x's Flight Recorder pointed into OUT/flight_recorder
// (TORCH_FR_BUFFER_SIZE, TORCH_FR_DUMP_TEMP_FILE, ...: rank_env.cc). Stale FAULTLINE_EVENTS_DIR is removed.
Environment rankEnvironment(const Environment& base, const RunLayout& layout, const RankEnvParams& p);

// base + FAULTLINE_RUN_DIR, FAULTLINE_EVENTS_DIR=OUT/ranks, FAULTLINE_RUN_ID;
// rank variables the harness itself may carry are removed, so that only the
// launcher's children are attributed to ranks.
Environment launcherEnvironment(const Environment& base, const RunLayout& layout, const std::string& run_id);

// The black-box instruments every process of a run carries (docs/BLACKBOX.md):
// the Python shim's directory (its sitecustomize.py runs in every Python
// process) and the LD_PRELOAD interposer library. Empty: that one is off.
struct Instruments {
  std::string python_shim_dir;
  std::string preload_library;
  bool any() const { return !python_shim_dir.empty() || !preload_library.empty(); }
};

// base with the shim first on PYTHONPATH and the interposer first in
// LD_PRELOAD; what the user had there stays, after ours.
Environment withInstruments(Environment base, const Instruments& instruments);

// "KEY=VALUE" strings for execve.
std::vector<std::string> toEnvStrings(const Environment& env);

// A TCP port on 127.0.0.1 that was free a moment ago, picked at random below
// the kernel's ephemeral range so that no bind(0) or connect() takes it
// before the rendezvous listens on it, and reserved (reservePort) for as long
// as this process lives.
Result<int> findFreePort();

// Reserves `port` machine-wide for as long as this process lives: the file
// $TMPDIR/faultline-ports/PORT names this pid (no descriptor is held); a file
// whose process has ended is taken over. False when a live process, this one
// included, holds it. A `faultline run` or `exec` is one run.
bool reservePort(int port);

}  // namespace faultline::launch
