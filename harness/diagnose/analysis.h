// The analysed input of root-cause analysis: each rank classified (primary,
// collateral, torn down), what the shim could not trace, and the facts every
// rule reads. Built once from a RunInput; the rules, the roles and the
// timeline only read it. Pure; no file access.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/rank_list.h"
#include "harness/diagnose/run_input.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

// How a rank ended: by its own failure (primary), because of another's
// (collateral), stopped by the teardown, or not at all.
enum class FailureClass { kNone, kPrimary, kCollateral, kTeardown, kSurvivor };

struct RankState {
  const RankInput* in = nullptr;
  FailureClass cls = FailureClass::kNone;
  Evidence evidence;  // primary or collateral evidence that ended the rank
  bool has_evidence = false;
  std::optional<int64_t> t_ns;  // when it failed
  bool t_precise = false;       // ns clock, not whole seconds
};

// Evidence the shim could not collect, per rank: why, for each kind the
// analysis relies on. Empty when every patch applied or nobody said.
struct ShimGaps {
  std::map<int, std::string> collectives, steps, process_group;
};

struct Analysis {
  const RunInput* in = nullptr;
  std::map<int, RankState> states;           // by rank
  std::vector<int> primaries;                // the ranks that failed by their own fault, ascending
  ShimGaps gaps;
  std::string collective_gap;                // "collective tracing unavailable on rank 1 (...)", or ""
  std::string step_gap;                      // "step tracking unavailable on rank 1 (...)", or ""
  std::map<int, const EventLog*> logs;       // events of the ranks whose collectives were all traced
  bool any_started = false;                  // some rank ran
  bool any_failure = false;                  // some rank did not end cleanly
  bool trigger_hang = false;                 // the supervisor saw a hang or the deadline
  std::optional<int64_t> run_start_ns;       // the supervisor's start, else the earliest first event
  std::optional<int64_t> teardown_ns;        // when the teardown began (the supervisor's, or its first signal)
};

// Classifies every rank of `in`. The Analysis points into `in`: keep it alive.
Analysis analyse(const RunInput& in);
// What the other ranks did, as far as one rank's class depends on it.
struct PeerFailures {
  bool before = false;        // another rank failed before this one ended
  bool other_than_pipe = false;  // another rank failed, at any time, by something other than SIGPIPE
  bool hang_found = false;  // the supervisor began the teardown for a hang (or the deadline) it had found
};
RankState classifyRank(const RankInput& r, std::optional<int64_t> teardown_ns = std::nullopt, PeerFailures peers = {});

// Milliseconds since the run started (0 when no start is known).
double msSinceStart(const Analysis& a, int64_t t_ns);

// Texts shared by the rules, the roles and the timeline.
std::string baseName(const std::string& path);
std::string exitText(const RankInput& r);            // "killed by SIGSEGV", "exited with code 3"
std::string rankEvidenceText(const RankState& st);   // exitText and what the evidence says
std::string shortDescribe(const Evidence& e);        // describe(), the file as its base name
std::string rankPrefix(std::optional<int> rank);     // "rank 1: " or ""
// The onion, outermost first: what the launcher said, what the rank did, the error.
std::vector<Layer> buildLayers(const RunInput& in, const RankState& st);
// "write failed with ENOSPC on /ckpt/step4.pt (FAULTLINE_INJECT write:ENOSPC:rank=1)"
std::string injectedSyscall(const Event& e);
// The first system-call fault the interposer injected into a rank before `until`.
const Event* firstInjectedSyscall(const RankInput& r, std::optional<int64_t> until);
bool hasEvent(const RankInput& r, std::string_view ev);
int64_t maxStepEnd(const RankInput& r);  // -1: no step ended
bool failedExit(const RankInput& r);     // a non-zero exit code or a signal
// The rank ended after the teardown began, and all it said was that a signal
// interrupted it (a KeyboardInterrupt, torchrun's SignalException): the
// teardown ended it, directly or through its launcher (mp.spawn's children
// get SIGINT when their parent dies), whatever its exit status.
bool interruptedByTeardown(const Analysis& a, int rank);

}  // namespace faultline::diagnose
