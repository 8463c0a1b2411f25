// Findings: the silent pitfalls of DDP code, read from the ranks' events
// (seed_mismatch, diverged_params, unsharded_data, unsynced_metrics (also
// from metric sinks: logged_metrics.h),
// concurrent_writes, straggler, no_pg_destroy). A clean run has none.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// Fingerprints that differ at the first point (init); a warning when the
// next point every rank fingerprinted agrees (DDP's broadcast repaired the
// parameters; the other random streams still differ), else an error.
std::vector<Finding> findSeedMismatch(const RunInput& in);
// Params (or buffers) equal across ranks at some point and different at a
// later one: gradients not all-reduced, buffers not broadcast. An error.
std::vector<Finding> findDivergedParams(const RunInput& in);
std::vector<Finding> findUnshardedData(const RunInput& in);
std::vector<Finding> findUnsyncedMetrics(const RunInput& in);
// Also reads the written file (when it still exists) to look for interleaving.
std::vector<Finding> findConcurrentWrites(const RunInput& in);
std::vector<Finding> findStraggler(const RunInput& in);
// Multi-node: the node the other nodes wait for in collective after collective.
std::vector<Finding> findStragglerNode(const RunInput& in);
std::vector<Finding> findNoPgDestroy(const RunInput& in);

// Every finding above, in that order.
std::vector<Finding> findFindings(const RunInput& in);

// A finding that could not be looked for on some ranks: the shim patch its
// evidence comes from did not apply there (`instrument` events). Unknown,
// which is not the same as absent.
struct UncheckedFinding {
  Kind kind = Kind::kUnknown;
  std::vector<int> ranks;  // where its evidence is missing
  std::string reason;      // "rank 1: patch ddp.fingerprint failed: AttributeError: ..."
};

// For each kind in `found`'s family that was not found (seed_mismatch:
// fingerprint; unsharded_data: samples; straggler: steps and collectives;
// no_pg_destroy: the process group), the ranks that could not be checked.
std::vector<UncheckedFinding> findUnchecked(const RunInput& in, const std::vector<Finding>& found);
// report.json's unchecked_findings: [{"kind", "ranks", "reason"}].
nlohmann::json uncheckedJson(const std::vector<UncheckedFinding>& unchecked);

}  // namespace faultline::diagnose
