// faultOutcomes: each requested fault against the `fault` events of the ranks
// and nodes it aims at.
#include "harness/diagnose/fault_outcomes.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "harness/diagnose/rank_list.h"
#include "harness/probe/fault_spec.h"

namespace faultline::diagnose {
namespace {

// The same fault: its kind, and its rule where the event names one (the
// reference trainer's events name only the kind). A rule that differs
// still matches when it is the only fault of that kind asked for.
bool sameFault(const std::string& kind, const std::string& rule, const RequestedFault& f, bool only_of_kind) {
  if (kind != f.kind) return false;
  return rule.empty() || rule == f.rule || only_of_kind;
}

int64_t lastStep(const RankInput& r) {
  int64_t m = -1;
  for (const Event& e : r.events.events) {
    if (e.ev == "step_begin" || e.ev == "step_end") m = std::max(m, e.step);
  }
  return m;
}

int64_t collectivesEntered(const RankInput& r) {
  int64_t n = 0;
  for (const Event& e : r.events.events) n += e.ev == "collective_begin";
  return n;
}

std::string per(const std::vector<int>& ranks, const std::vector<int64_t>& values, const std::string& what) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) {
    out += (i ? ", " : "") + std::string("rank ") + std::to_string(ranks[i]) + " " + what + " " +
           (values[i] < 0 ? std::string("none") : std::to_string(values[i]));
  }
  return out;
}

// Why a fault aimed at `aimed` (the ranks found of them in `found`) was not struck.
std::string whyNotStruck(const RunInput& in, const RequestedFault& f, const std::vector<int>& aimed,
                         const std::vector<int>& found) {
  std::vector<int> missing;
  for (int r : aimed) {
    if (std::find(found.begin(), found.end(), r) == found.end()) missing.push_back(r);
  }
  std::string why;
  if (!missing.empty()) {
    why = (missing.size() == 1 ? "rank " : "ranks ") + joinRanks(missing) +
          (missing.size() == 1 ? " was never found" : " were never found");
    if (found.empty()) return why + " (the run found " + std::to_string(in.ranks.size()) + " rank(s))";
    why += "; ";
  }
  if (!f.node.empty() && !in.nodes.count(f.node)) return why + "node " + f.node + " has no record of the run";
  if (found.empty()) return why + "no rank of the run was ever found";
  // The layer that strikes a rank fault writes its `fault` event to the
  // rank's own events, as the shim, the probe and the supervisor all do: a
  // rank with none at all has nothing to show it was struck.
  if (f.node.empty() && std::all_of(found.begin(), found.end(), [&](int r) {
        const RankInput& ri = in.ranks.at(r);  // (events read from a Flight Recorder dump are torch's)
        return (ri.events.events.empty() || ri.flight_recorder) && ri.announced_faults.empty();
      })) {
    return why + (found.size() == 1 ? "rank " : "ranks ") + joinRanks(found) +
           " wrote no events at all (no shim or probe in it, or its events file is gone), so nothing shows it was "
           "struck";
  }
  // The point, as the fault's own parser reads its rule.
  const auto spec = probe::parseFaultSpec(f.rule);
  if (spec && spec->atStep()) {
    const int64_t step = spec->step;
    std::vector<int64_t> last;
    for (int r : found) last.push_back(lastStep(in.ranks.at(r)));
    if (std::all_of(last.begin(), last.end(), [&](int64_t s) { return s < step; })) {
      if (std::all_of(last.begin(), last.end(), [](int64_t s) { return s < 0; })) {
        return why + "no aimed rank recorded a step, so none reached step " + std::to_string(step) +
               " (no step events: the trainer's loop was not seen, or it ended first)";
      }
      return why + "no aimed rank reached step " + std::to_string(step) + " (" + per(found, last, "last reached step") +
             ")";
    }
  } else if (spec && spec->collective) {
    const int64_t k = *spec->collective;
    std::vector<int64_t> n;
    for (int r : found) n.push_back(collectivesEntered(in.ranks.at(r)));
    if (std::all_of(n.begin(), n.end(), [&](int64_t c) { return c <= k; })) {
      return why + "no aimed rank reached collective #" + std::to_string(k) + " (" +
             per(found, n, "entered collectives:") + ")";
    }
  } else if (spec && spec->after_s && spec->since_first_step) {
    std::vector<int64_t> last;
    for (int r : found) last.push_back(lastStep(in.ranks.at(r)));
    if (std::all_of(last.begin(), last.end(), [](int64_t s) { return s < 0; })) {
      return why + "no aimed rank recorded a step, so the fault's clock (since its first step) never started";
    }
  } else if (spec && spec->after_s && in.supervisor && in.supervisor->end_ns > in.supervisor->start_ns) {
    const double ran_s = static_cast<double>(in.supervisor->end_ns - in.supervisor->start_ns) / 1e9;
    if (ran_s < *spec->after_s) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f", ran_s);
      return why + "the run ended " + buf + " s after start, before the fault's time";
    }
  }
  const std::string who = f.node.empty() ? (found.size() == 1 ? "rank " : "ranks ") + joinRanks(found) : "node " + f.node;
  return why + who + " reached " + f.point + ", and no `fault` event says " + (f.by.empty() ? "its layer" : f.by) +
         " struck it there (a patch that did not apply, or a point it does not see)";
}

}  // namespace

std::vector<FaultOutcome> faultOutcomes(const RunInput& in) {
  std::vector<FaultOutcome> out;
  if (!in.supervisor) return out;
  const auto& asked = in.supervisor->faults;
  for (const RequestedFault& f : asked) {
    const bool only_of_kind =
        std::count_if(asked.begin(), asked.end(), [&](const RequestedFault& g) { return g.kind == f.kind; }) == 1;
    FaultOutcome o;
    o.fault = f;
    std::vector<int> aimed = f.ranks;
    if (aimed.empty()) {
      const int world = std::max<int>(in.world_size, static_cast<int>(in.ranks.size()));
      for (int r = 0; r < world; ++r) aimed.push_back(r);
    }
    std::vector<int> found;
    for (int r : aimed) {
      auto it = in.ranks.find(r);
      if (it == in.ranks.end() || !it->second.started) continue;
      found.push_back(r);
      const RankInput& ri = it->second;
      const bool in_events = std::any_of(ri.events.events.begin(), ri.events.events.end(), [&](const Event& e) {
        return e.ev == "fault" && sameFault(e.kind, e.rule, f, only_of_kind);
      });
      // Without the probe's events, the reference trainer's own announcement.
      const bool announced = std::any_of(ri.announced_faults.begin(), ri.announced_faults.end(),
                                         [&](const std::string& kind) { return sameFault(kind, "", f, only_of_kind); });
      if (in_events || announced) o.struck_ranks.push_back(r);
    }
    if (!f.node.empty()) {
      if (auto n = in.nodes.find(f.node); n != in.nodes.end()) {
        for (const NodeEvent& e : n->second.faults) {
          if (sameFault(e.kind, e.rule, f, only_of_kind)) {
            o.struck = true;
            break;
          }
        }
      }
    }
    o.struck = o.struck || !o.struck_ranks.empty();
    if (!o.struck) o.reason = whyNotStruck(in, f, aimed, found);
    out.push_back(std::move(o));
  }
  return out;
}

std::string faultsNotStruck(const std::vector<FaultOutcome>& outcomes) {
  std::string out;
  for (const FaultOutcome& o : outcomes) {
    if (o.struck) continue;
    out += (out.empty() ? "" : "; ") + o.fault.rule + " (" + o.fault.point + ") was not struck: " + o.reason;
  }
  return out;
}

}  // namespace faultline::diagnose
