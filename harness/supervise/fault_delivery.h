// Scripted faults the supervisor delivers from outside a rank, as the OOM
// killer, an operator or a failing machine would: a signal to the rank
// (SIGKILL, SIGSEGV, SIGABRT, SIGTERM, SIGSTOP), or a freeze of the rank's
// whole process tree (SIGSTOP to the rank and every process under it). The
// point is a step or a collective the rank's own events announce, or a time
// since the run started or since the rank's first step (probe::FaultSpec with
// by = "supervisor"). Pure: the
// watch loop feeds it event fields and the clock, and carries out what it returns.
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

struct Strike {
  int rank = 0;                 // a node fault: the node's rank that reached the point (-1: none, rendezvous)
  std::string node;             // a node fault: the node it strikes; "" a rank fault
  std::string arg;              // the kind's argument (partition seconds, slow_link rate, slow_node duty)
  std::string kind;
  int signal = 0;
  bool whole_group = false;     // freeze: the rank and every process under it
  std::optional<int64_t> step;  // the rank's step at the time, when its events said
  std::string point;            // "step 3", "collective #5", "2.5 s after start"
  std::string rule;             // the spec as written
};

class FaultDelivery {
 public:
  explicit FaultDelivery(std::vector<probe::FaultSpec> faults);
  bool empty() const { return faults_.empty(); }

  // One event of rank `rank`, read `elapsed_s` after the run started: its
  // step_begin (with the step) or collective_begin (with the seq). True when
  // it starts a fault's clock (a first step, for since = "first_step"): the
  // caller's timer then has a new time to wait for.
  bool onEvent(int rank, std::string_view ev, std::optional<int64_t> step, std::optional<int64_t> seq,
               double elapsed_s);
  // What is due now, `elapsed_s` after the run started, on the ranks running
  // (for time points); each fault strikes each of its ranks once.
  std::vector<Strike> due(double elapsed_s, const std::set<int>& running);
  // The earliest time point still to come, for a timer; none when no fault waits on time.
  std::optional<double> nextTime() const;
  // The nodes whose agent_kill waits for the rendezvous point (the watch loop
  // looks for their agents), and the strike once one is found.
  std::vector<std::string> awaitingRendezvous() const;
  std::optional<Strike> atRendezvous(const std::string& node);

 private:
  struct Pending {
    probe::FaultSpec fault;
    std::set<int> struck;
  };
  Strike strike(const probe::FaultSpec& f, int rank) const;
  // When fault f's time comes for rank r, in seconds after the run started;
  // none while its clock has not started (no first step yet).
  std::optional<double> timeFor(const probe::FaultSpec& f, int r) const;

  std::vector<Pending> faults_;
  std::vector<Strike> ready_;     // reached by an event, not yet handed out
  std::map<int, int64_t> steps_;  // rank -> its latest step_begin
  std::map<int, double> first_step_s_;  // rank -> when its first step_begin was read
};

}  // namespace faultline::supervise
