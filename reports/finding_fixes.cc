// The fix for each finding kind.
#include "reports/finding_fixes.h"

namespace faultline::reports {

std::string_view findingFix(Kind k) {
  switch (k) {
    case Kind::kSeedMismatch:
      return "Seed every RNG the same way on every rank before building the model (torch.manual_seed(seed), and "
             "numpy/random if used); keep per-rank seeds only for streams that should differ, such as data "
             "augmentation, and derive them from the common seed and the rank.";
    case Kind::kUnshardedData:
      return "Shard the data: give the DataLoader a DistributedSampler(dataset, num_replicas=world_size, "
             "rank=rank) (shuffle in the sampler, not the DataLoader) and call sampler.set_epoch(epoch) at the "
             "start of every epoch.";
    case Kind::kUnsyncedMetrics:
      return "All-reduce a metric before logging it as global: dist.all_reduce(t, op=ReduceOp.SUM) then divide by "
             "the world size (or use torchmetrics' sync), and log from rank 0 only.";
    case Kind::kConcurrentWrites:
      return "Write shared files from one rank (if dist.get_rank() == 0: save(...)) followed by dist.barrier(), or "
             "give each rank its own path (name it after the rank).";
    case Kind::kStraggler:
      return "Balance the work per rank: the same batch size and sequence lengths on every rank, no rank-0-only "
             "work inside the step (logging, evaluation, checkpointing) unless the others wait for it on purpose; "
             "check that the slow rank's host is not oversubscribed.";
    case Kind::kDivergedParams:
      return "Train only through the DDP wrapper (call ddp_model(x), not ddp_model.module(x), and no manual "
             "parameter updates outside optimizer.step()); if buffers differ, keep broadcast_buffers=True or "
             "synchronise them yourself (SyncBatchNorm for batch-norm statistics).";
    case Kind::kNoPgDestroy:
      return "Call dist.destroy_process_group() once training ends, on every rank, so the process group's "
             "resources and connections are released before exit.";
    default:
      return {};
  }
}

std::string_view findingFix(const Finding& f) { return f.fix.empty() ? findingFix(f.kind) : std::string_view(f.fix); }

}  // namespace faultline::reports
