// `faultline agent --slurm-task`: the torch.distributed variables of one rank
// from the Slurm step's own (docs/MULTINODE.md). Pure; no environment access.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/model/error.h"

namespace faultline::agent {

using EnvMap = std::map<std::string, std::string>;

// RANK=SLURM_PROCID, LOCAL_RANK=SLURM_LOCALID, WORLD_SIZE=SLURM_NTASKS (or
// SLURM_NPROCS), LOCAL_WORLD_SIZE=SLURM_NTASKS_PER_NODE (or this node's entry
// of SLURM_TASKS_PER_NODE, "2(x2)" or "2,1"), GROUP_RANK=SLURM_NODEID.
// kBadUsage naming the variable when SLURM_PROCID, SLURM_LOCALID,
// SLURM_NTASKS or SLURM_NODEID is missing or not a number (not inside a step).
Result<std::vector<std::pair<std::string, std::string>>> slurmTaskEnv(const EnvMap& env);

// Entry `node_index` of SLURM_TASKS_PER_NODE ("2(x3),1": 2, 2, 2, 1); nullopt
// when malformed or out of range.
std::optional<int> tasksOnNode(const std::string& tasks_per_node, int node_index);

}  // namespace faultline::agent
