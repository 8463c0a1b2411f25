// The closed set of run verdicts and the one table of what each means (as
// LLVM lit's ResultCode): its name, whether it is a failure, its JUnit element
// and the exit status it gives. Every command and every renderer asks it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace faultline {

enum class Verdict { kPass, kFail, kUnresolved, kUnsupported, kDiagnosed, kClean, kIncomplete, kError };

// What a JUnit writer puts in the test case of a run with this verdict.
enum class JunitElement { kNone, kFailure, kError, kSkipped };

struct VerdictInfo {
  Verdict verdict;
  const char* name;      // as in report.json
  bool failure;          // a CI job that gets it must go red
  JunitElement junit;    // the run's case (exec) or each case of a scenario that did not run
  int exit_status;       // CONTRACT.md section 1: 0, 1 or 3
};

// Never fails: the table covers the enum.
const VerdictInfo& verdictInfo(Verdict v);
std::string verdictName(Verdict v);
std::optional<Verdict> verdictFromName(const std::string& name);
// Every verdict but pass, clean and unsupported (a skip, lit's UNSUPPORTED).
bool verdictIsFailure(Verdict v);

// An expectation's outcome, beside the verdict table: pass, fail, or
// unresolved (it could not be evaluated: never counted as a pass, and it
// makes the run unresolved).
enum class ExpectationStatus { kPass, kFail, kUnresolved };
const char* expectationStatusName(ExpectationStatus s);  // "pass" | "fail" | "unresolved"
std::optional<ExpectationStatus> expectationStatusFromName(const std::string& name);

// The least severity of a finding that fails a run (`--fail-on`).
enum class FailOn { kError, kWarning };
std::optional<FailOn> failOnFromName(const std::string& name);  // "error" | "warning"

// What the exit status asks beyond the table: `--strict` makes unsupported
// fail (1); `--fail-on warning` makes a run that reports a warning finding
// fail (1) even when its scenario passed.
struct ExitPolicy {
  bool strict = false;
  FailOn fail_on = FailOn::kError;
};

// Whether a finding of `severity` ("error" | "warning") fails a run under `fail_on`.
bool severityFails(const std::string& severity, FailOn fail_on);

struct Report;
// One run: its verdict's exit status, adjusted by the policy.
int exitStatusOf(const Report& report, const ExitPolicy& policy = {});
// Several runs: 3 when any is 3, else the largest.
int exitStatusOf(const std::vector<int>& statuses);

}  // namespace faultline
