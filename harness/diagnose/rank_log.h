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
