// Judge: a pure function from a scenario's expectations and a report to
// verdicts. An expectation that cannot be evaluated is unresolved, never a pass.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "harness/scenario/scenario.h"

namespace faultline::judge {

// Resolves a report path ("ranks[1].role", "findings.kind"); arrays project
// over their elements. A missing field or a step through null yields null.
nlohmann::json resolvePath(const nlohmann::json& report, const std::string& path);

Expectation judgeOne(const scenario::Expect& expect, const nlohmann::json& report);
std::vector<Expectation> judgeAll(const std::vector<scenario::Expect>& expects, const nlohmann::json& report);

// pass when every expectation holds; unresolved when any could not be
// evaluated; fail otherwise. A run the harness could not complete is error.
Verdict verdictOf(const std::vector<Expectation>& judged);

// A scenario's verdict from its judged expectations and its report: when the
// diagnosis failed (report.problems.diagnose_error), the expectations were
// judged against a report nobody finished, so the answer is unresolved, never
// a pass (Jepsen's "unknown"), whatever they say.
Verdict scenarioVerdict(const std::vector<Expectation>& judged, const Report& report);

}  // namespace faultline::judge
