// Root-cause analysis: from the gathered run input to the root cause, each
// rank's role and diagnosis, and timeline entries. Pure; no file access.
#pragma once

#include <optional>
#include <vector>

#include "harness/diagnose/diagnosis.h"
#include "harness/diagnose/analysis.h"
#include "harness/diagnose/root_cause_rules.h"
#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// The rules (issue 4): the root cause is the earliest primary failure by ns
// time; collateral evidence (peer errors, timeouts, teardown signals) never
// names the root cause while a primary exists; with only collateral, a hang
// or mismatch from events, else `unknown`. The launcher's own root-cause
// choice is only an outer layer. The rules themselves, in order, are
// rootCauseRules() (root_cause_rules.h). Fills root_cause, ranks (role and
// diagnosis) and timeline.
Diagnosis analyzeRun(const RunInput& in);

// The two steps after the root cause, each testable alone: every rank's role
// and one-line diagnosis (by rank), and the timeline sorted by t_ms.
std::vector<RankVerdict> assignRoles(const Analysis& a, const std::optional<Candidate>& root);
std::vector<TimelineEntry> buildTimeline(const Analysis& a, const std::optional<Candidate>& root);

}  // namespace faultline::diagnose
