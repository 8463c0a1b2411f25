// Root-cause analysis.
#include "harness/diagnose/analyze.h"

#include <algorithm>
#include <map>
#include <limits>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/collectives.h"
#include "harness/diagnose/instruments.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

enum class FailureClass { kNone, kPrimary, kCollateral, kTeardown, kSurvivor };

struct RankState {
  const RankInput* in = nullptr;
  FailureClass cls = FailureClass::kNone;
  Evidence evidence;  // primary or collateral evidence that ended the rank
  bool has_evidence = false;
  std::optional<int64_t> t_ns;  // when it failed
  bool t_precise = false;       // ns clock, not whole seconds
};

std::string baseName(const std::string& path) {
  const size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string exitText(const RankInput& r) {
  if (r.signal) return "killed by " + *r.signal;
  if (r.exit_code) return "exited with code " + std::to_string(*r.exit_code);
  if (r.killed_by_teardown) return "stopped by the launcher's teardown";
  return "exit status unknown";
}

bool failedExit(const RankInput& r) {
  return (r.exit_code && *r.exit_code != 0) || r.signal.has_value();
}

bool isTeardownSignal(const std::optional<std::string>& s) {
  return s && (*s == "SIGTERM" || *s == "SIGINT" || *s == "SIGHUP" || *s == "SIGKILL");
}

// "NameError: name 'c' is not defined (train.py:42)"
std::string shortDescribe(const Evidence& e) {
  Evidence copy = e;
  if (copy.location) copy.location->file = baseName(copy.location->file);
  return describe(copy);
}

std::optional<int64_t> lastEventTime(const RankInput& r) {
  if (r.events.events.empty()) return std::nullopt;
  int64_t t = 0;
  for (const Event& e : r.events.events) t = std::max(t, e.t);
  return t;
}

RankState classifyRank(const RankInput& r) {
  RankState st;
  st.in = &r;
  const Evidence* term = terminalError(r.errors);
  const bool failed = failedExit(r) || (!r.exit_known && term) || (term && !term->collateral);
  if (term) {
    st.evidence = *term;
    st.has_evidence = true;
  }
  // When: the supervisor's exit time, else the probe's error event, else the
  // last event the rank wrote, else an error file's whole-second stamp.
  if (r.exit_ns) {
    st.t_ns = r.exit_ns;
    st.t_precise = true;
  }
  for (const Evidence& e : r.errors) {
    if (e.origin == "events.jsonl" && e.t_ns && (!st.t_ns || *e.t_ns < *st.t_ns)) {
      st.t_ns = e.t_ns;
      st.t_precise = true;
    }
  }
  if (!st.t_ns) {
    if (auto t = lastEventTime(r)) {
      st.t_ns = t;
      st.t_precise = true;
    } else if (term && term->t_ns) {
      st.t_ns = term->t_ns;
    }
  }
  if (!failed) {
    if (r.started && !r.exit_known && r.killed_by_teardown) st.cls = FailureClass::kTeardown;
    return st;
  }
  if (term && !term->collateral) {
    st.cls = FailureClass::kPrimary;
    return st;
  }
  if (term) {
    st.cls = FailureClass::kCollateral;
    return st;
  }
  // No text evidence: the exit status alone.
  if (r.killed_by_teardown || (isTeardownSignal(r.signal) && *r.signal != "SIGKILL")) {
    st.cls = FailureClass::kTeardown;
    return st;
  }
  st.cls = FailureClass::kPrimary;
  st.has_evidence = true;
  if (r.signal) {
    st.evidence.kind = Kind::kSignal;
    st.evidence.signal = *r.signal;
    st.evidence.type = *r.signal;
    if (*r.signal == "SIGKILL") st.evidence.note = "possible OOM kill (SIGKILL with no other evidence)";
  } else {
    st.evidence.kind = Kind::kExitCode;
    st.evidence.exit_code = r.exit_code;
    st.evidence.type = "exit code " + std::to_string(r.exit_code.value_or(-1));
  }
  // A native stack dump may say where.
  return st;
}


void addLocationFromStacks(Evidence& e, const RankInput& r) {
  if (e.location || r.stacks.empty()) return;
  if (const PyFrame* f = userFrame(r.stacks)) {
    e.location = Location{f->file, f->line};
    e.source_line = f->source;
  }
}

std::string rankEvidenceText(const RankState& st) {
  const RankInput& r = *st.in;
  std::string s = exitText(r);
  if (st.has_evidence && st.evidence.kind != Kind::kExitCode &&
      !(st.evidence.kind == Kind::kSignal && st.evidence.message.empty())) {
    s += ": " + shortDescribe(st.evidence);
  }
  if (!st.evidence.note.empty()) s += " (" + st.evidence.note + ")";
  return s;
}

// "rank 1: " before a summary, or nothing when no rank can be named.
std::string rankPrefix(std::optional<int> rank) { return rank ? "rank " + std::to_string(*rank) + ": " : std::string(); }

// The fields every collective verdict (mismatch or hang) puts in a root cause.
RootCause rootFromCollective(const CollectiveVerdict& v) {
  RootCause c;
  c.kind = v.kind;
  c.rank = v.rank;
  c.collective = v.collective;
  c.waiting_ranks = v.waiting;
  c.missing_ranks = v.missing;
  return c;
}

std::vector<Layer> buildLayers(const RunInput& in, const RankState& st) {
  std::vector<Layer> layers;
  if (in.launcher && in.launcher->wrapper && !in.launcher->wrapper->type.empty()) {
    const PyTraceback& w = *in.launcher->wrapper;
    std::string text = w.shortType() + (w.message.empty() ? "" : ": " + w.message);
    if (in.launcher->claimed_root_rank) {
      text += " (the launcher named rank " + std::to_string(*in.launcher->claimed_root_rank) + " as root cause";
      if (st.in && *in.launcher->claimed_root_rank != st.in->rank) text += "; wrong";
      text += ")";
    }
    layers.push_back({"launcher", text});
  } else if (in.launcher_exit_code || in.launcher_signal) {
    layers.push_back({"launcher", in.launcher_signal ? "launcher killed by " + *in.launcher_signal
                                                     : "launcher exited with code " +
                                                           std::to_string(*in.launcher_exit_code)});
  }
  if (st.in) {
    layers.push_back({"process", "rank " + std::to_string(st.in->rank) + " " + exitText(*st.in)});
  }
  if (st.has_evidence) {
    for (const std::string& outer : st.evidence.chain) layers.push_back({"error", outer});
    if (st.evidence.kind != Kind::kExitCode) layers.push_back({"error", describe(st.evidence)});
  }
  return layers;
}

RootCause rootFromEvidence(const RunInput& in, const RankState& st) {
  RootCause rc;
  const Evidence& e = st.evidence;
  rc.kind = e.kind;
  rc.rank = st.in ? std::optional<int>(st.in->rank) : std::nullopt;
  if (!e.type.empty() && e.kind != Kind::kSignal && e.kind != Kind::kExitCode && e.type != "symbol lookup error") {
    rc.exception_type = e.type;
  }
  if (!e.message.empty()) rc.message = e.message;
  rc.location = e.location;
  if (!e.symbol.empty()) rc.symbol = e.symbol;
  if (st.in && st.in->signal) rc.signal = st.in->signal;
  else if (!e.signal.empty()) rc.signal = e.signal;
  if (st.in && st.in->exit_code) rc.exit_code = st.in->exit_code;
  else if (e.exit_code) rc.exit_code = e.exit_code;
  std::string what;
  switch (e.kind) {
    case Kind::kSignal:
      what = "killed by " + rc.signal.value_or(e.signal);
      if (!e.function.empty()) what += " in " + e.function;
      if (!e.message.empty() && e.message != e.signal) what += " (" + e.message + ")";
      if (e.location) what += " (" + baseName(e.location->file) + ":" + std::to_string(e.location->line) + ")";
      if (!e.note.empty()) what += "; " + e.note;
      break;
    case Kind::kExitCode:
      what = "exited with code " + std::to_string(rc.exit_code.value_or(-1));
      if (e.location) what += " (" + baseName(e.location->file) + ":" + std::to_string(e.location->line) + ")";
      break;
    default:
      what = shortDescribe(e);
  }
  rc.summary = rankPrefix(rc.rank) + what;
  rc.layers = buildLayers(in, st);
  return rc;
}

// Evidence the shim could not collect, per rank: why, for each kind the
// analysis relies on. Empty when every patch applied or nobody said.
struct ShimGaps {
  std::map<int, std::string> collectives, steps, process_group;
};

ShimGaps shimGaps(const RunInput& in) {
  ShimGaps g;
  for (const auto& [r, ri] : in.ranks) {
    const auto inst = rankInstruments(ri.events);
    if (!inst) continue;
    if (auto m = missingEvidence(*inst, ShimEvidence::kCollectives)) g.collectives[r] = *m;
    if (auto m = missingEvidence(*inst, ShimEvidence::kSteps)) g.steps[r] = *m;
    if (auto m = missingEvidence(*inst, ShimEvidence::kProcessGroup)) g.process_group[r] = *m;
  }
  return g;
}

// "collective tracing unavailable on rank 1 (patch dist.all_reduce failed: TypeError: ...)"
std::string gapText(const std::map<int, std::string>& gaps, const std::string& what) {
  std::string s;
  for (const auto& [r, why] : gaps) {
    s += (s.empty() ? "" : "; ") + what + " unavailable on rank " + std::to_string(r) + " (" + why + ")";
  }
  return s;
}

// The ranks' events for the collective analysis, leaving out ranks whose
// collectives were not all traced: their sequence numbers do not line up
// with their peers', and a call they made may simply not be there.
std::map<int, const EventLog*> eventLogs(const RunInput& in, const std::map<int, std::string>& untraced = {}) {
  std::map<int, const EventLog*> logs;
  for (const auto& [r, ri] : in.ranks) {
    if (!ri.events.events.empty() && !untraced.count(r)) logs[r] = &ri.events;
  }
  return logs;
}

int64_t maxStepEnd(const RankInput& r) {
  int64_t m = -1;
  for (const Event& e : r.events.events) {
    if (e.ev == "step_end") m = std::max(m, e.step);
  }
  return m;
}

bool hasEvent(const RankInput& r, std::string_view ev) {
  for (const Event& e : r.events.events) {
    if (e.ev == ev) return true;
  }
  return false;
}

// "write failed with ENOSPC on /ckpt/step4.pt (FAULTLINE_INJECT write:ENOSPC:rank=1)"
std::string injectedSyscall(const Event& e) {
  std::string s = (e.call.empty() ? "a system call" : e.call) + " failed with " + (e.err.empty() ? "an error" : e.err);
  if (!e.path.empty()) s += " on " + e.path;
  if (!e.addr.empty()) s += " to " + e.addr;
  if (!e.rule.empty()) s += " (FAULTLINE_INJECT " + e.rule + ")";
  return s;
}

// The first system-call fault the interposer injected into a rank, if any
// came before `until` (when the rank failed).
const Event* firstInjectedSyscall(const RankInput& r, std::optional<int64_t> until) {
  for (const Event& e : r.events.events) {
    if (e.ev == "fault" && e.kind == "syscall" && (!until || e.t <= *until)) return &e;
  }
  return nullptr;
}

std::string joinRanks(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

Diagnosis analyzeRun(const RunInput& in) {
  Diagnosis d;
  std::map<int, RankState> states;
  for (const auto& [r, ri] : in.ranks) states[r] = classifyRank(ri);

  int64_t run_start = std::numeric_limits<int64_t>::max();
  if (in.supervisor && in.supervisor->start_ns > 0) run_start = in.supervisor->start_ns;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.t > 0) run_start = std::min(run_start, e.t);
      break;
    }
  }
  auto tms = [&](int64_t t) {
    return run_start == std::numeric_limits<int64_t>::max() ? 0.0 : static_cast<double>(t - run_start) / 1e6;
  };

  bool any_started = false;
  for (const auto& [r, ri] : in.ranks) any_started = any_started || ri.started;

  std::optional<RootCause> rc;
  std::optional<int> root_rank;
  std::vector<int> waiting_ranks;

  // 1. The launcher failed before any rank started, or crashed itself.
  std::vector<const RankState*> primaries;
  for (const auto& [r, st] : states) {
    if (st.cls == FailureClass::kPrimary) primaries.push_back(&st);
  }
  const bool launcher_crashed = in.launcher && in.launcher->launcher_crashed;
  if ((launcher_crashed && (!any_started || primaries.empty())) ||
      (!any_started && (in.launcher_signal || (in.launcher_exit_code && *in.launcher_exit_code != 0)))) {
    RootCause l;
    l.kind = Kind::kLauncherError;
    std::string what;
    if (in.launcher && in.launcher->wrapper && !in.launcher->wrapper->type.empty()) {
      const PyTraceback& w = *in.launcher->wrapper;
      l.exception_type = w.type;
      if (!w.message.empty()) l.message = w.message;
      if (const PyFrame* f = w.innermost()) l.location = Location{f->file, f->line};
      what = w.type + (w.message.empty() ? "" : ": " + w.message);
      if (l.location) what += " (" + baseName(l.location->file) + ":" + std::to_string(l.location->line) + ")";
    } else {
      what = in.launcher_signal ? "killed by " + *in.launcher_signal
                                : "exited with code " + std::to_string(in.launcher_exit_code.value_or(-1));
    }
    l.signal = in.launcher_signal;
    l.exit_code = in.launcher_exit_code;
    l.summary = std::string("launcher") + (any_started ? ": " : " failed before any rank started: ") + what;
    if (in.launcher_exit_code || in.launcher_signal) {
      l.layers.push_back({"launcher", in.launcher_signal ? "launcher killed by " + *in.launcher_signal
                                                         : "launcher exited with code " +
                                                               std::to_string(*in.launcher_exit_code)});
    }
    l.layers.push_back({"error", what});
    rc = l;
  }

  // 2. A mismatch in the collectives explains the errors it causes.
  const ShimGaps gaps = shimGaps(in);
  const std::string collective_gap = gapText(gaps.collectives, "collective tracing");
  const auto logs = eventLogs(in, gaps.collectives);
  if (!rc) {
    if (auto m = findCollectiveMismatch(logs)) {
      RootCause c = rootFromCollective(*m);
      c.summary = rankPrefix(m->rank) + "collective mismatch: " + m->detail;
      if (m->rank && states.count(*m->rank)) {
        const RankState& st = states.at(*m->rank);
        if (st.has_evidence && st.evidence.location && !isLibraryPath(st.evidence.location->file)) {
          c.location = st.evidence.location;
        }
        c.layers = buildLayers(in, st);
      }
      c.layers.push_back({"error", m->detail});
      root_rank = m->rank;
      rc = c;
    }
  }

  // 3. The earliest primary failure.
  if (!rc && !primaries.empty()) {
    std::stable_sort(primaries.begin(), primaries.end(), [](const RankState* a, const RankState* b) {
      if (a->t_ns.has_value() != b->t_ns.has_value()) return a->t_ns.has_value();
      if (a->t_ns && b->t_ns && *a->t_ns != *b->t_ns) return *a->t_ns < *b->t_ns;
      return false;  // same time or none: keep rank order
    });
    RankState first = *primaries.front();
    addLocationFromStacks(first.evidence, *first.in);
    rc = rootFromEvidence(in, first);
    root_rank = first.in->rank;
    // A rank that merely exited before any rank had a process group left its
    // peers waiting at the rendezvous: the failure is the rendezvous's.
    // (Only instrumented ranks can say they never had a group; a peer that
    // exited cleanly was not waiting.)
    bool any_pg = false, instrumented = false, peer_clean = false;
    for (const auto& [r, st] : states) {
      any_pg = any_pg || hasEvent(*st.in, "pg_init");
      instrumented = instrumented || hasEvent(*st.in, "start");
      peer_clean = peer_clean || (st.in->exit_known && st.in->exit_code == 0 && !st.in->signal);
    }
    // (A rank whose init_process_group the shim could not wrap says nothing.)
    if (instrumented && !any_pg && !peer_clean && gaps.process_group.empty() &&
        first.evidence.kind == Kind::kExitCode && in.world_size > 1) {
      rc->kind = Kind::kRendezvousFailure;
      rc->missing_ranks = {first.in->rank};
      const std::string detail = "rank " + std::to_string(first.in->rank) + " exited with code " +
                                 std::to_string(first.evidence.exit_code.value_or(-1)) +
                                 " before joining the process group; the other ranks waited at the rendezvous";
      rc->summary = "rank " + std::to_string(first.in->rank) + ": rendezvous failure: " + detail;
      rc->layers.push_back({"error", detail});
    }
  }

  // 4. Only collateral: a hang in a collective, a shutdown hang, a rendezvous failure.
  bool any_failure = false;
  for (const auto& [r, st] : states) any_failure = any_failure || st.cls != FailureClass::kNone;
  const bool trigger_hang = in.supervisor && (in.supervisor->trigger.kind == TriggerKind::kHang ||
                                              in.supervisor->trigger.kind == TriggerKind::kDeadline);
  if (!rc && (any_failure || trigger_hang)) {
    if (auto h = findHungCollective(logs)) {
      RootCause c = rootFromCollective(*h);
      std::string where;
      if (h->rank && in.ranks.count(*h->rank)) {
        const RankInput& missing = in.ranks.at(*h->rank);
        if (const PyFrame* f = userFrame(missing.stacks)) {
          c.location = Location{f->file, f->line};
          where = " (stack: " + baseName(f->file) + ":" + std::to_string(f->line) +
                  (f->function.empty() ? "" : " in " + f->function) + ")";
        }
        c.layers = buildLayers(in, states.at(*h->rank));
      }
      std::string detail = h->detail;
      if (!collective_gap.empty()) {
        // Only the traced ranks were compared: "every rank" is every traced one.
        const std::string every = "that every rank entered";
        if (const size_t p = detail.find(every); p != std::string::npos) {
          detail.replace(p, every.size(), "that every traced rank entered");
        }
        detail += "; " + collective_gap;
      }
      c.layers.push_back({"error", detail});
      c.summary = rankPrefix(h->rank) + "hung collective: " + detail + where;
      root_rank = h->rank;
      waiting_ranks = h->waiting;
      rc = c;
    }
  }
  // Shutdown hang: every rank finished the same last step, or destroyed its
  // process group (no step events: no DDP, or a torch whose optimizer the
  // shim could not hook), and one never exited. Not where the shim could not
  // trace a rank's collectives: after its last step it may be waiting in one
  // nobody saw (the timeout below says so).
  if (!rc && (any_failure || trigger_hang) && gaps.collectives.empty()) {
    int64_t top = -1;
    for (const auto& [r, ri] : in.ranks) top = std::max(top, maxStepEnd(ri));
    std::vector<int> stuck;
    bool all_done = top >= 0;
    bool all_destroyed = !in.ranks.empty();
    for (const auto& [r, ri] : in.ranks) {
      if (maxStepEnd(ri) != top) all_done = false;
      if (!hasEvent(ri, "pg_destroy")) all_destroyed = false;
      const RankState& st = states.at(r);
      const bool never_exited = st.cls == FailureClass::kTeardown || st.cls == FailureClass::kSurvivor ||
                                (ri.killed_by_teardown && !st.has_evidence);
      // Stuck means still there after the others: a rank that ended before a
      // peer did (stopped by its launcher, say) was not hanging on its way out.
      bool ended_first = false;
      for (const auto& [o, other] : in.ranks) {
        ended_first = ended_first || (o != r && ri.exit_ns && other.exit_ns && *ri.exit_ns < *other.exit_ns);
      }
      if (never_exited && !ended_first && !hasEvent(ri, "exit")) stuck.push_back(r);
    }
    if ((all_done || all_destroyed) && !stuck.empty() && stuck.size() < in.ranks.size() + 1) {
      RootCause c;
      c.kind = Kind::kShutdownHang;
      if (stuck.size() == 1) c.rank = stuck.front();
      std::string where;
      if (c.rank) {
        const RankInput& ri = in.ranks.at(*c.rank);
        if (const PyFrame* f = userFrame(ri.stacks)) {
          c.location = Location{f->file, f->line};
          where = " (stack: " + baseName(f->file) + ":" + std::to_string(f->line) +
                  (f->function.empty() ? "" : " in " + f->function) + ")";
        } else {
          // No user frame: the innermost frame of the current (else first) thread still says where.
          const StackThread* th = nullptr;
          for (const StackThread& t : ri.stacks) {
            if (t.current && !t.frames.empty()) th = &t;
          }
          if (!th && !ri.stacks.empty() && !ri.stacks.front().frames.empty()) th = &ri.stacks.front();
          if (th) {
            const PyFrame& f = th->frames.front();
            where = " (stack: " + (f.file.empty() ? std::string() : baseName(f.file) + ":" + std::to_string(f.line) + " in ") +
                    f.function + ")";
          }
        }
        c.layers = buildLayers(in, states.at(*c.rank));
      }
      const std::string detail =
          (stuck.size() == 1 ? "rank " : "ranks ") + joinRanks(stuck) +
          (all_done ? " finished step " + std::to_string(top)
                    : (stuck.size() == 1 ? " destroyed its process group" : " destroyed their process groups")) +
          " but never exited";
      c.layers.push_back({"error", detail});
      c.summary = rankPrefix(c.rank) + "shutdown hang: " + detail + where;
      root_rank = c.rank;
      rc = c;
    }
  }
  if (!rc && any_failure) {
    // Rendezvous: every failing rank reports a store/rendezvous error, no rank initialised a group.
    bool all_store = true;
    bool any_pg = false;
    std::vector<int> silent;
    for (const auto& [r, st] : states) {
      if (hasEvent(*st.in, "pg_init")) any_pg = true;
      if (st.cls == FailureClass::kCollateral &&
          st.evidence.collateral_reason != collateralKindName(CollateralKind::kStoreTimeout)) {
        all_store = false;
      }
      // A rank that never started, or whose own error is failing to reach the store, never joined.
      const bool could_not_connect = st.cls == FailureClass::kCollateral &&
                                     (st.evidence.message.find("to connect") != std::string::npos ||
                                      st.evidence.message.find("Connection refused") != std::string::npos);
      if (!st.in->started || could_not_connect) silent.push_back(r);
    }
    bool any_store = false;
    // A peer that closed the connection before any rank had a process group
    // (instrumented ranks say so) closed the store's: LibTorch 1.13 ranks
    // under torchrun 2.13's agent store die so ("Broken pipe").
    bool instrumented = false, all_store_or_closed = true, any_closed = false;
    for (const auto& [r, st] : states) {
      any_store = any_store || (st.cls == FailureClass::kCollateral &&
                                st.evidence.collateral_reason == collateralKindName(CollateralKind::kStoreTimeout));
      instrumented = instrumented || hasEvent(*st.in, "start");
      if (st.cls == FailureClass::kCollateral) {
        const bool closed = st.evidence.collateral_reason == collateralKindName(CollateralKind::kPeerClosed);
        any_closed = any_closed || closed;
        all_store_or_closed = all_store_or_closed && (closed || st.evidence.collateral_reason ==
                                                                   collateralKindName(CollateralKind::kStoreTimeout));
      }
    }
    const bool store_lost = !any_store && instrumented && any_closed && all_store_or_closed;
    if (((all_store && any_store) || store_lost) && !any_pg) {
      RootCause c;
      c.kind = Kind::kRendezvousFailure;
      for (int r = 0; r < in.world_size; ++r) {
        if (!in.ranks.count(r)) silent.push_back(r);
      }
      std::sort(silent.begin(), silent.end());
      if (silent.size() == 1) c.rank = silent.front();
      c.missing_ranks = silent;
      c.summary = std::string("rendezvous failure: ") +
                  (!silent.empty() ? (silent.size() == 1 ? "rank " : "ranks ") + joinRanks(silent) + " never joined"
                   : store_lost    ? "the store's connection closed before any rank had a process group"
                                   : "ranks timed out waiting for the store");
      // The onion: what the launcher said, the rank that never joined (if one), the verdict.
      RankState none;
      c.layers = buildLayers(in, c.rank && states.count(*c.rank) ? states.at(*c.rank) : none);
      c.layers.push_back({"error", c.summary});
      root_rank = c.rank;
      rc = c;
    }
  }
  if (!rc && trigger_hang) {
    // The supervisor saw no progress (or the deadline) and no event says where: name it a
    // timeout, with where each rank's stack dump stood.
    RootCause c;
    c.kind = Kind::kTimeout;
    c.summary = std::string(in.supervisor->trigger.kind == TriggerKind::kDeadline ? "deadline reached"
                                                                                   : "no progress") +
                (in.supervisor->trigger.detail.empty() ? "" : ": " + in.supervisor->trigger.detail);
    for (const auto& [r, ri] : in.ranks) {
      if (const PyFrame* f = userFrame(ri.stacks)) {
        c.layers.push_back({"process", "rank " + std::to_string(r) + " at " + baseName(f->file) + ":" +
                                           std::to_string(f->line) + (f->function.empty() ? "" : " in " + f->function)});
      }
    }
    // Why no collective or step explains it, where the shim could not look:
    // "not in a collective" is unknown for such a rank.
    // (The supervisor's own words may have said it already.)
    const std::string step_gap = gapText(gaps.steps, "step tracking");
    const bool said = in.supervisor->trigger.detail.find("collective tracing unavailable") != std::string::npos;
    for (const std::string* gap : {&collective_gap, &step_gap}) {
      if (gap->empty() || (gap == &collective_gap && said)) continue;
      c.summary += "; " + *gap;
    }
    c.layers.push_back({"error", c.summary});
    rc = c;
  }
  if (!rc && any_failure) {
    // Only collateral evidence: say so instead of guessing.
    RootCause c;
    c.kind = Kind::kUnknown;
    std::string seen;
    for (const auto& [r, st] : states) {
      if (st.cls == FailureClass::kNone) continue;
      if (!seen.empty()) seen += "; ";
      seen += "rank " + std::to_string(r) + " " + rankEvidenceText(st);
    }
    c.summary = "no primary failure found; only collateral: " + seen;
    if (!collective_gap.empty()) c.summary += "; " + collective_gap;
    c.layers.push_back({"error", seen});
    rc = c;
  }
  if (!rc && in.launcher && ((in.launcher_exit_code && *in.launcher_exit_code != 0) || in.launcher_signal)) {
    RootCause c;
    c.kind = Kind::kLauncherError;
    c.exit_code = in.launcher_exit_code;
    c.signal = in.launcher_signal;
    c.summary = in.launcher_signal ? "launcher killed by " + *in.launcher_signal
                                   : "launcher exited with code " + std::to_string(*in.launcher_exit_code) +
                                         " while every rank exited cleanly";
    rc = c;
  }
  // An injected system-call failure on the root-cause rank is the onion's
  // core: the exception the trainer raised is only how it surfaced.
  if (rc && rc->rank && states.count(*rc->rank)) {
    const RankState& st = states.at(*rc->rank);
    if (const Event* f = firstInjectedSyscall(*st.in, st.t_ns)) {
      rc->layers.push_back({"error", "injected by faultline: " + injectedSyscall(*f)});
    }
  }
  d.root_cause = rc;

  // Roles.
  for (const auto& [r, st] : states) {
    RankVerdict v;
    v.rank = r;
    const RankInput& ri = *st.in;
    if (root_rank && *root_rank == r) {
      v.role = RankRole::kRootCause;
      v.diagnosis = rc ? rc->summary : rankEvidenceText(st);
    } else if (rc && rc->kind == Kind::kCollectiveMismatch &&
               std::find(rc->missing_ranks.begin(), rc->missing_ranks.end(), r) != rc->missing_ranks.end()) {
      v.role = RankRole::kRootCause;
      v.diagnosis = rc->summary;
    } else {
      switch (st.cls) {
        case FailureClass::kNone:
          v.role = RankRole::kClean;
          v.diagnosis = ri.exit_known ? exitText(ri) : (ri.started ? "no failure seen" : "never started");
          if (!ri.exit_known && in.supervisor && ri.started) {
            v.role = RankRole::kSurvivor;
            v.diagnosis = "still running when the run ended";
          }
          break;
        case FailureClass::kPrimary:
          v.role = RankRole::kCollateral;
          v.diagnosis = rankEvidenceText(st) + " (after the root cause)";
          break;
        case FailureClass::kCollateral:
          v.role = RankRole::kCollateral;
          v.diagnosis = rankEvidenceText(st) + " [collateral: " + st.evidence.collateral_reason + "]";
          break;
        case FailureClass::kTeardown:
        case FailureClass::kSurvivor:
          v.role = RankRole::kKilledByTeardown;
          v.diagnosis = exitText(ri);
          if (v.diagnosis.find("teardown") == std::string::npos) v.diagnosis += " in teardown";
          break;
      }
      if (std::find(waiting_ranks.begin(), waiting_ranks.end(), r) != waiting_ranks.end() &&
          v.role != RankRole::kRootCause) {
        v.diagnosis += "; was waiting in " + rc->collective->op + " #" + std::to_string(rc->collective->seq);
      }
    }
    // Where it was in a hang is not known for a rank the shim could not trace.
    if (rc && (rc->kind == Kind::kHungCollective || rc->kind == Kind::kTimeout) && gaps.collectives.count(r)) {
      v.diagnosis += "; collective tracing unavailable (" + gaps.collectives.at(r) + ")";
    }
    d.ranks.push_back(std::move(v));

    if (st.t_ns && st.cls != FailureClass::kNone && st.t_precise) {
      d.timeline.push_back({tms(*st.t_ns), r, "rank " + std::to_string(r) + " " + rankEvidenceText(st)});
    }
  }
  // What each rank's own events say, so a timeline shows steps, the injected
  // fault and a collective never left, not only exits.
  for (const auto& [r, ri] : in.ranks) {
    const auto& evs = ri.events.events;
    int64_t last_step = -1;
    for (const Event& e : evs) last_step = e.ev == "step_end" ? std::max(last_step, e.step) : last_step;
    const int64_t every = std::max<int64_t>(1, (last_step + 19) / 20);  // about 20 step marks a rank
    std::map<int64_t, const Event*> open;  // collective seq -> its begin
    bool syscall_marked = false;            // a failing call may be retried: mark the first
    for (const Event& e : evs) {
      if (e.t <= 0) continue;
      if (e.ev == "fault" && e.kind == "syscall") {
        if (!syscall_marked) d.timeline.push_back({tms(e.t), r, "fault injected: " + injectedSyscall(e)});
        syscall_marked = true;
      } else if (e.ev == "fault") {
        d.timeline.push_back({tms(e.t), r, "fault " + e.kind + " injected at step " + std::to_string(e.step)});
      } else if (e.ev == "pg_init") {
        d.timeline.push_back({tms(e.t), r, "process group up (" + e.backend + ")"});
      } else if (e.ev == "step_end" && e.step % every == 0) {
        d.timeline.push_back({tms(e.t), r, "step " + std::to_string(e.step) + " done"});
      } else if (e.ev == "collective_begin") {
        open[e.seq] = &e;
      } else if (e.ev == "collective_end") {
        open.erase(e.seq);
      }
    }
    for (const auto& [seq, e] : open) {
      d.timeline.push_back({tms(e->t), r, "entered " + e->op + " #" + std::to_string(seq) + ", never left"});
    }
  }
  if (rc) {
    std::optional<int64_t> t;
    if (root_rank && states.count(*root_rank) && states.at(*root_rank).t_precise) t = states.at(*root_rank).t_ns;
    if (t) d.timeline.push_back({tms(*t), rc->rank, "root cause: " + rc->summary});
  }
  std::stable_sort(d.timeline.begin(), d.timeline.end(),
                   [](const TimelineEntry& a, const TimelineEntry& b) { return a.t_ms < b.t_ms; });
  return d;
}

}  // namespace faultline::diagnose
