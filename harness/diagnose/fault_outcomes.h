// Whether each fault the run asked for was struck (supervisor.json's
// `faults`): a fault asked for and not struck is never a clean run or a pass.
#pragma once

#include <vector>

#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// One outcome per requested fault, in the record's order. Struck: an aimed
// rank (any rank for one aimed at every rank) wrote a `fault` event of its
// kind or, without events, the reference trainer announced it on its stderr;
// for a node fault, the supervisor's record of that node has one. Not struck:
// why, from what the ranks reached ("no aimed rank reached step 9 (rank 1
// last reached step 4)", "rank 2 was never found").
std::vector<FaultOutcome> faultOutcomes(const RunInput& in);

// "sigkill:rank=1:step=9 (step 9) was not struck: ...", one clause per fault
// not struck, joined by "; "; "" when every fault was struck.
std::string faultsNotStruck(const std::vector<FaultOutcome>& outcomes);

}  // namespace faultline::diagnose
