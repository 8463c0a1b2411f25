// clone/exec of one process of a run, placed in its containment before exec.
//
// Plain POSIX rather than Boost.Process v1: the child must write itself into
// the run's cgroup.procs, set PR_SET_PDEATHSIG and start its own process group
// between clone and exec, and report a failed exec back to the parent; doing
// all of that with async-signal-safe calls only is simpler to get right here
// than through bp's on_exec_setup handlers, which also allocate after fork.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline::launch {

// How a spawned process is contained; filled in by the supervise stage.
struct Placement {
  int cgroup_procs_fd = -1;  // an open O_WRONLY fd of the run cgroup's cgroup.procs, or -1
  int pdeath_signal = 0;     // PR_SET_PDEATHSIG value, 0 for none
  bool new_process_group = true;
};

struct SpawnSpec {
  std::string executable;         // absolute path (see resolveExecutable)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "KEY=VALUE"
  std::string stdout_path;        // truncated and written directly by the child
  std::string stderr_path;
  std::string cwd;                // empty: inherit
  // The child keeps this process's stdin, stdout and stderr (the paths above
  // are not used): a node agent's command, whose output its launcher redirects.
  bool inherit_stdio = false;
  // Open descriptors the child gets as its stdout and stderr (>= 0; copied,
  // the caller keeps its own), before the paths and inherit_stdio: a pipe the
  // caller reads (the node agent's copy of its launcher's output).
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// Returns the pid once the child has exec'd; a child that cannot be placed or
// exec'd is reaped here and reported as kSystem with the failing step.
Result<pid_t> spawnProcess(const SpawnSpec& spec, const Placement& placement);

// The two halves of spawnProcess, so that N ranks are started back to back and
// their exec confirmations collected afterwards (launch overhead at 8 ranks is
// otherwise N sequential fork+exec round trips).
struct PendingSpawn {
  pid_t pid = -1;
  int report_fd = -1;  // read end of the exec-status pipe (CLOEXEC in the child)
  std::string executable;
};
Result<PendingSpawn> startSpawn(const SpawnSpec& spec, const Placement& placement);
Result<pid_t> finishSpawn(PendingSpawn& pending);

// A short helper command run to completion outside any run (an interpreter
// asked for its torch, a launcher's --help): its wait status and what it
// wrote. Killed after `timeout_s` (then kSystem, "timed out").
struct CommandResult {
  int wait_status = 0;  // as waitpid gives it
  std::string out;      // stdout
  std::string err;      // stderr
  bool ok() const;      // exited 0
};
Result<CommandResult> runToCompletion(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                      double timeout_s);

// Looks name up in PATH (as execvp would) and returns an absolute path;
// kBadUsage when there is no such executable.
Result<std::string> resolveExecutable(const std::string& name, const std::string& path_var);

}  // namespace faultline::launch
