// Root-cause selection as an ordered list of small named rules (issue 15):
// each reads the analysed input and either names a root cause or passes.
// The first rule that names one wins. Each is testable alone; pure.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "harness/diagnose/analysis.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// What a rule decided: the root cause, the rank whose role is root_cause
// (none for launcher errors, timeouts, unknowns), and the ranks that were
// waiting in the collective it names.
struct Candidate {
  RootCause cause;
  std::optional<int> root_rank;
  std::vector<int> waiting_ranks;
  // A node lost or cut off (node_rules.h): its ranks (role lost) and when.
  std::vector<int> lost_ranks = {};
  std::optional<int64_t> node_t_ns = std::nullopt;
};

using RootCauseRule = std::optional<Candidate> (*)(const Analysis&);

struct NamedRule {
  std::string_view name;  // "earliest_primary"
  std::string_view why;   // one line: why it comes where it does
  RootCauseRule apply;
};

// The rules in priority order (analyze.h says why in this order):
//   launcher_failed_first     the launcher crashed, or failed before any rank started
//   collective_mismatch       ranks at one seq called different ops or sizes
//   node_lost                 every process of a node ended at once, or its agent vanished (node_rules.h)
//   network_partition         a node's link went down before the run failed (node_rules.h)
//   same_failure_everywhere   every failing rank failed the same way, within moments: no primary
//   exit_before_rendezvous    the first failure is a bare exit before any process group
//   earliest_primary          the earliest primary failure by ns time
//   hung_collective           ranks wait in a collective others never entered
//   shutdown_hang             every rank finished, one never exited
//   store_rendezvous_failure  every failing rank lost the store before any process group
//   stack_dump_hang           no event says where; the stack dumps name who is outside the collective (stack_hang.h)
//   no_progress               the supervisor saw a hang or the deadline; nothing says where
//   only_collateral           only collateral evidence: unknown, no guess
//   launcher_failed_alone     every rank exited cleanly, the launcher did not
const std::vector<NamedRule>& rootCauseRules();

// The first rule's candidate, with the injected system call added to its
// layers when the root-cause rank had one; nullopt: the run was clean.
std::optional<Candidate> chooseRootCause(const Analysis& a);

std::optional<Candidate> launcherFailedFirst(const Analysis& a);
std::optional<Candidate> collectiveMismatch(const Analysis& a);
std::optional<Candidate> sameFailureEverywhere(const Analysis& a);
// Evidence that the program uses a process group at all: a rank began or
// finished init_process_group (pg_init_begin, pg_init), a peer lost the
// store, or a stack dump stands in torch.distributed or c10d's rendezvous.
bool joinsProcessGroup(const Analysis& a);
std::optional<Candidate> exitBeforeRendezvous(const Analysis& a);
std::optional<Candidate> earliestPrimary(const Analysis& a);
// A hang before any group formed: ranks inside init_process_group and
// (instrumented) ranks that never began it, these the root cause.
std::optional<Candidate> hungRendezvous(const Analysis& a);
// A hang with ranks blocked in a c10d store call (the shim's store_begin).
std::optional<Candidate> storeWait(const Analysis& a);
std::optional<Candidate> hungCollective(const Analysis& a);
std::optional<Candidate> shutdownHang(const Analysis& a);
std::optional<Candidate> storeRendezvousFailure(const Analysis& a);
std::optional<Candidate> noProgress(const Analysis& a);
std::optional<Candidate> onlyCollateral(const Analysis& a);
std::optional<Candidate> launcherFailedAlone(const Analysis& a);

}  // namespace faultline::diagnose
