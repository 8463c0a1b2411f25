// Findings: the silent pitfalls of DDP code, read from the ranks' events
// (seed_mismatch, unsharded_data, unsynced_metrics, concurrent_writes,
// straggler, no_pg_destroy). A clean run has none.
#pragma once

#include <vector>

#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

std::vector<Finding> findSeedMismatch(const RunInput& in);
std::vector<Finding> findUnshardedData(const RunInput& in);
std::vector<Finding> findUnsyncedMetrics(const RunInput& in);
// Also reads the written file (when it still exists) to look for interleaving.
std::vector<Finding> findConcurrentWrites(const RunInput& in);
std::vector<Finding> findStraggler(const RunInput& in);
std::vector<Finding> findNoPgDestroy(const RunInput& in);

// Every finding above, in that order.
std::vector<Finding> findFindings(const RunInput& in);

}  // namespace faultline::diagnose
