// How a job's ranks are laid out over its nodes, as torchrun's node ranks and
// Slurm's block distribution place them: consecutive ranks on each node, n1
// first, and where the world does not divide evenly the first nodes hold one
// rank more (3 ranks on 2 nodes: n1 ranks 0-1, n2 rank 2).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace faultline {

// The ranks on each node, n1 first; empty when `world` or `nodes` is below 1.
inline std::vector<int> ranksPerNode(int world, int nodes) {
  if (world < 1 || nodes < 1) return {};
  std::vector<int> out(static_cast<size_t>(nodes), world / nodes);
  for (int k = 0; k < world % nodes; ++k) ++out[static_cast<size_t>(k)];
  return out;
}

// Why `world` ranks cannot be laid out over `nodes` nodes (a node would hold
// none), "" when they can.
inline std::string nodeLayoutProblem(int world, int nodes) {
  const std::vector<int> per_node = ranksPerNode(world, nodes);
  if (!per_node.empty() && per_node.back() >= 1) return "";
  return std::to_string(world) + " rank(s) cannot fill " + std::to_string(nodes) + " node(s)";
}

// The 1-based node holding `rank` (nK), 0 when no node does.
inline int nodeOfRank(int rank, const std::vector<int>& per_node) {
  int first = 0;
  for (size_t k = 0; k < per_node.size(); ++k) {
    if (rank >= first && rank < first + per_node[k]) return static_cast<int>(k) + 1;
    first += per_node[k];
  }
  return 0;
}

// The global rank of local rank `local` on node `k` (1-based), -1 when there is none.
inline int globalRank(int k, int local, const std::vector<int>& per_node) {
  if (k < 1 || k > static_cast<int>(per_node.size()) || local < 0 || local >= per_node[static_cast<size_t>(k - 1)]) return -1;
  int first = 0;
  for (int i = 0; i < k - 1; ++i) first += per_node[static_cast<size_t>(i)];
  return first + local;
}

}  // namespace faultline
