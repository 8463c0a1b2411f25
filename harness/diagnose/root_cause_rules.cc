// Root-cause rules, in priority order.
#include "harness/diagnose/root_cause_rules.h"

#include <algorithm>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/collectives.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

void addLocationFromStacks(Evidence& e, const RankInput& r) {
  if (e.location || r.stacks.empty()) return;
  if (const PyFrame* f = userFrame(r.stacks)) {
    e.location = Location{f->file, f->line};
    e.source_line = f->source;
  }
}

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

// " (stack: train.py:42 in main)" from a user frame.
std::string stackWhere(const PyFrame& f) {
  return " (stack: " + baseName(f.file) + ":" + std::to_string(f.line) + (f.function.empty() ? "" : " in " + f.function) + ")";
}

}  // namespace

std::optional<Candidate> launcherFailedFirst(const Analysis& a) {
  const RunInput& in = *a.in;
  const bool launcher_crashed = in.launcher && in.launcher->launcher_crashed;
  if (!((launcher_crashed && (!a.any_started || a.primaries.empty())) ||
        (!a.any_started && (in.launcher_signal || (in.launcher_exit_code && *in.launcher_exit_code != 0))))) {
    return std::nullopt;
  }
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
  l.summary = std::string("launcher") + (a.any_started ? ": " : " failed before any rank started: ") + what;
  if (in.launcher_exit_code || in.launcher_signal) {
    l.layers.push_back({"launcher", in.launcher_signal ? "launcher killed by " + *in.launcher_signal
                                                       : "launcher exited with code " +
                                                             std::to_string(*in.launcher_exit_code)});
  }
  l.layers.push_back({"error", what});
  return Candidate{l, std::nullopt, {}};
}

std::optional<Candidate> collectiveMismatch(const Analysis& a) {
  const auto m = findCollectiveMismatch(a.logs);
  if (!m) return std::nullopt;
  RootCause c = rootFromCollective(*m);
  c.summary = rankPrefix(m->rank) + "collective mismatch: " + m->detail;
  if (m->rank && a.states.count(*m->rank)) {
    const RankState& st = a.states.at(*m->rank);
    if (st.has_evidence && st.evidence.location && !isLibraryPath(st.evidence.location->file)) {
      c.location = st.evidence.location;
    }
    c.layers = buildLayers(*a.in, st);
  }
  c.layers.push_back({"error", m->detail});
  return Candidate{c, m->rank, {}};
}

std::optional<Candidate> earliestPrimary(const Analysis& a) {
  if (a.primaries.empty()) return std::nullopt;
  std::vector<const RankState*> order;
  for (int r : a.primaries) order.push_back(&a.states.at(r));
  std::stable_sort(order.begin(), order.end(), [](const RankState* x, const RankState* y) {
    if (x->t_ns.has_value() != y->t_ns.has_value()) return x->t_ns.has_value();
    if (x->t_ns && y->t_ns && *x->t_ns != *y->t_ns) return *x->t_ns < *y->t_ns;
    return false;  // same time or none: keep rank order
  });
  RankState first = *order.front();
  addLocationFromStacks(first.evidence, *first.in);
  return Candidate{rootFromEvidence(*a.in, first), first.in->rank, {}};
}

std::optional<Candidate> exitBeforeRendezvous(const Analysis& a) {
  // A rank that merely exited before any rank had a process group left its
  // peers waiting at the rendezvous: the failure is the rendezvous's.
  // (Only instrumented ranks can say they never had a group; a peer that
  // exited cleanly was not waiting.)
  auto c = earliestPrimary(a);
  if (!c) return std::nullopt;
  const RankState& first = a.states.at(*c->root_rank);
  bool any_pg = false, instrumented = false, peer_clean = false;
  for (const auto& [r, st] : a.states) {
    any_pg = any_pg || hasEvent(*st.in, "pg_init");
    instrumented = instrumented || hasEvent(*st.in, "start");
    peer_clean = peer_clean || (st.in->exit_known && st.in->exit_code == 0 && !st.in->signal);
  }
  // (A rank whose init_process_group the shim could not wrap says nothing.)
  if (!(instrumented && !any_pg && !peer_clean && a.gaps.process_group.empty() &&
        first.evidence.kind == Kind::kExitCode && a.in->world_size > 1)) {
    return std::nullopt;
  }
  RootCause& rc = c->cause;
  rc.kind = Kind::kRendezvousFailure;
  rc.missing_ranks = {first.in->rank};
  const std::string detail = "rank " + std::to_string(first.in->rank) + " exited with code " +
                             std::to_string(first.evidence.exit_code.value_or(-1)) +
                             " before joining the process group; the other ranks waited at the rendezvous";
  rc.summary = "rank " + std::to_string(first.in->rank) + ": rendezvous failure: " + detail;
  rc.layers.push_back({"error", detail});
  return c;
}

std::optional<Candidate> hungCollective(const Analysis& a) {
  if (!(a.any_failure || a.trigger_hang)) return std::nullopt;
  auto h = findHungCollective(a.logs);
  if (!h) return std::nullopt;
  const RunInput& in = *a.in;
  auto hung = *h;
  // Every rank entered it, but the supervisor found one the kernel had stopped
  // (SIGSTOP, a freeze): that one cannot finish its part.
  if (!hung.rank && in.supervisor && in.supervisor->trigger.kind == TriggerKind::kHang && in.supervisor->trigger.rank &&
      in.supervisor->trigger.detail.find("stopped") != std::string::npos) {
    hung.rank = in.supervisor->trigger.rank;
    hung.detail += "; rank " + std::to_string(*hung.rank) + " is stopped (" + in.supervisor->trigger.detail + ")";
    std::erase(hung.waiting, *hung.rank);
  }
  h = hung;
  RootCause c = rootFromCollective(*h);
  std::string where;
  if (h->rank && in.ranks.count(*h->rank)) {
    const RankInput& missing = in.ranks.at(*h->rank);
    if (const PyFrame* f = userFrame(missing.stacks)) {
      c.location = Location{f->file, f->line};
      where = stackWhere(*f);
    }
    c.layers = buildLayers(in, a.states.at(*h->rank));
  }
  std::string detail = h->detail;
  if (!a.collective_gap.empty()) {
    // Only the traced ranks were compared: "every rank" is every traced one.
    const std::string every = "that every rank entered";
    if (const size_t p = detail.find(every); p != std::string::npos) {
      detail.replace(p, every.size(), "that every traced rank entered");
    }
    detail += "; " + a.collective_gap;
  }
  c.layers.push_back({"error", detail});
  c.summary = rankPrefix(h->rank) + "hung collective: " + detail + where;
  return Candidate{c, h->rank, h->waiting};
}

std::optional<Candidate> shutdownHang(const Analysis& a) {
  // Every rank finished the same last step, or destroyed its process group
  // (no step events: no DDP, or a torch whose optimizer the shim could not
  // hook), and one never exited. Not where the shim could not trace a rank's
  // collectives: after its last step it may be waiting in one nobody saw
  // (no_progress says so).
  if (!((a.any_failure || a.trigger_hang) && a.gaps.collectives.empty())) return std::nullopt;
  const RunInput& in = *a.in;
  int64_t top = -1;
  for (const auto& [r, ri] : in.ranks) top = std::max(top, maxStepEnd(ri));
  std::vector<int> stuck;
  bool all_done = top >= 0;
  bool all_destroyed = !in.ranks.empty();
  for (const auto& [r, ri] : in.ranks) {
    if (maxStepEnd(ri) != top) all_done = false;
    if (!hasEvent(ri, "pg_destroy")) all_destroyed = false;
    const RankState& st = a.states.at(r);
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
  if (!((all_done || all_destroyed) && !stuck.empty() && stuck.size() < in.ranks.size() + 1)) return std::nullopt;
  RootCause c;
  c.kind = Kind::kShutdownHang;
  if (stuck.size() == 1) c.rank = stuck.front();
  std::string where;
  if (c.rank) {
    const RankInput& ri = in.ranks.at(*c.rank);
    if (const PyFrame* f = userFrame(ri.stacks)) {
      c.location = Location{f->file, f->line};
      where = stackWhere(*f);
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
    c.layers = buildLayers(in, a.states.at(*c.rank));
  }
  const std::string detail =
      (stuck.size() == 1 ? "rank " : "ranks ") + joinRanks(stuck) +
      (all_done ? " finished step " + std::to_string(top)
                : (stuck.size() == 1 ? " destroyed its process group" : " destroyed their process groups")) +
      " but never exited";
  c.layers.push_back({"error", detail});
  c.summary = rankPrefix(c.rank) + "shutdown hang: " + detail + where;
  return Candidate{c, c.rank, {}};
}

std::optional<Candidate> storeRendezvousFailure(const Analysis& a) {
  if (!a.any_failure) return std::nullopt;
  const RunInput& in = *a.in;
  // Every failing rank reports a store/rendezvous error, no rank initialised a group.
  bool all_store = true;
  bool any_pg = false;
  std::vector<int> silent;
  for (const auto& [r, st] : a.states) {
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
  for (const auto& [r, st] : a.states) {
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
  if (!(((all_store && any_store) || store_lost) && !any_pg)) return std::nullopt;
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
  c.layers = buildLayers(in, c.rank && a.states.count(*c.rank) ? a.states.at(*c.rank) : none);
  c.layers.push_back({"error", c.summary});
  return Candidate{c, c.rank, {}};
}

std::optional<Candidate> noProgress(const Analysis& a) {
  // The supervisor saw no progress (or the deadline) and no event says where: name it a
  // timeout, with where each rank's stack dump stood.
  if (!a.trigger_hang) return std::nullopt;
  const RunInput& in = *a.in;
  RootCause c;
  c.kind = Kind::kTimeout;
  c.summary = std::string(in.supervisor->trigger.kind == TriggerKind::kDeadline ? "deadline reached" : "no progress") +
              (in.supervisor->trigger.detail.empty() ? "" : ": " + in.supervisor->trigger.detail);
  // The supervisor named the rank that cannot move (one the kernel stopped).
  c.rank = in.supervisor->trigger.rank;
  if (c.rank) c.summary = "rank " + std::to_string(*c.rank) + ": " + c.summary;
  for (const auto& [r, ri] : in.ranks) {
    if (const PyFrame* f = userFrame(ri.stacks)) {
      c.layers.push_back({"process", "rank " + std::to_string(r) + " at " + baseName(f->file) + ":" +
                                         std::to_string(f->line) + (f->function.empty() ? "" : " in " + f->function)});
    }
  }
  // Why no collective or step explains it, where the shim could not look:
  // "not in a collective" is unknown for such a rank.
  // (The supervisor's own words may have said it already.)
  const bool said = in.supervisor->trigger.detail.find("collective tracing unavailable") != std::string::npos;
  if (!a.collective_gap.empty() && !said) c.summary += "; " + a.collective_gap;
  if (!a.step_gap.empty()) c.summary += "; " + a.step_gap;
  c.layers.push_back({"error", c.summary});
  return Candidate{c, std::nullopt, {}};
}

std::optional<Candidate> onlyCollateral(const Analysis& a) {
  // Only collateral evidence: say so instead of guessing.
  if (!a.any_failure) return std::nullopt;
  RootCause c;
  c.kind = Kind::kUnknown;
  std::string seen;
  for (const auto& [r, st] : a.states) {
    if (st.cls == FailureClass::kNone) continue;
    if (!seen.empty()) seen += "; ";
    seen += "rank " + std::to_string(r) + " " + rankEvidenceText(st);
  }
  c.summary = "no primary failure found; only collateral: " + seen;
  if (!a.collective_gap.empty()) c.summary += "; " + a.collective_gap;
  c.layers.push_back({"error", seen});
  return Candidate{c, std::nullopt, {}};
}

std::optional<Candidate> launcherFailedAlone(const Analysis& a) {
  const RunInput& in = *a.in;
  if (!(in.launcher && ((in.launcher_exit_code && *in.launcher_exit_code != 0) || in.launcher_signal))) {
    return std::nullopt;
  }
  RootCause c;
  c.kind = Kind::kLauncherError;
  c.exit_code = in.launcher_exit_code;
  c.signal = in.launcher_signal;
  c.summary = in.launcher_signal ? "launcher killed by " + *in.launcher_signal
                                 : "launcher exited with code " + std::to_string(*in.launcher_exit_code) +
                                       " while every rank exited cleanly";
  return Candidate{c, std::nullopt, {}};
}

const std::vector<NamedRule>& rootCauseRules() {
  static const std::vector<NamedRule> rules = {
      {"launcher_failed_first", "no rank could fail before the launcher itself did", launcherFailedFirst},
      {"collective_mismatch", "a mismatch explains the errors it causes on every rank", collectiveMismatch},
      {"exit_before_rendezvous", "a bare exit before any process group left its peers at the rendezvous",
       exitBeforeRendezvous},
      {"earliest_primary", "the first rank to fail by its own fault started it; collateral never does",
       earliestPrimary},
      {"hung_collective", "with no primary failure, the collective some ranks never entered", hungCollective},
      {"shutdown_hang", "the work finished and one rank never exited", shutdownHang},
      {"store_rendezvous_failure", "every failure is a lost store before any process group", storeRendezvousFailure},
      {"no_progress", "the supervisor saw no progress and no event says where", noProgress},
      {"only_collateral", "only symptoms of another failure: say so, never guess", onlyCollateral},
      {"launcher_failed_alone", "every rank was clean; the launcher's own exit is all there is", launcherFailedAlone},
  };
  return rules;
}

std::optional<Candidate> chooseRootCause(const Analysis& a) {
  std::optional<Candidate> c;
  for (const NamedRule& rule : rootCauseRules()) {
    if ((c = rule.apply(a))) break;
  }
  // An injected system-call failure on the root-cause rank is the onion's
  // core: the exception the trainer raised is only how it surfaced.
  if (c && c->cause.rank && a.states.count(*c->cause.rank)) {
    const RankState& st = a.states.at(*c->cause.rank);
    if (const Event* f = firstInjectedSyscall(*st.in, st.t_ns)) {
      c->cause.layers.push_back({"error", "injected by faultline: " + injectedSyscall(*f)});
    }
  }
  return c;
}

}  // namespace faultline::diagnose
