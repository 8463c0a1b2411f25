// The DDP training run: rendezvous, broadcast, sharded data, bucketed gradient
// all-reduce, synced metrics, rank-0 checkpoints, and the injected faults.
#pragma once

#include "reference-trainer/options.h"
#include "reference-trainer/rank_env.h"

namespace faultline::trainer {

// Returns the process exit code. Exceptions from c10d (a dead peer, the
// collective timeout) propagate after the process group has been destroyed.
int runTraining(const Options& options, const RankEnv& env);

}  // namespace faultline::trainer
