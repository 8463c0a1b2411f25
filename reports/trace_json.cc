// trace.json: a run in the Chrome Trace Event format (JSON object form), which
// Perfetto and chrome://tracing open, as they open PyTorch profiler traces.
// One process per rank (steps and collectives as complete events on their own
// threads, its timeline marks as instants) and one for the harness.
#include <algorithm>
#include <map>
#include <set>

#include "reports/render.h"

namespace faultline::reports {
namespace {

using nlohmann::json;

constexpr int kHarnessPid = 0;
constexpr int kMarksTid = 0, kStepsTid = 1, kCollectivesTid = 2;

int rankPid(int rank) { return rank + 1; }
double us(double ms) { return ms * 1000.0; }

json metadata(const char* what, int pid, std::optional<int> tid, json args) {
  json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", std::move(args)}};
  m["tid"] = tid.value_or(0);
  return m;
}

// The end of the run as the report knows it: what an unfinished span runs to.
double runEndMs(const Report& r) {
  double end = static_cast<double>(r.harness.wall_ms);
  for (const auto& t : r.timeline) end = std::max(end, t.t_ms);
  for (const auto& s : r.spans) end = std::max(end, s.t_ms + s.dur_ms.value_or(0));
  return end;
}

}  // namespace

json traceForRun(const Report& r) {
  json events = json::array();
  std::set<int> ranks;
  for (const auto& k : r.ranks) ranks.insert(k.rank);
  for (const auto& s : r.spans) ranks.insert(s.rank);
  for (const auto& t : r.timeline) {
    if (t.rank) ranks.insert(*t.rank);
  }
  events.push_back(metadata("process_name", kHarnessPid, std::nullopt, {{"name", "faultline (harness)"}}));
  events.push_back(metadata("process_sort_index", kHarnessPid, std::nullopt, {{"sort_index", -1}}));
  // Multi-node: each rank's process is named and labelled by its node and
  // sorted with its node's ranks (Perfetto groups by sort index), so the
  // ranks of a node sit together; a single-node trace is as before.
  std::map<int, const RankReport*> rank_of;
  for (const auto& k : r.ranks) rank_of[k.rank] = &k;
  std::map<std::string, int> node_order;
  for (const auto& nd : r.nodes) node_order.emplace(nd.name, static_cast<int>(node_order.size()));
  for (int rank : ranks) {
    const int pid = rankPid(rank);
    const RankReport* rk = rank_of.count(rank) ? rank_of[rank] : nullptr;
    const bool on_node = rk && rk->node && node_order.count(*rk->node);
    std::string name = "rank " + std::to_string(rank);
    if (on_node) name += " (" + *rk->node + ")";
    if (rk && rk->role == RankRole::kLost) name += " lost";
    events.push_back(metadata("process_name", pid, std::nullopt, {{"name", name}}));
    const int sort = on_node ? (node_order[*rk->node] + 1) * 1000000 + rank : rank;
    events.push_back(metadata("process_sort_index", pid, std::nullopt, {{"sort_index", sort}}));
    if (on_node) {
      std::string labels = "node " + *rk->node;
      if (rk->host) labels += ", host " + *rk->host;
      events.push_back(metadata("process_labels", pid, std::nullopt, {{"labels", labels}}));
    }
    events.push_back(metadata("thread_name", pid, kMarksTid, {{"name", "events"}}));
    events.push_back(metadata("thread_name", pid, kStepsTid, {{"name", "steps"}}));
    events.push_back(metadata("thread_name", pid, kCollectivesTid, {{"name", "collectives"}}));
  }
  const double end_ms = runEndMs(r);
  for (const auto& s : r.spans) {
    const bool open = !s.dur_ms;
    json args = {{"rank", s.rank}, {"ended", !open}};
    if (s.index >= 0) args[s.kind == "step" ? "step" : "seq"] = s.index;
    if (s.numel >= 0) args["numel"] = s.numel;
    if (!s.dtype.empty()) args["dtype"] = s.dtype;
    std::string name = s.kind == "step" || s.index < 0 ? s.name : s.name + " #" + std::to_string(s.index);
    if (open) name += " (never ended)";
    events.push_back({{"ph", "X"},
                      {"name", name},
                      {"cat", s.kind},
                      {"pid", rankPid(s.rank)},
                      {"tid", s.kind == "step" ? kStepsTid : kCollectivesTid},
                      {"ts", us(s.t_ms)},
                      {"dur", us(open ? std::max(0.0, end_ms - s.t_ms) : *s.dur_ms)},
                      {"args", std::move(args)}});
  }
  for (const auto& t : r.timeline) {
    events.push_back({{"ph", "i"},
                      {"s", t.rank ? "t" : "p"},
                      {"name", t.what},
                      {"cat", timelineKindName(t.kind)},
                      {"pid", t.rank ? rankPid(*t.rank) : kHarnessPid},
                      {"tid", kMarksTid},
                      {"ts", us(t.t_ms)},
                      {"args", {{"kind", timelineKindName(t.kind)}, {"what", t.what}}}});
  }
  json other = {{"generator", "faultline " + r.harness.version},
                {"verdict", verdictName(r.verdict)},
                {"stack", r.stack.launcher},
                {"headline", headline(r)}};
  if (r.scenario) other["scenario"] = r.scenario->name;
  if (r.spans_dropped > 0) other["spans_dropped"] = r.spans_dropped;
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", std::move(other)}};
}

}  // namespace faultline::reports
