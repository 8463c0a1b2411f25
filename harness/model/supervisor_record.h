// OUT/supervisor.json: what the supervise stage saw, in nanoseconds, for the diagnose stage.
// Facts only (pids, exit statuses, times, signals sent); no interpretation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/model/error.h"
#include "harness/model/report.h"

namespace faultline {

inline constexpr const char* kSupervisorSchema = "faultline.supervisor/1";

// One rank process as the supervisor saw it. Times are CLOCK_REALTIME ns, the
// clock of the events' "t", so the two can be ordered against each other.
struct SupervisedRank {
  int rank = 0;
  int pid = 0;
  int64_t start_ns = 0;                // spawn time (builtin) or discovery time (external)
  std::optional<int64_t> exit_ns;      // when the supervisor saw it end
  std::optional<int> exit_code;        // null when killed by a signal or unknown
  std::optional<std::string> signal;   // "SIGSEGV"; null when it exited
  bool killed_by_teardown = false;     // still alive when teardown signalled it, then died
  std::optional<std::string> node;     // multi-node stacks: its node (FAULTLINE_NODE); absent on one node
  // Which run of the ranks it belongs to: 0, then k after the launcher's k-th
  // restart (torchrun --max-restarts). The k-th process of a rank is attempt k.
  int attempt = 0;
};

// The external launcher process itself (external mode only).
struct LauncherProcess {
  int pid = 0;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  std::optional<int64_t> exit_ns;
};

enum class TriggerKind { kRankFailure, kHang, kDeadline, kInterrupt, kNone };
std::string triggerKindName(TriggerKind k);
std::optional<TriggerKind> triggerKindFromName(const std::string& name);

// Why the supervisor ended the run. kNone: the stack finished on its own.
struct Trigger {
  TriggerKind kind = TriggerKind::kNone;
  int64_t t_ns = 0;
  std::optional<int> rank;  // the first failing rank (rank_failure), else null
  std::string detail;       // e.g. "rank 1 killed by SIGSEGV", "no progress for 5 s; ranks 0,2 in allreduce seq 7"
};

struct SignalSent {
  int pid = 0;
  std::optional<int> rank;  // null for non-rank processes (daemons, launcher)
  std::string signal;       // "SIGUSR1", "SIGTERM", "SIGKILL"
  int64_t t_ns = 0;
};

// A stack dump the teardown asked for: method "sigusr1" (the rank prints it
// itself, usually to its stderr), or "eu-stack" or "gdb" (a native dump of a
// stuck rank, written to path).
struct StackDump {
  int rank = 0;
  int pid = 0;
  std::string method;
  std::string path;  // empty for sigusr1
  bool ok = false;   // gdb exited 0 within its bound / signal delivered
};

// Any process of the run that ended, as the kernel reported it (external mode,
// where the launcher reaps its ranks): lets a rank's exit be ordered and
// attributed even when its RANK could not be read in time (rank null).
struct ProcessExit {
  int pid = 0;
  std::optional<int> rank;
  int64_t t_ns = 0;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  std::string cmdline;  // as read at exec; "" when it ended first
  // Its parent when it was forked (the proc connector's fork event, else
  // /proc at exec): ties a rank's own children (DataLoader workers, helpers)
  // to the rank. Optional in the file (older records lack it).
  std::optional<int> ppid;
};

struct TeardownRecord {
  TeardownReport report;  // clean, duration_ms, escalation, survivors, leaks
  int64_t started_ns = 0;  // 0 when no teardown was needed
  std::vector<SignalSent> signals;
  std::vector<StackDump> stack_dumps;
};

// The harness's own open file descriptors when supervision began and after it
// ended (containment, guardian pipe, inotify, pidfds and the event loop all
// closed): equal unless the supervise stage leaks one per run.
struct HarnessFds {
  int before = 0;
  int after = 0;
};

// The black-box instruments the run was given (empty: none, --no-instrument).
struct RunInstruments {
  std::string python_shim;  // the shim's directory
  std::string preload;      // the LD_PRELOAD interposer
};

// The note the supervisor records when it ends a restarted attempt that hung
// (the run's trigger stays the first failure); the recovery verdict reads it.
inline constexpr const char* kRestartedAttemptHung = "a restarted attempt hung: ";

struct SupervisorRecord {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string launcher = "builtin";  // builtin | external
  std::vector<std::string> command;
  int world_size = 0;
  // The restarts the launcher was allowed ([stack] max_restarts); 0: none.
  // Absent from the file when 0.
  int max_restarts = 0;
  std::string containment = "cgroup";  // cgroup | subreaper
  std::vector<SupervisedRank> ranks;   // sorted by rank
  std::optional<LauncherProcess> launcher_process;
  Trigger trigger;
  TeardownRecord teardown;
  // Optional in the file. Observed launchers: every run process's exit;
  // the builtin launcher: its ranks' children only (DataLoader workers, ...).
  std::vector<ProcessExit> process_exits;
  std::optional<HarnessFds> harness_fds;   // optional in the file
  // Optional in the file (older records lack them): what report.json needs
  // beside the facts above, so that the report can be built again from the
  // run directory alone (faultline explain).
  std::optional<RunInstruments> instruments;
  std::vector<TimelineEntry> timeline;  // the supervisor's, t_ms since the run started
  std::vector<std::string> notes;       // harness-side problems during the run (not the stack's)
  bool interrupted = false;             // SIGINT/SIGTERM to faultline ended it
  // Path prefixes the run counts as library code beside the built-in policy
  // (`[diagnose] library_paths`, `--library-path`; docs/DIAGNOSIS.md section 8).
  std::vector<std::string> library_paths;
  // The faults the run was asked to strike (optional in the file): the
  // diagnosis checks each was struck (diagnose/fault_outcomes.h).
  std::vector<RequestedFault> faults;
};

nlohmann::json toJson(const SupervisorRecord& r);
// Names the field that is missing or of the wrong type.
Result<SupervisorRecord> supervisorRecordFromJson(const nlohmann::json& j);
Result<SupervisorRecord> readSupervisorRecord(const std::string& path);
// Atomic (temp file + rename).
Result<void> writeSupervisorRecord(const SupervisorRecord& r, const std::string& path);

}  // namespace faultline
