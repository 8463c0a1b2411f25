// The supervise stage: launch a stack inside its containment, watch it until
// it ends, fails, hangs, hits the deadline or is interrupted, tear it down,
// and return what was seen as a SupervisorRecord (OUT/supervisor.json).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/launch/launcher.h"
#include "harness/model/error.h"
#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "harness/probe/fault_spec.h"
#include "harness/supervise/adaptive_hang.h"

namespace faultline::supervise {

struct SuperviseOptions {
  launch::LaunchOptions launch;  // launcher, command, nproc, run_id ("" = generated)
  // The launcher that starts and stops the run; null: the registry's of
  // launch.launcher's name (a test may bring one of its own).
  const launch::Launcher* launcher = nullptr;
  std::string out_dir;
  double hang_timeout_s = 0;  // 0: no fixed hang timeout
  // Adaptive hang detection (adaptive_hang.h): a hang as soon as ranks wait
  // in a collective far past its learned p99 while an idle rank is missing;
  // hang_timeout_s stays the upper bound. factor 0: off.
  AdaptiveOptions adaptive;
  double deadline_s = 0;      // 0: no deadline
  double grace_s = 3;         // SIGTERM -> SIGKILL
  // A launcher that ends its own job (OnRankFailure::kLauncherStops): after a
  // rank fails, how long it gets to before the harness tears the job down
  // (torchrun polls every 5 s).
  double launcher_allowance_s = 10;
  // The restarts the launcher may make ([stack] max_restarts): > 0, a rank's
  // failure does not start the allowance: the launcher restarts its ranks
  // (a new attempt) or ends the job, and the deadline bounds it.
  int max_restarts = 0;
  bool allow_cgroup = true;
  // External mode: false forces the 100 ms rescan + pidfd path. Builtin: false
  // records no exits of the ranks' children.
  bool allow_proc_connector = true;
  bool gdb_stacks = true;          // native stack dumps (eu-stack, else gdb) of stuck ranks on hang/deadline
  double gdb_timeout_s = 5;
  // Scripted faults struck from outside the ranks (fault_delivery.h): a signal
  // or a freeze at a step, a collective or a time.
  std::vector<probe::FaultSpec> outside_faults;
  // Absolute path prefixes counted as library code (cli::addLibraryPaths); the
  // record keeps them for the diagnosis.
  std::vector<std::string> library_paths;
  // Every fault the run asks for, whoever strikes it: the record keeps them
  // for the diagnosis to check each was struck.
  std::vector<RequestedFault> requested_faults;
  // Written to OUT/report.json as soon as the previous run's files are gone,
  // before anything starts, for the real report to replace: what a reader
  // finds when the harness dies first (SIGKILL, the OOM killer, a crash), so
  // that a run never leaves nothing. Unset: nothing is written.
  std::optional<Report> provisional_report;
};

struct SupervisedRun {
  SupervisorRecord record;
  std::vector<TimelineEntry> timeline;  // t_ms since the run started
  std::vector<std::string> notes;       // harness-side problems during the run (not the stack's)
  bool interrupted = false;
};

// Errors only for what prevents a run from starting (kBadUsage: no such
// command; kIo: OUT not writable; kSystem: no containment). Once a process has
// started, every outcome is data in the returned run, and teardown has happened.
// SIGINT/SIGTERM interrupt the run while it is watched and are held pending
// outside that; the caller's dispositions and signal mask are restored on
// return, dispositions first (a caller that ignores them discards a late one).
// The record's harness_fds counts this process's descriptors around the run.
Result<SupervisedRun> superviseRun(const SuperviseOptions& opts);

// A fresh id for FAULTLINE_RUN_ID and the cgroup name.
std::string newRunId();

}  // namespace faultline::supervise
