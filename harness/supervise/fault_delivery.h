// Scripted faults the supervisor delivers from outside a rank, as the OOM
// killer, an operator or a failing machine would: a signal to the rank
// (SIGKILL, SIGSEGV, SIGABRT, SIGTERM, SIGSTOP), or a freeze of the rank's
// whole process group (SIGSTOP to every process in it: the rank and its
// DataLoader workers). The point is a step or a collective the rank's own
// events announce, or a time since the run started. Pure: the watch loop
// feeds it event fields and the clock, and carries out what it returns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harness/probe/fault_spec.h"

namespace faultline::supervise {

struct OutsideFault {
  std::string kind;                   // sigkill | segfault | abort | sigterm | sigstop | freeze
  std::vector<int> ranks;             // empty: every rank
  std::optional<int64_t> step;        // when the rank's step_begin says this step
  std::optional<int64_t> collective;  // when the rank's collective_begin has this seq
  std::optional<double> after_s;      // this long after the run started
  std::string rule;                   // the spec as written, for the fault event
};

// The kinds a supervisor delivers, and the signal each sends.
bool isOutsideFaultKind(std::string_view kind);
int outsideFaultSignal(std::string_view kind);

struct Strike {
  int rank = 0;
  std::string kind;
  int signal = 0;
  bool whole_group = false;     // freeze: every process of the rank's process group
  std::optional<int64_t> step;  // the rank's step at the time, when its events said
  std::string point;            // "step 3", "collective #5", "2.5 s after start"
  std::string rule;
};

// The supervisor's part of scripted faults (probe::FaultSpec with by =
// "supervisor"), each with its spec as written for the fault event.
std::vector<OutsideFault> outsideFaults(const std::vector<probe::FaultSpec>& specs);

class FaultDelivery {
 public:
  explicit FaultDelivery(std::vector<OutsideFault> faults);
  bool empty() const { return faults_.empty(); }

  // One event of rank `rank`: its step_begin (with the step) or collective_begin (with the seq).
  void onEvent(int rank, std::string_view ev, std::optional<int64_t> step, std::optional<int64_t> seq);
  // What is due now, `elapsed_s` after the run started, on the ranks running
  // (for time points); each fault strikes each of its ranks once.
  std::vector<Strike> due(double elapsed_s, const std::set<int>& running);
  // The earliest time point still to come, for a timer; none when no fault waits on time.
  std::optional<double> nextTime() const;

 private:
  struct Pending {
    OutsideFault fault;
    std::set<int> struck;
  };
  bool aims(const OutsideFault& f, int rank) const;
  Strike strike(const OutsideFault& f, int rank, std::string point) const;

  std::vector<Pending> faults_;
  std::vector<Strike> ready_;       // reached by an event, not yet handed out
  std::map<int, int64_t> steps_;    // rank -> its latest step_begin
};

}  // namespace faultline::supervise
