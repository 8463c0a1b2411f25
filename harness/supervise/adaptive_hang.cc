// Adaptive hang detection: thresholds from the learned rhythm, the longest
// wait, and whether the missing ranks are idle.
#include "harness/supervise/adaptive_hang.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

int64_t LongWait::watchFromNs() const {
  int64_t from = INT64_MAX;
  if (threshold.learned) from = threshold.ns / 2;
  // The idle rule judges idleness from the first look on: looking early
  // (a missing rank's few /proc files every poll, only while a wait lasts)
  // is what names it about a window after the wait began.
  if (idle_window_ns > 0) from = std::min(from, std::min<int64_t>(idle_window_ns / 4, 100'000'000));
  return from;
}

namespace {

int64_t secondsNs(double s) { return static_cast<int64_t>(s * 1e9); }

// The rendezvous: ranks inside init_process_group, and live ranks that never
// began it, judged by the idle rule alone.
std::optional<LongWait> rendezvousWait(const CollectiveTracker& tracker, const std::set<int>& live, int64_t now_ns,
                                       const AdaptiveOptions& opts) {
  if (!(opts.idle_s > 0) || !(opts.rendezvous_idle_s > 0)) return std::nullopt;
  LongWait w;
  w.op = "init_process_group";
  w.rendezvous = true;
  int64_t last_begin = 0;
  for (const auto& [rank, t] : tracker.inRendezvous()) {
    if (!live.count(rank)) continue;
    w.waiting.push_back(rank);
    last_begin = std::max(last_begin, t);
  }
  if (w.waiting.empty()) return std::nullopt;
  for (int r : live) {
    if (tracker.begunRendezvous(r)) continue;
    if (tracker.erred(r)) return std::nullopt;  // on its way out: its exit decides
    w.missing.push_back(r);
    if (tracker.inDataWait(r)) w.missing_in_data_wait.push_back(r);
  }
  if (w.missing.empty()) return std::nullopt;
  w.completed = tracker.collectivesCompleted();
  w.idle_window_ns = secondsNs(opts.rendezvous_idle_s);
  w.threshold.ns = w.idle_window_ns;
  w.threshold.learned = false;
  w.since_ns = last_begin;
  w.waited_ns = std::max<int64_t>(0, now_ns - last_begin);
  return w;
}

}  // namespace

std::optional<LongWait> longestWait(const CollectiveTracker& tracker, const std::set<int>& live, int64_t now_ns,
                                    const AdaptiveOptions& opts) {
  const bool idle_rule = opts.idle_s > 0;
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
    // A `seq` is the default group's numbering, which a group of every rank
    // shares (DeepSpeed's data-parallel group, labelled "0,1,2"): every
    // live rank takes part. A subgroup's calls carry none.
    if (!live.count(rank) || c.seq < 0 || c.op == "send" || c.op == "recv") continue;
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
      if (tracker.openCollective(r)) w.missing_in_collective.push_back(r);
      if (tracker.inDataWait(r)) w.missing_in_data_wait.push_back(r);
      if (auto st = tracker.storeWaits().find(r); st != tracker.storeWaits().end()) {
        w.missing_in_store[r] = st->second.op + " '" + st->second.key + "'";
      }
    }
    if (w.missing.empty() || dying) continue;
    auto t = adaptiveThreshold(tracker.durations(), w.op, opts);
    if (!t && !idle_rule) continue;
    w.idle_window_ns = idle_rule ? secondsNs(opts.idle_s) : 0;
    if (t) {
      w.threshold = *t;
    } else {
      w.threshold.ns = w.idle_window_ns;
      w.threshold.learned = false;
    }
    w.completed = tracker.collectivesCompleted();
    w.since_ns = g.last_begin;
    w.waited_ns = std::max<int64_t>(0, now_ns - g.last_begin);
    const double ratio = static_cast<double>(w.waited_ns) / static_cast<double>(std::max<int64_t>(1, w.threshold.ns));
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = std::move(w);
    }
  }
  if (!best) best = rendezvousWait(tracker, live, now_ns, opts);
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
  const bool learned_due = w.threshold.learned && w.due();
  const bool idle_due = w.idle_window_ns > 0 && w.waited_ns >= w.idle_window_ns;
  if (!learned_due && !idle_due) return v;
  // Busy within the window judged: the learned rule's half threshold, else
  // the idle rule's whole window.
  const int64_t window = learned_due ? w.threshold.ns / 2 : w.idle_window_ns;
  auto has = [](const std::vector<int>& v, int r) { return std::find(v.begin(), v.end(), r) != v.end(); };
  v.idle_ns = INT64_MAX;
  bool all_stopped = !w.missing.empty();
  for (int r : w.missing) {
    const int64_t idle = activity.idleNs(r, now_ns);
    v.idle_ns = std::min(v.idle_ns, idle);
    all_stopped = all_stopped && activity.stopped(r);
    // Waiting for its next batch: its DataLoader is at work, not the rank stuck.
    if (has(w.missing_in_data_wait, r) || (idle < window && !activity.stopped(r) && activity.seenBusy(r))) {
      v.busy.push_back(r);
    }
  }
  if (w.missing.empty()) v.idle_ns = 0;
  if (w.missing.empty() || !v.busy.empty()) return v;
  // A stopped rank cannot work whatever its counters said a moment ago.
  if (learned_due) v.hang = v.idle_ns >= w.threshold.ns / 2 || all_stopped;
  // The idle rule takes no single stopped sample for a hang: a node slowed by
  // SIGSTOP/SIGCONT cycles (slow_node) is stopped part of the time and works
  // the rest; one frozen for good stays idle the whole window.
  if (!v.hang && idle_due && w.missing_in_collective.empty()) {
    v.hang = v.idle_ns >= w.idle_window_ns;
    v.by_idle_rule = v.hang;
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
  const std::string where = w.rendezvous ? "the rendezvous (init_process_group)" : w.op + " seq " + std::to_string(w.seq);
  std::string out = ranksWord(w.waiting) + " waited " + durationText(w.waited_ns) + " in " + where;
  if (!v.by_idle_rule) {
    char factor[32];
    std::snprintf(factor, sizeof factor, "%g", opts.factor);
    const bool floor = w.threshold.ns > static_cast<int64_t>(opts.factor * static_cast<double>(w.threshold.p99_ns));
    out += ", past the adaptive threshold of " + durationText(w.threshold.ns) + " (" +
           (floor ? std::string("the floor; ") : factor + std::string("x the ")) + learned(w) + ")";
  }
  out += "; " + ranksWord(w.missing) + (w.missing.size() == 1 ? " is" : " are") +
         (w.rendezvous ? " not in it (never began it)" : " not in it");
  if (!w.missing_in_store.empty()) {
    // " (in the c10d store: ranks 1,2 get 'weights_ready')"
    std::map<std::string, std::vector<int>> by_call;
    for (const auto& [r, call] : w.missing_in_store) by_call[call].push_back(r);
    std::string calls;
    for (const auto& [call, ranks] : by_call) calls += (calls.empty() ? "" : "; ") + ranksWord(ranks) + " " + call;
    out += " (in the c10d store: " + calls + ")";
  }
  if (!stopped.empty()) {
    out += ", " + ranksWord(stopped) + " stopped (process state T: SIGSTOP, a freeze or a debugger)";
  } else {
    out += " and idle (no CPU, no I/O) for " + durationText(v.idle_ns);
  }
  if (v.by_idle_rule) {
    out += ": idle while its peers wait, past the idle rule's " + durationText(w.idle_window_ns) +
           (w.threshold.learned ? "" : " (no rhythm needed; " + std::to_string(w.completed) + " collective(s) completed so far)");
  }
  return out;
}

std::string describeStraggler(const LongWait& w, const std::vector<int>& busy) {
  std::vector<int> data, working;
  for (int r : busy) {
    (std::find(w.missing_in_data_wait.begin(), w.missing_in_data_wait.end(), r) != w.missing_in_data_wait.end() ? data
                                                                                                              : working)
        .push_back(r);
  }
  const std::string where = w.rendezvous ? "the rendezvous (init_process_group)" : w.op + " seq " + std::to_string(w.seq);
  std::string who;
  if (!working.empty()) who = ranksWord(working) + " busy (CPU or I/O)";
  if (!data.empty()) who += (who.empty() ? "" : ", ") + ranksWord(data) + " waiting for its DataLoader's next batch";
  const std::string basis = w.threshold.learned ? "adaptive threshold " + durationText(w.threshold.ns) + ", " + learned(w)
                                                : "idle rule " + durationText(w.idle_window_ns);
  return who + " outside " + where + " while " + ranksWord(w.waiting) + " waited " + durationText(w.waited_ns) +
         " in it (" + basis + "): a straggler, not an adaptive hang";
}

}  // namespace faultline::supervise
