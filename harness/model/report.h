// The run report of CONTRACT.md section 4 as C++ values, and its JSON form.
// Every stage fills its part; renderers read it back from report.json alone.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/model/error.h"
#include "harness/model/verdict.h"

namespace faultline {

inline constexpr const char* kReportSchema = "faultline.report/1";

// The closed set of failure and finding kinds (CONTRACT.md section 4).
enum class Kind {
  kPythonException, kCppException, kUndefinedSymbol, kSignal, kExitCode, kHungCollective,
  kCollectiveMismatch, kRendezvousFailure, kShutdownHang, kLauncherError, kOom, kTimeout,
  kSeedMismatch, kUnshardedData, kUnsyncedMetrics, kConcurrentWrites, kStraggler,
  kNoPgDestroy, kUnknown,
};
std::string kindName(Kind k);
std::optional<Kind> kindFromName(const std::string& name);

enum class RankRole { kRootCause, kCollateral, kClean, kKilledByTeardown, kSurvivor };
std::string roleName(RankRole r);
std::optional<RankRole> roleFromName(const std::string& name);

// Verdicts and what each means: harness/model/verdict.h.

enum class Escalation { kNone, kSigterm, kSigkill };
std::string escalationName(Escalation e);
std::optional<Escalation> escalationFromName(const std::string& name);

// Who ended the job's processes after the first failure (teardown.by):
// faultline (it signalled some process of the run), the stack's launcher
// (everything ended after the failure without a signal from faultline, and a
// launcher of its own ran the job: torchrun's agent stopping its workers), or
// nobody (every process ended by itself, or no teardown was needed).
enum class TeardownBy { kNone, kFaultline, kLauncher };
std::string teardownByName(TeardownBy b);
std::optional<TeardownBy> teardownByFromName(const std::string& name);

struct ScenarioRef {
  std::string name;
  std::string file;
};

struct StackInfo {
  std::string launcher = "builtin";  // the stack's name: builtin | external | torchrun@2.13 | ...
  std::vector<std::string> command;
  int world_size = 0;
  std::string torch;                 // the torch version the stack ran ("2.13.0+cpu"); "" unknown or none
};

struct LauncherInfo {
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  // The rank the launcher itself blamed (torchrun's "Root Cause" block), and
  // whether that is the root cause's rank; null when the launcher blamed none
  // or faultline names no root-cause rank.
  std::optional<int> blamed_rank;
  std::optional<bool> blamed_correctly;
};

struct Location {
  std::string file;
  int line = 0;
};

struct CollectiveRef {
  std::string op;
  int64_t seq = 0;
};

struct Layer {
  std::string layer;  // launcher | process | error
  std::string text;
};

struct RootCause {
  Kind kind = Kind::kUnknown;
  std::optional<int> rank;
  std::string summary;
  std::optional<std::string> exception_type;
  std::optional<std::string> message;
  std::optional<Location> location;
  std::optional<std::string> symbol;
  std::optional<std::string> signal;
  std::optional<int> exit_code;
  std::optional<CollectiveRef> collective;
  std::vector<int> waiting_ranks;
  std::vector<int> missing_ranks;
  std::vector<Layer> layers;  // outermost first
};

struct RankReport {
  int rank = 0;
  std::optional<int> pid;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  RankRole role = RankRole::kClean;
  std::string diagnosis;
  std::string stderr_tail;
};

struct Finding {
  Kind kind = Kind::kUnknown;
  std::vector<int> ranks;
  std::string severity = "warning";  // error | warning
  std::string summary;
  std::string evidence;
};

struct Survivor {
  int pid = 0;
  std::string cmdline;
};

struct TeardownReport {
  bool clean = true;
  // From the first failure (the supervisor's trigger) to every process of the
  // run gone, whoever ended them; without a trigger, from the start of a
  // teardown that had processes to end; 0 when none had to be.
  int64_t duration_ms = 0;
  Escalation escalation = Escalation::kNone;
  std::vector<Survivor> survivors;
  std::vector<std::string> leaks;
  TeardownBy by = TeardownBy::kNone;
};

struct Expectation {
  std::string what;
  nlohmann::json expected;
  nlohmann::json actual;
  bool ok = false;
  // Beyond the contract's four fields: pass | fail | unresolved, and why an
  // expectation could not be evaluated (never counted as a pass).
  std::string status = "fail";
  std::string reason;
};

struct TimelineEntry {
  double t_ms = 0;  // since the run started
  std::optional<int> rank;
  std::string what;
};

struct HarnessInfo {
  std::string version;
  int64_t wall_ms = 0;
};

struct Report {
  std::optional<ScenarioRef> scenario;
  StackInfo stack;
  LauncherInfo launcher;
  std::optional<RootCause> root_cause;
  std::vector<RankReport> ranks;
  std::vector<Finding> findings;
  TeardownReport teardown;
  std::vector<Expectation> expectations;
  Verdict verdict = Verdict::kIncomplete;
  std::vector<TimelineEntry> timeline;
  HarnessInfo harness;
  // Fields a later schema adds, or a stage records beyond the contract
  // (e.g. "containment"), kept verbatim so a re-render loses nothing.
  nlohmann::json extra = nlohmann::json::object();
};

nlohmann::json toJson(const Report& r);
// Reads a report; names the field that is missing or of the wrong type.
Result<Report> reportFromJson(const nlohmann::json& j);
Result<Report> readReport(const std::string& path);
// Writes atomically (temp file + rename), so a reader never sees half a report.
Result<void> writeReport(const Report& r, const std::string& path);

}  // namespace faultline
