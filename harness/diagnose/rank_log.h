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
};

RankLog scanRankLog(std::string_view text);

// A Python traceback chain as evidence: the original (first printed) error,
// its innermost user frame as location, the later ones as outer layers.
Evidence evidenceFromChain(const PyChain& chain);

// The evidence that most likely ended the process: the last primary error
// (a cpp exception or OOM beats the SIGABRT it causes), else the last collateral
// one; nullptr when there is none.
const Evidence* terminalError(const std::vector<Evidence>& errors);

}  // namespace faultline::diagnose
