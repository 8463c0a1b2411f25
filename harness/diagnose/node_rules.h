// The multi-node root-cause rules (docs/MULTINODE.md, docs/DIAGNOSIS.md
// section 9): a node lost, a node cut off by its link, and what the report
// says of each node. Pure: they read the analysed input only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/analysis.h"
#include "harness/diagnose/rank_list.h"
#include "harness/diagnose/root_cause_rules.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// node_lost: every process of a node ended at once (SIGKILL, or vanished)
// with no error of its own, or the supervisor's node_loss fault struck it, or
// its agent vanished while the others' exited: kind node_lost, root_cause.node,
// its ranks lost.
std::optional<Candidate> nodeLost(const Analysis& a);
// network_partition: a node's link went down (its agent's `link` event, or the
// supervisor's partition fault) and the run failed or hung after it.
std::optional<Candidate> networkPartition(const Analysis& a);

// A node's launcher (its torchrun agent) killed before any rank of the node
// started (the supervisor's agent_kill fault, or a signal its agent saw):
// kind launcher_error, root_cause.node, blame node; what the other nodes'
// launcher then said (a rendezvous timeout) in the summary and layers.
std::optional<Candidate> nodeLauncherLost(const Analysis& a);

// The ranks whose node is NAME, ascending.
std::vector<int> ranksOfNode(const RunInput& in, const std::string& name);
// report.json's nodes[]: every node the run directory knows, with `lost` from the root cause.
std::vector<NodeReport> nodeReports(const RunInput& in, const std::optional<Candidate>& root);

}  // namespace faultline::diagnose
