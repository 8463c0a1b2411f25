// Adaptive hang detection: thresholds from the learned rhythm, the longest
// wait, and whether the missing ranks are idle.
#include "harness/supervise/adaptive_hang.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "harness/probe/fault_spec.h"

namespace faultline::supervise {

std::optional<Threshold> adaptiveThreshold(const DurationHistory& history, const std::string& op,
                                           const AdaptiveOptions& opts) {
  if (!(opts.factor > 0)) return std::nullopt;
  const DurationWindow* w = history.op(op);
  std::string basis = op;
  if (!w || w->count() < opts.min_samples) {
    w = &history.allOps();
    basis = "all ops";
  }
  if (w->count() < opts.min_samples) return std::nullopt;
  const auto p99 = w->quantile(0.99);
  if (!p99) return std::nullopt;
  Threshold t;
  t.p99_ns = *p99;
  t.samples = w->count();
  t.basis = basis;
  const double scaled = opts.factor * static_cast<double>(*p99);
  t.ns = static_cast<int64_t>(std::max(opts.floor_s * 1e9, scaled));
  return t;
}

std::optional<LongWait> longestWait(const CollectiveTracker& tracker, const std::set<int>& live, int64_t now_ns,
                                    const AdaptiveOptions& opts) {
  if (live.empty() || tracker.anyUntraced()) return std::nullopt;
  const std::set<int> seen = tracker.ranksSeen();
  for (int r : live) {
    if (!seen.count(r)) return std::nullopt;  // a rank with no event yet: still starting, or not instrumented
  }
  // (op, seq) -> the ranks inside it and the latest of their begins.
  struct Group {
    std::vector<int> ranks;
    int64_t last_begin = 0;
  };
  std::map<std::pair<std::string, int64_t>, Group> groups;
  for (const auto& [rank, c] : tracker.openCollectives()) {
    if (!live.count(rank) || c.seq < 0 || !c.group.empty() || c.op == "send" || c.op == "recv") continue;
    Group& g = groups[{c.op, c.seq}];
    g.ranks.push_back(rank);
    g.last_begin = std::max(g.last_begin, c.t_ns);
  }
  std::optional<LongWait> best;
  double best_ratio = -1;
  for (const auto& [key, g] : groups) {
    LongWait w;
    w.op = key.first;
    w.seq = key.second;
    w.waiting = g.ranks;
    bool dying = false;
    for (int r : live) {
      if (std::find(g.ranks.begin(), g.ranks.end(), r) != g.ranks.end()) continue;
      // Gone past it already (a gather's sender may leave before the root has
      // every part): it took part, it is not missing.
      if (tracker.seqPassed(r) >= w.seq) continue;
      w.missing.push_back(r);
      dying = dying || tracker.erred(r);
    }
    if (w.missing.empty() || dying) continue;
    auto t = adaptiveThreshold(tracker.durations(), w.op, opts);
    if (!t) continue;
    w.threshold = *t;
    w.since_ns = g.last_begin;
    w.waited_ns = std::max<int64_t>(0, now_ns - g.last_begin);
    const double ratio = static_cast<double>(w.waited_ns) / static_cast<double>(std::max<int64_t>(1, t->ns));
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = std::move(w);
    }
  }
  return best;
}

void ActivityWatch::sample(int rank, const Activity& a, int64_t now_ns) {
  auto it = seen_.find(rank);
  if (it == seen_.end()) {
    seen_[rank] = Seen{a, now_ns, a.state};
    return;
  }
  Seen& s = it->second;
  s.state = a.state;
  const bool busy = a.cpu_ticks >= s.ref.cpu_ticks + 2 || a.io_chars != s.ref.io_chars || a.state == 'R' ||
                    a.state == 'D';
  if (busy) {
    s.ref = a;
    s.busy_ns = now_ns;
    s.busy_since_first = true;
  }
}

int64_t ActivityWatch::idleNs(int rank, int64_t now_ns) const {
  auto it = seen_.find(rank);
  return it == seen_.end() ? 0 : std::max<int64_t>(0, now_ns - it->second.busy_ns);
}

bool ActivityWatch::seenBusy(int rank) const {
  auto it = seen_.find(rank);
  return it != seen_.end() && it->second.busy_since_first;
}

bool ActivityWatch::stopped(int rank) const {
  auto it = seen_.find(rank);
  return it != seen_.end() && (it->second.state == 'T' || it->second.state == 't');
}

WaitVerdict judgeWait(const LongWait& w, const ActivityWatch& activity, int64_t now_ns) {
  WaitVerdict v;
  if (!w.due()) return v;
  const int64_t window = w.threshold.ns / 2;
  v.idle_ns = INT64_MAX;
  for (int r : w.missing) {
    const int64_t idle = activity.idleNs(r, now_ns);
    v.idle_ns = std::min(v.idle_ns, idle);
    if (idle < window && !activity.stopped(r) && activity.seenBusy(r)) v.busy.push_back(r);
  }
  if (w.missing.empty()) v.idle_ns = 0;
  v.hang = !w.missing.empty() && v.busy.empty() && v.idle_ns >= window;
  // A stopped rank cannot work whatever its counters said a moment ago.
  if (!w.missing.empty() && v.busy.empty()) {
    bool all_stopped = true;
    for (int r : w.missing) all_stopped = all_stopped && activity.stopped(r);
    v.hang = v.hang || all_stopped;
  }
  return v;
}

std::string durationText(int64_t ns) {
  char buf[32];
  if (ns < 10'000'000) {
    std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  } else if (ns < 10'000'000'000) {
    std::snprintf(buf, sizeof buf, "%.0f ms", static_cast<double>(ns) / 1e6);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ns) / 1e9);
  }
  return buf;
}

namespace {

std::string ranksWord(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + probe::rankList(ranks);
}

std::string learned(const LongWait& w) {
  return "learned p99 " + durationText(w.threshold.p99_ns) + " of " + w.threshold.basis + " over " +
         std::to_string(w.threshold.samples) + " durations";
}

}  // namespace

std::string describeHang(const LongWait& w, const WaitVerdict& v, const AdaptiveOptions& opts,
                         const std::vector<int>& stopped) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", opts.factor);
  const bool floor = w.threshold.ns > static_cast<int64_t>(opts.factor * static_cast<double>(w.threshold.p99_ns));
  std::string out = ranksWord(w.waiting) + " waited " + durationText(w.waited_ns) + " in " + w.op + " seq " +
                    std::to_string(w.seq) + ", past the adaptive threshold of " + durationText(w.threshold.ns) + " (" +
                    (floor ? std::string("the floor; ") : factor + std::string("x the ")) + learned(w) + "); " +
                    ranksWord(w.missing) + (w.missing.size() == 1 ? " is" : " are") + " not in it";
  if (!stopped.empty()) {
    out += ", " + ranksWord(stopped) + " stopped (process state T: SIGSTOP, a freeze or a debugger)";
  } else {
    out += " and idle (no CPU, no I/O) for " + durationText(v.idle_ns);
  }
  return out;
}

std::string describeStraggler(const LongWait& w, const std::vector<int>& busy) {
  return ranksWord(busy) + " busy (CPU or I/O) outside " + w.op + " seq " + std::to_string(w.seq) + " while " +
         ranksWord(w.waiting) + " waited " + durationText(w.waited_ns) + " in it (adaptive threshold " +
         durationText(w.threshold.ns) + ", " + learned(w) + "): a straggler, not an adaptive hang";
}

}  // namespace faultline::supervise
