// The verdict table.
#include "harness/model/verdict.h"

#include <algorithm>
#include <array>

#include "harness/model/report.h"

namespace faultline {
namespace {

constexpr std::array<VerdictInfo, 8> kVerdictTable{{
    {Verdict::kPass, "pass", false, JunitElement::kNone, 0},
    {Verdict::kFail, "fail", true, JunitElement::kFailure, 1},
    // Nothing could be judged (a crashed diagnosis, bad input): an error, as lit's UNRESOLVED.
    {Verdict::kUnresolved, "unresolved", true, JunitElement::kError, 1},
    // Did not apply to the stack: a skip, never red (--strict makes it exit 1).
    {Verdict::kUnsupported, "unsupported", false, JunitElement::kSkipped, 0},
    {Verdict::kDiagnosed, "diagnosed", true, JunitElement::kFailure, 1},
    {Verdict::kClean, "clean", false, JunitElement::kNone, 0},
    {Verdict::kIncomplete, "incomplete", true, JunitElement::kFailure, 1},
    {Verdict::kError, "error", true, JunitElement::kError, 3},
}};

}  // namespace

const VerdictInfo& verdictInfo(Verdict v) {
  for (const auto& info : kVerdictTable) {
    if (info.verdict == v) return info;
  }
  return kVerdictTable[static_cast<size_t>(Verdict::kError)];  // unreachable: the table covers the enum
}

std::string verdictName(Verdict v) { return verdictInfo(v).name; }

std::optional<Verdict> verdictFromName(const std::string& name) {
  for (const auto& info : kVerdictTable) {
    if (name == info.name) return info.verdict;
  }
  return std::nullopt;
}

bool verdictIsFailure(Verdict v) { return verdictInfo(v).failure; }

const char* expectationStatusName(ExpectationStatus s) {
  switch (s) {
    case ExpectationStatus::kPass: return "pass";
    case ExpectationStatus::kFail: return "fail";
    case ExpectationStatus::kUnresolved: return "unresolved";
  }
  return "fail";
}

std::optional<ExpectationStatus> expectationStatusFromName(const std::string& name) {
  for (auto s : {ExpectationStatus::kPass, ExpectationStatus::kFail, ExpectationStatus::kUnresolved}) {
    if (name == expectationStatusName(s)) return s;
  }
  return std::nullopt;
}

std::optional<FailOn> failOnFromName(const std::string& name) {
  if (name == "error") return FailOn::kError;
  if (name == "warning") return FailOn::kWarning;
  return std::nullopt;
}

bool severityFails(const std::string& severity, FailOn fail_on) {
  return severity == "error" || (fail_on == FailOn::kWarning && severity == "warning");
}

int exitStatusOf(const Report& report, const ExitPolicy& policy) {
  const VerdictInfo& info = verdictInfo(report.verdict);
  if (report.verdict == Verdict::kUnsupported) return policy.strict ? 1 : 0;
  if (info.exit_status == 0 && policy.fail_on == FailOn::kWarning) {
    const bool warned = std::any_of(report.findings.begin(), report.findings.end(),
                                    [&](const Finding& f) { return severityFails(f.severity, policy.fail_on); });
    if (warned) return 1;
  }
  return info.exit_status;
}

int exitStatusOf(const std::vector<int>& statuses) {
  int worst = 0;
  for (int s : statuses) {
    if (s == 3) return 3;
    worst = std::max(worst, s);
  }
  return worst;
}

}  // namespace faultline
