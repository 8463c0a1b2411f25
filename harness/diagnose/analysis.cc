// The analysed input: ranks classified, shim gaps, shared texts.
#include "harness/diagnose/analysis.h"

#include <algorithm>
#include <limits>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/earlier_failure.h"
#include "harness/diagnose/instruments.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "harness/model/outcome.h"
#include "harness/probe/fault_spec.h"

namespace faultline::diagnose {

bool failedExit(const RankInput& r) {
  return !r.work_done && ((r.exit_code && *r.exit_code != 0) || r.signal.has_value());
}

namespace {

bool isTeardownSignal(const std::optional<std::string>& s) {
  return s && (*s == "SIGTERM" || *s == "SIGINT" || *s == "SIGHUP" || *s == "SIGKILL");
}

std::optional<int64_t> lastEventTime(const RankInput& r) {
  if (r.events.events.empty()) return std::nullopt;
  int64_t t = 0;
  for (const Event& e : r.events.events) t = std::max(t, e.t);
  return t;
}

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
std::map<int, const EventLog*> eventLogs(const RunInput& in, const std::map<int, std::string>& untraced) {
  std::map<int, const EventLog*> logs;
  for (const auto& [r, ri] : in.ranks) {
    if (!ri.events.events.empty() && !untraced.count(r)) logs[r] = &ri.events;
  }
  return logs;
}

}  // namespace

std::string baseName(const std::string& path) {
  const size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string exitText(const RankInput& r) {
  if (r.work_done && (r.signal || r.exit_code.value_or(0) != 0)) {
    return "its work done, ended by its launcher (" + (r.signal ? "killed by " + *r.signal : "exit code " + std::to_string(*r.exit_code)) + ")";
  }
  if (r.signal) return "killed by " + *r.signal;
  if (r.exit_code) return "exited with code " + std::to_string(*r.exit_code);
  if (r.killed_by_teardown) return "stopped by the launcher's teardown";
  return "exit status unknown";
}

namespace {

// A signal a scripted fault of faultline's sent the rank: which, the fault
// as said ("sigkill at step 3", "SIGKILL in write of /ckpt/last.pt"), and when.
struct StruckSignal {
  std::string signal;
  std::string what;
  int64_t t_ns = 0;
};

std::optional<StruckSignal> signalSentBy(const Event& e) {
  if (e.ev != "fault") return std::nullopt;
  // The interposer's SIGKILL in a system call (FAULTLINE_INJECT write:SIGKILL...).
  if (e.kind == "syscall") {
    if (e.err.rfind("SIG", 0) != 0) return std::nullopt;
    return StruckSignal{e.err, e.err + " in " + e.call + (e.path.empty() ? "" : " of " + e.path), e.t};
  }
  const auto kind = probe::faultKindFromName(e.kind);
  const int sent = kind ? probe::faultSignal(*kind) : 0;
  if (sent == 0) return std::nullopt;
  return StruckSignal{signalName(sent), e.kind + (e.step >= 0 ? " at step " + std::to_string(e.step) : ""), e.t};
}

std::string struckText(const StruckSignal& s) { return "struck by faultline's scripted fault (" + s.what + ")"; }

// "struck by faultline's scripted fault (sigkill at step 3)" when the rank's
// events say a fault of faultline's sent it `signal`.
std::optional<std::string> scriptedSignal(const RankInput& r, const std::string& signal) {
  for (const Event& e : r.events.events) {
    if (auto s = signalSentBy(e); s && s->signal == signal) return struckText(*s);
  }
  return std::nullopt;
}

// The first signal a scripted fault (not a system call's) sent the rank.
std::optional<StruckSignal> scriptedSignalSent(const RankInput& r) {
  for (const Event& e : r.events.events) {
    if (e.kind == "syscall") continue;
    if (auto s = signalSentBy(e)) return s;
  }
  return std::nullopt;
}

}  // namespace

RankState classifyRank(const RankInput& r, std::optional<int64_t> teardown_ns, PeerFailures peers) {
  RankState st;
  st.in = &r;
  const std::optional<Evidence> failure = rankFailure(r.errors, r.crashed_children, r.caught);
  const Evidence* term = failure ? &*failure : nullptr;
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
  // A rank faultline's scripted fault sent a signal to failed when the
  // signal came, before any teardown, whatever it did next: handled it and
  // exited 0 (a preemption handler; Ray's worker turns SIGTERM into
  // SystemExit), died of something else on its way out, or kept running
  // until the teardown. Its peers met its leaving from then on.
  const auto struck = scriptedSignalSent(r);
  // (A signal that ends a process unless handled: SIGSTOP's freeze is a hang's business.)
  const bool struck_first = struck && isTeardownSignal(struck->signal) && struck->t_ns > 0 &&
                            (!teardown_ns || struck->t_ns < *teardown_ns);
  const auto struckAsRootCause = [&](const std::string& then) {
    st.cls = FailureClass::kPrimary;
    st.has_evidence = true;
    st.evidence = Evidence{};
    st.evidence.kind = Kind::kSignal;
    st.evidence.signal = st.evidence.type = struck->signal;
    st.evidence.signal_handled = !then.empty();  // "" : it died of the signal
    st.evidence.note = struckText(*struck) + (then.empty() ? "" : "; " + then);
    st.t_ns = struck->t_ns;
    st.t_precise = true;
    return st;
  };
  if (!failed && struck_first && r.exit_known && r.exit_code == 0) {
    return struckAsRootCause("it handled the signal and exited with code 0");
  }
  if (!failed) {
    if (r.started && !r.exit_known && r.killed_by_teardown) st.cls = FailureClass::kTeardown;
    return st;
  }
  if (term && !term->collateral) {
    st.cls = FailureClass::kPrimary;
    if (struck_first && term->signal != struck->signal) {
      if (st.evidence.note.empty()) {
        st.evidence.note = "after " + struck->signal + " from faultline's scripted fault (" + struck->what + ")";
      }
      if (!st.t_ns || struck->t_ns < *st.t_ns) st.t_ns = struck->t_ns;
    }
    return st;
  }
  // No evidence of its own but its exit (or only a collateral error, which
  // came of its leaving): how it ended after the signal.
  if (struck_first && (!term || term->collateral)) {
    if (r.killed_by_teardown) return struckAsRootCause("it kept running until the teardown ended it");
    if (r.signal != struck->signal) return struckAsRootCause("it handled the signal and then " + exitText(r));
    if (term) return struckAsRootCause("");  // it died of it, a peer's error on its way
  }
  if (term) {
    st.cls = FailureClass::kCollateral;
    return st;
  }
  // No text evidence: the exit status alone. A termination signal is a
  // teardown's, unless the rank ended before any teardown began and nobody on
  // record sent it (another process, an operator, a scripted fault) and no
  // peer had failed before it (a launcher stopping the rest sends SIGTERM
  // unannounced): then it is a failure of its own.
  const bool before_teardown = r.exit_ns && (!teardown_ns || *r.exit_ns < *teardown_ns) && !peers.before;
  if (r.killed_by_teardown || (isTeardownSignal(r.signal) && *r.signal != "SIGKILL" && !before_teardown)) {
    st.cls = FailureClass::kTeardown;
    return st;
  }
  // An exit code and nothing else, after the teardown began and after a
  // peer had ended, or after the supervisor had found a hang and begun the
  // teardown for it: the rank left because the teardown took it or its peer
  // (a Ray worker whose collective lost its peer exits 1, its error kept by
  // Ray, not printed; Ray ends its worker group with exit code 1 when the
  // teardown stops the driver). Not a failure of its own to outrank the trigger's.
  if (!r.signal && r.exit_ns && teardown_ns && *r.exit_ns >= *teardown_ns && (peers.before || peers.hang_found)) {
    st.cls = FailureClass::kTeardown;
    return st;
  }
  st.has_evidence = true;
  // SIGPIPE: the rank wrote to a socket or pipe whose reader was gone. In a
  // job where another rank failed otherwise, that reader was the failed
  // peer (a native trainer's Gloo pair, which does not ignore SIGPIPE as
  // Python does), whichever exit the supervisor happened to reap first.
  if (r.signal && *r.signal == "SIGPIPE" && peers.other_than_pipe) {
    st.cls = FailureClass::kCollateral;
    st.evidence.kind = Kind::kSignal;
    st.evidence.signal = st.evidence.type = *r.signal;
    st.evidence.collateral = true;
    st.evidence.collateral_reason = "it wrote to a connection whose other end had closed (a failed peer)";
    st.evidence.note = st.evidence.collateral_reason;
    return st;
  }
  st.cls = FailureClass::kPrimary;
  if (r.signal) {
    st.evidence.kind = Kind::kSignal;
    st.evidence.signal = *r.signal;
    st.evidence.type = *r.signal;
    if (*r.signal == "SIGKILL") st.evidence.note = "possible OOM kill (SIGKILL with no other evidence)";
    if (isTeardownSignal(r.signal) && *r.signal != "SIGKILL") {
      st.evidence.note = "sent by no teardown on record, before any began (another process, an operator or the rank itself)";
    }
    // A scripted fault of faultline's that sends this very signal is the truth.
    if (auto struck = scriptedSignal(r, *r.signal)) st.evidence.note = *struck;
  } else {
    st.evidence.kind = Kind::kExitCode;
    st.evidence.exit_code = r.exit_code;
    st.evidence.type = "exit code " + std::to_string(r.exit_code.value_or(-1));
  }
  // A native stack dump may say where.
  return st;
}


Analysis analyse(const RunInput& in) {
  Analysis a;
  a.in = &in;
  // When the teardown began (the supervisor's, or the launcher's first signal
  // it recorded): termination signals after it are the teardown's.
  std::optional<int64_t> teardown_ns;
  if (in.supervisor) {
    const auto& td = in.supervisor->teardown;
    if (td.started_ns > 0) teardown_ns = td.started_ns;
    for (const auto& s : td.signals) teardown_ns = teardown_ns ? std::min(*teardown_ns, s.t_ns) : s.t_ns;
  }
  // Whether some other rank failed before each rank ended: the two earliest
  // failing exits answer it for every rank (linear, not pairwise).
  std::optional<std::pair<int64_t, int>> first_fail, second_fail;
  for (const auto& [o, other] : in.ranks) {
    if (!failedExit(other) || !other.exit_ns) continue;
    const std::pair<int64_t, int> x{*other.exit_ns, o};
    if (!first_fail || x < *first_fail) {
      second_fail = first_fail;
      first_fail = x;
    } else if (!second_fail || x < *second_fail) {
      second_fail = x;
    }
  }
  const bool trigger_hang = in.supervisor && (in.supervisor->trigger.kind == TriggerKind::kHang ||
                                              in.supervisor->trigger.kind == TriggerKind::kDeadline);
  // Which ranks failed by something other than SIGPIPE: two answer it for all.
  std::vector<int> non_pipe;
  for (const auto& [o, other] : in.ranks) {
    if (failedExit(other) && other.signal != "SIGPIPE" && !other.killed_by_teardown && non_pipe.size() < 2) {
      non_pipe.push_back(o);
    }
  }
  for (const auto& [r, ri] : in.ranks) {
    const auto& other = first_fail && first_fail->second == r ? second_fail : first_fail;
    PeerFailures peers;
    peers.before = other && ri.exit_ns && other->first < *ri.exit_ns;
    peers.other_than_pipe = std::any_of(non_pipe.begin(), non_pipe.end(), [&](int o) { return o != r; });
    peers.hang_found = trigger_hang;
    a.states[r] = classifyRank(ri, teardown_ns, peers);
  }
  for (const auto& [r, st] : a.states) {
    if (st.cls == FailureClass::kPrimary) a.primaries.push_back(r);
    a.any_failure = a.any_failure || st.cls != FailureClass::kNone;
  }
  for (const auto& [r, ri] : in.ranks) a.any_started = a.any_started || ri.started;
  a.teardown_ns = teardown_ns;
  a.trigger_hang = trigger_hang;
  a.gaps = shimGaps(in);
  a.collective_gap = gapText(a.gaps.collectives, "collective tracing");
  a.step_gap = gapText(a.gaps.steps, "step tracking");
  a.logs = eventLogs(in, a.gaps.collectives);
  int64_t run_start = std::numeric_limits<int64_t>::max();
  if (in.supervisor && in.supervisor->start_ns > 0) run_start = in.supervisor->start_ns;
  for (const auto& [r, ri] : in.ranks) {
    // Each rank's first event only: the earliest it says it was alive.
    if (!ri.events.events.empty() && ri.events.events.front().t > 0) {
      run_start = std::min(run_start, ri.events.events.front().t);
    }
  }
  if (run_start != std::numeric_limits<int64_t>::max()) a.run_start_ns = run_start;
  return a;
}

bool interruptedByTeardown(const Analysis& a, int rank) {
  const RankInput& ri = a.in->ranks.at(rank);
  const RankState& st = a.states.at(rank);
  if (!a.teardown_ns || !ri.exit_ns || *ri.exit_ns < *a.teardown_ns) return false;
  return st.has_evidence && st.evidence.collateral &&
         st.evidence.collateral_reason == collateralKindName(CollateralKind::kTeardownSignal);
}

double msSinceStart(const Analysis& a, int64_t t_ns) {
  return a.run_start_ns ? static_cast<double>(t_ns - *a.run_start_ns) / 1e6 : 0.0;
}

// "NameError: name 'c' is not defined (train.py:42)"
std::string shortDescribe(const Evidence& e) {
  Evidence copy = e;
  if (copy.location) copy.location->file = baseName(copy.location->file);
  return describe(copy);
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

std::string rankPrefix(std::optional<int> rank) { return rank ? "rank " + std::to_string(*rank) + ": " : std::string(); }

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
    const Evidence& e = st.evidence;
    for (const std::string& outer : e.chain) layers.push_back({"error", outer});
    if (e.kind != Kind::kExitCode || !e.worker.empty() || !e.message.empty()) layers.push_back({"error", describe(e)});
    if (const std::string native = describeNativeOrigin(e); !native.empty()) layers.push_back({"error", native});
    for (const std::string& in : e.inner) layers.push_back({"error", in});
  }
  return layers;
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

}  // namespace faultline::diagnose
