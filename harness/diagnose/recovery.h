// Attempts and recovery (docs/DIAGNOSIS.md, "Attempts and recovery"): a job
// whose launcher may restart its ranks (torchrun --max-restarts) runs them
// several times. Each run is an attempt; the first attempt's failure stays the
// run's root cause, and the recovery verdict says whether a later attempt
// brought the job to its end, how long that took, where it resumed, and
// whether one rank failed the same way every time (a crash loop). Pure: it
// reads a RunInput, nothing else.
#pragma once

#include <optional>
#include <vector>

#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// Every attempt of the run, the first included; empty when there was only
// one and no restart was allowed.
std::vector<AttemptReport> attemptsOf(const RunInput& in);

// The recovery verdict, where restarts were allowed (supervisor.json's
// max_restarts) or happened; nullopt otherwise.
std::optional<Recovery> judgeRecovery(const RunInput& in, const std::vector<AttemptReport>& attempts);

}  // namespace faultline::diagnose
