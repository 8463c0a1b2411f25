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
  kNoPgDestroy, kDivergedParams, kNodeLost, kNetworkPartition, kStoreWait, kUnknown,
};
std::string kindName(Kind k);
std::optional<Kind> kindFromName(const std::string& name);

// kLost: a rank whose whole node went away (docs/MULTINODE.md).
enum class RankRole { kRootCause, kCollateral, kClean, kKilledByTeardown, kSurvivor, kLost };
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
  // Every rank the launcher's first failure account named: [blamed_rank], or
  // several together (srun's "tasks 2-3:"; blamed_rank is then null and
  // blamed_correctly false: it singled out none). Empty: it named none.
  std::vector<int> blamed_ranks;
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

// How root_cause.rank is to be read (CONTRACT.md section 4, BLAME): one rank
// is to blame, one side of a collective (several ranks), every rank failed the
// same way (no primary), the evidence cannot choose between the sides, or no
// rank at all (the launcher, a timeout, an unknown); or a whole node
// (root_cause.node; ranks are its ranks).
enum class Blame { kRank, kRanks, kAllRanks, kAmbiguous, kNone, kNode };
std::string blameName(Blame b);
std::optional<Blame> blameFromName(const std::string& name);

// One side of a collective mismatch or hang: the ranks that made the same
// call (or, for a hang, made none), the op, and where in their code.
struct CollectiveSide {
  std::vector<int> ranks;
  std::string op;                 // "" : no call at that seq (the missing side of a hang)
  std::optional<int64_t> numel;
  std::string site;               // "train.py:42": the innermost frame outside torch
  std::vector<std::string> callers;  // the next frames outward, innermost first
  std::string rank_condition;     // "train.py:40: if rank == 0:" when the call is under one
};

struct RootCause {
  Kind kind = Kind::kUnknown;
  std::optional<int> rank;
  // Multi-node: the node lost or cut off (node_lost, network_partition), or
  // the node of the root-cause rank; absent on a single-node run.
  std::optional<std::string> node;
  Blame blame = Blame::kNone;
  std::vector<int> ranks;  // blame kRank: {rank}; kRanks, kAllRanks, kAmbiguous: the ranks concerned
  std::vector<CollectiveSide> sides;  // collective_mismatch / hung_collective: each side
  std::string summary;
  std::optional<std::string> exception_type;
  std::optional<std::string> message;
  std::optional<Location> location;
  // Where C++ raised it (c10's "Exception raised from FUNC at FILE:LINE"), when
  // the message says; location stays the user's Python frame.
  std::optional<Location> native_location;
  std::optional<std::string> native_function;
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
  // Multi-node: the node that ran it and its host; absent on a single-node run.
  std::optional<std::string> node = std::nullopt;
  std::optional<std::string> host = std::nullopt;
};


// An unsynced_metrics finding read from a metric sink (the shim's
// metric_log events, docs/BLACKBOX.md "Metric sinks"): which value, each
// rank's, what the sink kept, and why it was judged unsynchronised.
struct LoggedMetric {
  std::string name;
  std::string sink;             // lightning, torchmetrics, accelerate, tensorboard, wandb
  int64_t n = 0;                // the n-th value of the name from that sink
  std::optional<int64_t> step;  // the sink's step (Lightning: the epoch of an epoch-level value)
  struct RankValue {
    int rank = 0;
    double value = 0;
  };
  std::vector<RankValue> values;  // each rank's value, where the ranks computed it
  std::vector<int> logged_by;     // the ranks whose value the sink wrote
  std::string why;                // differs_across_ranks | no_collective
  std::optional<bool> sync;       // the sink's own setting (sync_dist, sync_on_compute)
  std::string site;               // the user's call that handed it to the sink
};

struct Finding {
  Kind kind = Kind::kUnknown;
  std::vector<int> ranks;
  std::string severity = "warning";  // error | warning
  std::string summary;
  std::string evidence;
  std::string fix;                     // this finding's own fix; empty: the kind's (reports/finding_fixes.h)
  std::optional<LoggedMetric> metric;  // unsynced_metrics from a metric sink
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

// One node of a multi-node run (docs/MULTINODE.md): what its agents said and
// whether the diagnosis found it lost.
struct NodeReport {
  std::string name;
  std::string host;                    // "" unknown
  std::vector<int> ranks;
  bool lost = false;                   // the root cause is this node lost or cut off
  std::optional<int64_t> link_down_ns; // the first link-down the agent saw (CLOCK_REALTIME)
  std::vector<Survivor> survivors;  // the agents' survivors events
  std::optional<int> agent_exit_code;  // null: some agent of the node never wrote agent_exit
};

struct Expectation {
  std::string what;
  nlohmann::json expected;
  nlohmann::json actual;
  bool ok = false;
  // Beyond the contract's four fields: pass | fail | unresolved, and why an
  // expectation could not be evaluated (never counted as a pass).
  ExpectationStatus status = ExpectationStatus::kFail;
  std::string reason;
};

// What a timeline entry marks, so a renderer can tell a step from a
// collective, an exit from a teardown signal (CONTRACT.md, timeline[].kind).
enum class TimelineKind { kNote, kStart, kFault, kStep, kStuck, kFailure, kTrigger, kExit, kSignal, kDump,
                          kTeardown, kRootCause };
std::string timelineKindName(TimelineKind k);
std::optional<TimelineKind> timelineKindFromName(const std::string& name);

struct TimelineEntry {
  double t_ms = 0;  // since the run started
  std::optional<int> rank;
  std::string what;
  TimelineKind kind = TimelineKind::kNote;
};

// A step or a collective of one rank, from its events: drawn as a bar in the
// HTML timeline and as a complete event in trace.json.
struct Span {
  int rank = 0;
  std::string kind;    // "step" | "collective"
  std::string name;    // "step 3", "allreduce"
  int64_t index = -1;  // the step number, or the collective's sequence number
  double t_ms = 0;     // began, since the run started
  std::optional<double> dur_ms;  // null: it never ended (a hang, a crash inside it)
  int64_t numel = -1;  // collectives: elements, when the event said
  std::string dtype;
};

struct HarnessInfo {
  std::string version;
  int64_t wall_ms = 0;
};

// A fault the run was asked to strike (`--fault`, a scenario's [fault]), as
// supervisor.json records it.
struct RequestedFault {
  std::string rule;        // its FAULTLINE_FAULT form, "sigkill:rank=1:step=3"
  std::string kind;        // sigkill, hung_collective, node_loss, ...
  std::string point;       // "step 3", "collective #5", "allreduce call 2", "2.5 s after start", "rendezvous"
  std::vector<int> ranks;  // the ranks it aims at; empty: every rank
  std::string node;        // a node fault: the node ("n2")
  std::string by;          // the layer that strikes it: reference_trainer | shim | probe | supervisor
};

// Whether a requested fault was struck (diagnose/fault_outcomes.h): report.json's `faults`.
struct FaultOutcome {
  RequestedFault fault;
  bool struck = false;
  std::vector<int> struck_ranks;  // the aimed ranks with a `fault` event of it (a node fault: the node's)
  std::string reason;             // not struck: why, "no rank reached step 9 (rank 1's last step was 4)"
};

// What kept a run from being judged as it ran: the facts that decide its
// verdict when it could not happen, did not apply, or was not diagnosed.
// report.json keeps each under its own top-level key (CONTRACT.md section 3).
struct RunProblems {
  std::optional<std::string> harness_error;       // verdict error: the run could not happen, or left no report
  std::optional<std::string> unsupported_reason;  // verdict unsupported: why the scenario does not apply here
  std::optional<std::string> bad_input;           // verdict unresolved: the scenario file, with file:line:col
  std::optional<std::string> diagnose_error;      // the diagnosis failed: unresolved, never a pass
  // A requested fault was not struck: `exec` error, a scenario unresolved;
  // never a clean run or a pass with the fault silently missing.
  std::optional<std::string> fault_not_struck;
};

// One run of the job's ranks (docs/DIAGNOSIS.md, "Attempts and recovery"):
// attempt 0, then one per restart by the launcher (torchrun --max-restarts).
struct AttemptRank {
  int rank = 0;
  int pid = 0;
  std::optional<int> exit_code;
  std::optional<std::string> signal;
};
struct AttemptReport {
  int attempt = 0;
  int64_t start_ms = 0;               // its first rank's start, since the run's
  std::optional<int64_t> end_ms;      // its last rank's end
  std::vector<AttemptRank> ranks;
  int64_t last_step = -1;             // the furthest step a rank of it finished; -1: none
  std::optional<int> failed_rank;     // the first of its ranks to fail; none: every rank exited 0 (or was never seen to fail)
  std::string ended;                  // "rank 1 exited with code 1: NameError: ... (train.py:40)", "every rank exited 0"
};

// Whether a job run to survive faults came back (scenarios with
// stack.max_restarts): from its attempts, nothing the launcher said.
struct Recovery {
  int restarts = 0;                        // attempts after the first
  bool recovered = false;                  // after the first attempt failed, a later one ended with every rank exiting 0
  std::optional<int64_t> time_to_recover_ms;  // the first failure to the recovered attempt's first finished step
  std::optional<int64_t> resumed_from_step;   // the step of the first attempt whose parameters the last one started from
  std::optional<int64_t> steps_lost;          // the first attempt's last step minus resumed_from_step
  std::optional<int> crash_loop_rank;         // a rank that failed first, the same way, in every attempt
  // The final parameters equal the fault-free twin's (rank 0's last parameter
  // fingerprint); absent without a twin, or when either has none.
  std::optional<bool> same_result;
  std::string summary;
};

struct Report {
  std::optional<ScenarioRef> scenario;
  StackInfo stack;
  LauncherInfo launcher;
  std::optional<RootCause> root_cause;
  std::vector<RankReport> ranks;
  std::vector<NodeReport> nodes;  // multi-node only; empty (and absent) on one node
  std::vector<Finding> findings;
  std::vector<FaultOutcome> faults;  // every requested fault and whether it was struck; empty (absent): none asked
  std::vector<AttemptReport> attempts;  // a launcher that restarts: every attempt; empty (absent) otherwise
  std::optional<Recovery> recovery;     // where restarts were allowed
  TeardownReport teardown;
  std::vector<Expectation> expectations;
  Verdict verdict = Verdict::kIncomplete;
  std::vector<TimelineEntry> timeline;
  std::vector<Span> spans;     // by rank, then begin time
  int64_t spans_dropped = 0;   // spans left out to bound the report's size
  HarnessInfo harness;
  RunProblems problems;
  // Fields a later schema adds, or a stage records beyond the contract
  // (e.g. "containment"), kept verbatim so a re-render loses nothing.
  nlohmann::json extra = nlohmann::json::object();
};

// report.json's top-level keys, each written by toJson and read by
// reportFromJson (anything else is kept in `extra`); the contract test checks
// CONTRACT.md section 3 against it.
const std::vector<std::string>& reportKeys();

nlohmann::json toJson(const Report& r);
// A requested fault as supervisor.json and report.json's `faults` hold it
// ("ranks": [int] or "all"); errors name the field.
nlohmann::json toJson(const RequestedFault& f);
Result<RequestedFault> requestedFaultFromJson(const nlohmann::json& j, const std::string& path);
nlohmann::json toJson(const FaultOutcome& o);
Result<FaultOutcome> faultOutcomeFromJson(const nlohmann::json& j, const std::string& path);
// Reads a report; names the field that is missing or of the wrong type.
Result<Report> reportFromJson(const nlohmann::json& j);
Result<Report> readReport(const std::string& path);
// Writes atomically (temp file + rename), so a reader never sees half a report.
Result<void> writeReport(const Report& r, const std::string& path);

}  // namespace faultline
