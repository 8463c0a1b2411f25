// The shape of report.json, to reject expectation paths that can never resolve.
#include "harness/scenario/scenario.h"

#include <algorithm>
#include <sstream>

#include "harness/model/report.h"

namespace faultline::scenario {
namespace {

using nlohmann::json;

// Objects are nested fields; a one-element array marks a list of that shape;
// null is a leaf.
const json& reportShape() {
  static const json shape = json::parse(R"({
    "schema": null,
    "scenario": {"name": null, "file": null},
    "stack": {"launcher": null, "command": [null], "world_size": null, "torch": null},
    "launcher": {"exit_code": null, "signal": null, "blamed_rank": null, "blamed_correctly": null,
                 "blamed_ranks": [null]},
    "root_cause": {"kind": null, "rank": null, "node": null, "blame": null, "ranks": [null],
                   "sides": [{"ranks": [null], "op": null, "numel": null, "site": null, "callers": [null],
                              "rank_condition": null}],
                   "summary": null, "exception_type": null, "message": null,
                   "location": {"file": null, "line": null},
                   "native_location": {"file": null, "line": null, "function": null}, "symbol": null, "signal": null,
                   "exit_code": null, "collective": {"op": null, "seq": null},
                   "waiting_ranks": [null], "missing_ranks": [null],
                   "layers": [{"layer": null, "text": null}]},
    "ranks": [{"rank": null, "node": null, "host": null, "pid": null, "exit_code": null, "signal": null, "role": null,
               "diagnosis": null, "stderr_tail": null}],
    "nodes": [{"name": null, "host": null, "ranks": [null], "lost": null, "link_down_ns": null,
               "survivors": [{"pid": null, "cmdline": null}], "agent_exit_code": null}],
    "findings": [{"kind": null, "ranks": [null], "severity": null, "summary": null, "evidence": null, "fix": null,
                  "metric": {"name": null, "sink": null, "n": null, "step": null,
                             "values": [{"rank": null, "value": null}], "logged_by": [null], "why": null,
                             "sync": null, "site": null}}],
    "faults": [{"rule": null, "kind": null, "point": null, "ranks": [null], "node": null, "by": null, "struck": null,
                "struck_ranks": [null], "reason": null}],
    "attempts": [{"attempt": null, "start_ms": null, "end_ms": null, "last_step": null, "failed_rank": null,
                  "ended": null, "ranks": [{"rank": null, "pid": null, "exit_code": null, "signal": null}]}],
    "recovery": {"restarts": null, "recovered": null, "time_to_recover_ms": null, "resumed_from_step": null,
                 "steps_lost": null, "crash_loop_rank": null, "same_result": null,
                 "summary": null},
    "teardown": {"clean": null, "duration_ms": null, "escalation": null, "by": null,
                 "survivors": [{"pid": null, "cmdline": null}], "leaks": [null]},
    "trigger": {"kind": null, "rank": null, "detail": null},
    "verdict": null,
    "timeline": [{"t_ms": null, "rank": null, "what": null, "kind": null}],
    "spans": [{"rank": null, "kind": null, "name": null, "index": null, "t_ms": null, "dur_ms": null, "numel": null,
               "dtype": null}],
    "spans_dropped": null,
    "harness": {"version": null, "wall_ms": null},
    "harness_error": null, "unsupported_reason": null, "bad_input": null, "diagnose_error": null,
    "fault_not_struck": null
  })");
  return shape;
}

// The kinds a finding can have (CONTRACT.md section 4, KIND "as finding"):
// the ones `findings[KIND]` may name.
const std::vector<std::string>& findingKinds() {
  static const std::vector<std::string> kinds = [] {
    std::vector<std::string> out;
    for (Kind k : {Kind::kSeedMismatch, Kind::kUnshardedData, Kind::kUnsyncedMetrics, Kind::kConcurrentWrites,
                   Kind::kStraggler, Kind::kNoPgDestroy, Kind::kDivergedParams}) {
      out.push_back(kindName(k));
    }
    return out;
  }();
  return kinds;
}

bool isIndex(const std::string& s) {
  if (s.empty()) return false;
  for (char ch : s) {
    if (ch < '0' || ch > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> reportPathProblem(const std::string& path) {
  const std::string unknown = "unknown report path '" + path +
                              "', expected a field of report.json such as root_cause.kind, ranks[1].role, "
                              "findings.kind or teardown.duration_ms";
  if (path.empty()) return unknown;
  const json* node = &reportShape();
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    std::string name = seg;
    std::optional<std::string> selector;  // what is between [ and ]
    if (auto b = seg.find('['); b != std::string::npos) {
      if (seg.back() != ']' || b + 2 > seg.size() - 1) return unknown;
      selector = seg.substr(b + 1, seg.size() - b - 2);
      name = seg.substr(0, b);
    }
    // Arrays project: "findings.kind" is every finding's kind.
    while (node->is_array()) node = &(*node)[0];
    if (!node->is_object() || !node->contains(name)) return unknown;
    node = &(*node)[name];
    if (selector && !node->is_array()) return unknown;
    if (selector && !isIndex(*selector)) {
      // findings[KIND]: the findings of that kind, so a path checks one finding's fields.
      if (name != "findings") return unknown;
      const auto& kinds = findingKinds();
      if (std::find(kinds.begin(), kinds.end(), *selector) == kinds.end()) {
        std::string list;
        for (const auto& k : kinds) list += (list.empty() ? "" : ", ") + k;
        return "unknown finding kind '" + *selector + "' in '" + path +
               "', expected findings[KIND].FIELD (findings[seed_mismatch].ranks) with KIND one of: " + list;
      }
    }
    if (selector) node = &(*node)[0];
  }
  return std::nullopt;
}

bool isReportPath(const std::string& path) { return !reportPathProblem(path); }

}  // namespace faultline::scenario
