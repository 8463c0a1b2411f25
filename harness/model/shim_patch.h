// The Python shim's patch names (`instrument` events, docs/BLACKBOX.md) grouped
// by the evidence each one produces, so that the supervisor and the diagnosis
// agree on what a failed patch leaves unseen.
#pragma once

#include <string_view>

namespace faultline {

enum class ShimEvidence {
  kCollectives,   // collective_begin/end: the hang and mismatch analysis
  kSteps,         // step_begin/end: shutdown hang, straggler
  kFingerprint,   // fingerprint: seed_mismatch
  kSamples,       // samples: unsharded_data
  kProcessGroup,  // pg_init/pg_destroy: rendezvous failure, no_pg_destroy
  kMetricSinks,   // metric_log: unsynced_metrics in a trainer's own logging
};

// Whether the patch `patch` is needed for `what`. "dist" and "ddp" are the
// labels of a patch that failed as a whole, "deepspeed.engine" too (every part of it is missing).
inline bool patchFeeds(std::string_view patch, ShimEvidence what) {
  const bool dist_all = patch == "dist";
  const bool ddp_all = patch == "ddp";
  const bool deepspeed_all = patch == "deepspeed.engine";  // DeepSpeed's engine, as a whole
  const bool pg = patch == "dist.init_process_group" || patch == "dist.destroy_process_group";
  // Store.get/wait (store_begin/end) name a store wait; without them such a
  // wait reads as a rank idle outside any collective, which it also is.
  const bool store = patch == "dist.store";
  switch (what) {
    case ShimEvidence::kCollectives:
      return dist_all || ddp_all || (patch.substr(0, 5) == "dist." && !pg && !store) || patch == "ddp.grad_allreduce" ||
             patch == "ddp.forward";
    case ShimEvidence::kSteps:
      return ddp_all || deepspeed_all || patch == "ddp.forward" || patch == "deepspeed.forward" || patch == "optim.step";
    case ShimEvidence::kFingerprint:
      return ddp_all || deepspeed_all || patch == "ddp.fingerprint" || patch == "deepspeed.fingerprint";
    case ShimEvidence::kSamples:
      return patch == "data.distributed_sampler" || patch == "data.dataloader";
    case ShimEvidence::kProcessGroup:
      return dist_all || pg;
    case ShimEvidence::kMetricSinks:
      return patch.substr(0, 8) == "metrics.";
  }
  return false;
}

}  // namespace faultline
