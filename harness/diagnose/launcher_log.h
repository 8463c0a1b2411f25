// The launcher's own output: its wrappers around a rank's failure (torchrun's
// ChildFailedError block, CalledProcessError, spawn's ProcessRaisedException),
// the pid/rank facts it prints, and its own crash (launcher_error).
// Used as the outer layer only: its "Root Cause" choice is never trusted.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/python_traceback.h"

namespace faultline::diagnose {

// One "[i]:" entry of a ChildFailedError block (i is the entry's index; `rank`
// is from its "rank :" line).
struct LauncherFailure {
  int rank = -1;
  std::optional<int> local_rank;
  std::optional<int> exit_code;
  std::optional<std::string> signal;  // "exitcode : -15 (pid: 12)" -> SIGTERM
  std::optional<int> pid;
  std::string time;        // torchrun's whole-second stamp, kept as text
  std::string error_file;  // "<N/A>" dropped
  std::string traceback;   // the "traceback :" field's first line
  // The traceback an error file gave it (@record, or faultline's shim):
  // evidence where the error file itself is out of reach (no --log_dir).
  std::optional<PyChain> chain;
  bool root_cause_block = false;
};

struct LauncherLog {
  // The launcher's own exception (the last traceback chain in its stderr that
  // is not a rank's), e.g. ChildFailedError or AttributeError in to_map.
  std::optional<PyTraceback> wrapper;
  std::vector<LauncherFailure> failures;       // "Failures:" and "Root Cause" entries
  // What torchrun says (srun: its first failed task; spawn: the process its
  // exception names); never trusted.
  std::optional<int> claimed_root_rank;
  // Several ranks named together as the first failure (srun's "tasks 2-3:"
  // line, tasks of one node that ended at once), in order; claimed_root_rank
  // is then unset: the launcher singled out no rank.
  std::vector<int> claimed_root_ranks;
  // srun's "srun: error: NODE: task N: Exited with exit code C" / "...: Killed"
  // lines, in order: the first is the task it saw fail first.
  std::vector<int> srun_failed_tasks;
  // spawn parent: "-- Process N terminated with the following error:" and the
  // child's traceback that follows it.
  std::optional<int> spawn_rank;
  std::optional<PyChain> spawn_chain;
  // "process 1 terminated with signal SIGSEGV" / "with exit code 3" (ProcessExitedException).
  std::optional<std::string> spawn_signal;
  std::optional<int> spawn_exit_code;
  // "failed (exitcode: 1) local_rank: 0 (pid: 7105)" and
  // "Sending process 7659 closing signal SIGTERM" lines.
  struct PidExit {
    int pid = 0;
    std::optional<int> local_rank;
    std::optional<int> exit_code;
  };
  std::vector<PidExit> failed_pids;
  // By pid, the signals those lines named (also torch 2.x spawn's
  // "Terminating process P via signal SIGTERM"): "SIGTERM", then "SIGKILL"
  // when the launcher escalated. A rank that died of another one (its own
  // SIGKILL, a SIGABRT) was already dead when the launcher signalled it.
  std::map<int, std::set<std::string>> signals_sent;
  // Lightning's child-process observer: the pid of the child whose exit it
  // saw first ("Child process with PID P terminated with code C. Forcefully
  // terminating all other processes"), after which it SIGKILLs every other
  // process of the job, rank 0 (itself) among them.
  std::optional<int> observer_killed_all_but;
  // DeepSpeed's "exits with return code = C": the exit of the rank whose
  // failure made launch.py signal every rank, itself included (it was dead
  // already): C > 0 an exit code, C < 0 the signal -C.
  std::optional<int> failed_rank_return_code;
  // The launcher's own warnings worth a note ("FutureWarning: The module
  // torch.distributed.launch is deprecated", torch 2.x).
  std::vector<std::string> warnings;
  // Ray Train's WorkerGroupError: the ranks its first report lists ("[Rank
  // 0,1 Error Snippet]", every failed worker in rank order, those with the
  // same error together). It blames a rank only when it lists one.
  std::set<int> ray_failed_ranks;
  // The last non-blank line of its own (no rank prefix): what a launcher
  // that failed without a traceback last said ("ERROR: ...", "Killed").
  std::string last_line;
  // True when the wrapper is a launcher crash rather than a report about a rank.
  bool launcher_crashed = false;
  // Tracebacks in the launcher's stderr that are not the launcher's own: rank
  // output that a launcher without --tee passed through unprefixed.
  std::vector<PyChain> unattributed;
};

// Parses a launcher's stderr. Lines carrying a rank prefix ("[default1]:")
// belong to ranks and are ignored here.
LauncherLog parseLauncherLog(std::string_view text);
// Adds what a launcher's own logger writes to its stdout (DeepSpeed's
// launch.py: the SIGTERMs it sent, the rank it blamed) to `log`.
void readLauncherStdout(std::string_view text, LauncherLog& log);

// Whether a signal the launcher logged sending to `pid` ended that process,
// given how it ended (if known): not when it died of another signal first,
// nor when its exit is the one the launcher reports as what made it signal
// every rank (DeepSpeed signals the failed rank too, already dead).
bool launcherSignalEnded(const LauncherLog& log, int pid, bool exit_known, std::optional<int> exit_code,
                         const std::optional<std::string>& signal);

// The tasks (= ranks) one of srun's own failure lines names: "srun: error: n2:
// task 2: Exited with exit code 1", or tasks that ended together in one line,
// "srun: error: n2: tasks 2-3: Exited with exit code 1" ("tasks 0,2-3"). Empty
// for any other line.
std::vector<int> srunFailedTasks(std::string_view line);

// True for the exception types launchers raise about a failed child.
bool isLauncherWrapperType(std::string_view type);
// True when a traceback runs through launcher code (torchrun, launch.py, torchelastic, spawn).
bool isLauncherTraceback(const PyTraceback& tb);

}  // namespace faultline::diagnose
