// The diagnose stage's value: what a run directory says went wrong, per run
// and per rank. Built by diagnoseRun (diagnose.h); analyzeRun fills its
// root cause, roles and timeline, the rest comes from the findings and the files.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/findings.h"
#include "harness/diagnose/instruments.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

struct RankVerdict {
  int rank = 0;
  RankRole role = RankRole::kClean;
  std::string diagnosis;
  // What the run directory says about the process (supervisor.json, events,
  // the launcher's log), for ranks the supervisor did not see itself.
  std::optional<int> pid;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  std::string stderr_tail;  // ranks/R/stderr's last 64 KiB, else the rank's lines in the launcher's logs
  std::string node, host;   // multi-node: where it ran; "" on one node
};

struct Diagnosis {
  std::optional<RootCause> root_cause;  // null: the run was clean
  std::vector<RankVerdict> ranks;       // by rank
  std::vector<NodeReport> nodes;        // multi-node: every node (node_rules.h); empty on one node
  std::vector<TimelineEntry> timeline;  // t_ms since the run started
  std::vector<Span> spans;              // steps and collectives per rank (spans.h)
  int64_t spans_dropped = 0;
  std::vector<Finding> findings;
  std::vector<FaultOutcome> faults;             // each requested fault, struck or not (fault_outcomes.h)
  std::vector<UncheckedFinding> unchecked;      // finding kinds that could not be looked for
  std::map<int, RankInstruments> instruments;   // ranks that wrote `instrument` events
  std::map<int, std::string> stack_dumps;       // rank -> the last 64 KiB of ranks/R/stacks.txt
  // The ranks the launcher's own account named as its first failure: one
  // (torchrun's "Root Cause" block), or several together (srun's "tasks 2-3:").
  std::vector<int> launcher_blamed_ranks;
  std::vector<AttemptReport> attempts;          // a launcher that restarts: every attempt (recovery.h)
  std::optional<Recovery> recovery;             // where restarts were allowed or happened
};

}  // namespace faultline::diagnose
