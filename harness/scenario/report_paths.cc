// The shape of report.json, to reject expectation paths that can never resolve.
#include "harness/scenario/scenario.h"

#include <sstream>

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
    "launcher": {"exit_code": null, "signal": null},
    "root_cause": {"kind": null, "rank": null, "summary": null, "exception_type": null, "message": null,
                   "location": {"file": null, "line": null}, "symbol": null, "signal": null,
                   "exit_code": null, "collective": {"op": null, "seq": null},
                   "waiting_ranks": [null], "missing_ranks": [null],
                   "layers": [{"layer": null, "text": null}]},
    "ranks": [{"rank": null, "pid": null, "exit_code": null, "signal": null, "role": null,
               "diagnosis": null, "stderr_tail": null}],
    "findings": [{"kind": null, "ranks": [null], "severity": null, "summary": null, "evidence": null}],
    "teardown": {"clean": null, "duration_ms": null, "escalation": null, "by": null,
                 "survivors": [{"pid": null, "cmdline": null}], "leaks": [null]},
    "trigger": {"kind": null, "rank": null, "detail": null},
    "verdict": null,
    "timeline": [{"t_ms": null, "rank": null, "what": null}],
    "harness": {"version": null, "wall_ms": null}
  })");
  return shape;
}

}  // namespace

bool isReportPath(const std::string& path) {
  if (path.empty()) return false;
  const json* node = &reportShape();
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    std::string name = seg;
    bool indexed = false;
    if (auto b = seg.find('['); b != std::string::npos) {
      if (seg.back() != ']' || b + 2 > seg.size() - 1) return false;
      for (size_t i = b + 1; i + 1 < seg.size(); ++i) {
        if (seg[i] < '0' || seg[i] > '9') return false;
      }
      name = seg.substr(0, b);
      indexed = true;
    }
    // Arrays project: "findings.kind" is every finding's kind.
    while (node->is_array()) node = &(*node)[0];
    if (!node->is_object() || !node->contains(name)) return false;
    node = &(*node)[name];
    if (indexed && !node->is_array()) return false;
    if (indexed) node = &(*node)[0];
  }
  return true;
}

}  // namespace faultline::scenario
