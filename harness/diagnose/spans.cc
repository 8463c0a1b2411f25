// Steps and collectives as spans, per rank.
#include "harness/diagnose/spans.h"

#include <algorithm>
#include <map>

namespace faultline::diagnose {
namespace {

std::vector<Span> rankSpans(const Analysis& a, int rank, const EventLog& log) {
  std::vector<Span> out;
  std::map<int64_t, size_t> open_steps;  // step -> index in out
  std::vector<size_t> open_collectives;  // innermost last
  auto tms = [&](int64_t ns) { return msSinceStart(a, ns); };
  for (const Event& e : log.events) {
    if (e.t <= 0) continue;
    if (e.ev == "step_begin") {
      Span s;
      s.rank = rank;
      s.kind = "step";
      s.index = e.step;
      s.name = "step " + std::to_string(e.step);
      s.t_ms = tms(e.t);
      open_steps[e.step] = out.size();
      out.push_back(std::move(s));
    } else if (e.ev == "step_end") {
      if (auto it = open_steps.find(e.step); it != open_steps.end()) {
        out[it->second].dur_ms = std::max(0.0, tms(e.t) - out[it->second].t_ms);
        open_steps.erase(it);
      }
    } else if (e.ev == "collective_begin") {
      Span s;
      s.rank = rank;
      s.kind = "collective";
      s.index = e.seq;
      s.name = e.op.empty() ? "collective" : e.op;
      s.t_ms = tms(e.t);
      s.numel = e.numel;
      s.dtype = e.dtype;
      open_collectives.push_back(out.size());
      out.push_back(std::move(s));
    } else if (e.ev == "collective_end") {
      // By sequence number; a subgroup call has none: the innermost open one of that op.
      for (auto it = open_collectives.rbegin(); it != open_collectives.rend(); ++it) {
        const Span& s = out[*it];
        const bool same = e.seq >= 0 ? s.index == e.seq : (s.index < 0 && s.name == (e.op.empty() ? "collective" : e.op));
        if (!same) continue;
        out[*it].dur_ms = std::max(0.0, tms(e.t) - s.t_ms);
        open_collectives.erase(std::next(it).base());
        break;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const Span& x, const Span& y) { return x.t_ms < y.t_ms; });
  return out;
}

}  // namespace

SpanSet buildSpans(const Analysis& a, size_t cap) {
  std::map<int, std::vector<Span>> per_rank;
  size_t total = 0;
  for (const auto& [r, ri] : a.in->ranks) {
    per_rank[r] = rankSpans(a, r, ri.events);
    total += per_rank[r].size();
  }
  SpanSet set;
  const size_t share = per_rank.empty() ? cap : std::max<size_t>(cap / per_rank.size(), 2);
  for (auto& [r, spans] : per_rank) {
    if (total > cap && spans.size() > share) {
      const size_t head = share / 10, tail = share - head;
      set.dropped += static_cast<int64_t>(spans.size() - share);
      set.spans.insert(set.spans.end(), spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(head));
      set.spans.insert(set.spans.end(), spans.end() - static_cast<std::ptrdiff_t>(tail), spans.end());
    } else {
      set.spans.insert(set.spans.end(), spans.begin(), spans.end());
    }
  }
  return set;
}

}  // namespace faultline::diagnose
