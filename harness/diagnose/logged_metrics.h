// unsynced_metrics in any trainer, from where its metrics went: the metric
// sinks the Python shim hooks (Lightning's self.log, torchmetrics, accelerate,
// TensorBoard's SummaryWriter, wandb; `metric_log` events, docs/BLACKBOX.md
// "Metric sinks"). The reference trainer's own `metric` events are
// findUnsyncedMetrics's (findings.h).
#pragma once

#include <vector>

#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// One finding per metric name that was not synchronised, at its first such
// value:
// - differs_across_ranks: the ranks that logged the n-th value of a name
//   logged different numbers, each its own;
// - no_collective: one rank alone logged it, after a pass over its own
//   share of the data, from a tensor no collective wrote, with no reducing
//   collective on that rank since the name's previous value (rank 0
//   evaluating the whole validation set alone is the job's value).
// Names that say they are one rank's (rank3/loss, local_acc) or measure the
// machine (step_time, throughput, memory) are skipped, and
// a TensorBoard or wandb value is left to the framework sink (Lightning,
// accelerate) that logged the same name through it. An error for a value
// that decides checkpointing or early stopping, or a validation or test
// metric; otherwise (a training loss) a warning.
std::vector<Finding> findUnsyncedLoggedMetrics(const RunInput& in);

}  // namespace faultline::diagnose
