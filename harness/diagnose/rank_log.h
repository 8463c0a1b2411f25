// Scans one rank's output (stderr/stdout/log files) for every piece of failure
// evidence, classified, and for stack dumps printed into it.
#pragma once

#include <string_view>
#include <vector>

#include "harness/diagnose/evidence.h"
#include "harness/diagnose/python_traceback.h"

namespace faultline::diagnose {

struct RankLog {
  std::vector<Evidence> errors;     // in order of appearance
  std::vector<StackThread> stacks;  // faulthandler dumps found in the text
  // torch 2.x's "Warning: WARNING: destroy_process_group() was not called
  // before program exit, which can leak resources" (ProcessGroupNCCL's
  // destructor, on local rank 0 of a node; Gloo prints none), prefixes removed.
  std::string pg_not_destroyed;
  // The faults the reference trainer announced on its stderr ("[faultline-trainer
  // rank 1] injecting fault hung_collective at step 3"): their kinds, in order.
  // The evidence a fault was struck in a run without the probe's events.
  std::vector<std::string> announced_faults;
};

RankLog scanRankLog(std::string_view text);

// A Python traceback chain as evidence: the innermost error of the onion (the
// first cause, inside it the traceback a DataLoader worker's wrapper carries;
// past a bare StopIteration or queue.Empty, which names no failure), its
// innermost user frame as location, c10's native origin when its message has
// one, every wrapper as an outer layer (Evidence::chain, outermost first).
Evidence evidenceFromChain(const PyChain& chain, const LibraryPaths& lib = LibraryPaths());
// Sets location (and source_line) to the innermost of e.frames that is not
// library code by `lib`; false, leaving them, when every frame is.
bool pickLocation(Evidence& e, const LibraryPaths& lib);

// The evidence that most likely ended the process: the last primary error
// (a cpp exception or OOM beats the SIGABRT it causes), else the last collateral
// one; nullptr when there is none.
const Evidence* terminalError(const std::vector<Evidence>& errors);

}  // namespace faultline::diagnose
