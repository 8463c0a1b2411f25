// Everything diagnosis needs from a run directory, gathered per rank: exit
// facts (supervisor.json, else the launcher's own report), output, error
// files, stack dumps and events. Plain data, so analysis can be tested on
// hand-built inputs as well as on captured run directories.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/events.h"
#include "harness/diagnose/evidence.h"
#include "harness/diagnose/launcher_log.h"
#include "harness/diagnose/library_paths.h"
#include "harness/diagnose/node_input.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"

namespace faultline::diagnose {

struct RankInput {
  int rank = 0;
  std::optional<int> pid;
  bool started = false;       // any sign the process ran (supervisor, output, events)
  bool exit_known = false;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  std::optional<int64_t> start_ns;
  std::optional<int64_t> exit_ns;
  bool killed_by_teardown = false;
  // The rank said its work was done (the shim's `work_end`: Ray Train's
  // training function returned) before its launcher ended the process: that
  // exit is no failure, whatever its status (Ray's ray.kill exits 1).
  bool work_done = false;
  std::vector<Evidence> errors;     // from output, error file, spawn parent, events
  // Processes of the rank's own tree (DataLoader workers, helpers it forked)
  // that died of a signal of their own before any teardown: the supervisor's
  // process_exits whose ppid chain leads to the rank's pid, earliest first. The evidence of a part's death that torch
  // does not always name (earlier_failure.h).
  std::vector<ProcessExit> crashed_children;
  // Exceptions on their way to the trainer's code (the shim's
  // `collective_raised`, out of a collective, and `signal_raised`, torch's
  // SIGCHLD handler's) that the rank caught: it began another collective
  // after them. Its failure may be one of them (earlier_failure.h).
  std::vector<Evidence> caught;
  std::vector<StackThread> stacks;  // stacks.txt and dumps in output
  std::vector<StackThread> native_stacks;  // native_stacks.txt: a Python rank stuck on its way out
  std::vector<StackThread> crash_stacks;   // crash_stacks.txt: its last fatal signal's dump
  std::string crash_what;                  // that dump's "Fatal Python error: WHAT" ("Segmentation fault")
  EventLog events;
  std::string stderr_tail;
  std::string pg_not_destroyed;  // torch 2.x's warning line, when the rank printed it
  std::vector<std::string> announced_faults;  // kinds the reference trainer said on stderr it struck (rank_log.h)
  std::vector<std::string> sources;  // which files were read, for the diagnosis text
  bool flight_recorder = false;      // its collectives are torch's Flight Recorder's (flight_recorder.h), not the shim's
  // Multi-node: the node that ran it (its agent's rank_start) and that node's
  // host; "" on a single-node run or where no agent said.
  std::string node, host;
};

// A later run of the ranks, after the launcher restarted them (torchrun
// --max-restarts): attempt k >= 1. What each rank's process of that attempt
// did, by rank; RunInput::ranks are attempt 0's.
struct AttemptInput {
  int attempt = 0;
  std::map<int, RankInput> ranks;
};

struct RunInput {
  std::string dir;
  std::optional<SupervisorRecord> supervisor;
  std::map<int, RankInput> ranks;  // the first attempt's (the only one, without restarts)
  std::vector<AttemptInput> attempts;  // the restarts' attempts, 1, 2, ...
  std::optional<LauncherLog> launcher;  // when the launcher's stderr exists
  std::optional<int> launcher_exit_code;
  std::optional<std::string> launcher_signal;
  std::string launcher_name;  // "builtin", "external", "torchrun"...
  int world_size = 0;
  // What is library code: the built-in policy and the run's library_paths
  // (supervisor.json); every evidence location is picked by it.
  LibraryPaths library;
  // Multi-node (docs/MULTINODE.md): every OUT/nodes/NAME, by name; empty on one node.
  std::map<std::string, NodeInput> nodes;
  std::vector<NodeProblem> node_problems;  // lines of the node files that could not be read
  // The fault-free twin (OUT/twin, a run of the same scenario without its
  // fault, for recovery.same_result): its ranks; empty when there was none.
  std::map<int, RankInput> twin;
};

// The probe's `error` event as evidence: first line of the message, location
// from file/line or c10's "Exception raised from", the innermost user function
// of the native backtrace.
Evidence evidenceFromEvent(const Event& e);

// Reads a run directory: supervisor.json for the supervisor's facts (without
// it, what the logs, events and error files say), then every evidence file.
RunInput loadRun(const std::string& dir);

// A scripted fault of faultline's was struck in this rank (a `fault` event,
// or the reference trainer's own announcement on stderr); of that kind, when
// `kind` is given.
bool struckByAFault(const RankInput& r, std::string_view kind = {});

}  // namespace faultline::diagnose
