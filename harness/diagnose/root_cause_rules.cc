// Root-cause rules, in priority order.
#include "harness/diagnose/root_cause_rules.h"

#include <algorithm>
#include <map>
#include <set>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/collectives.h"
#include "harness/diagnose/node_rules.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/stack_hang.h"
#include "harness/diagnose/teardown_deadlock.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

void addLocationFromStacks(Evidence& e, const RankInput& r, const LibraryPaths& lib) {
  if (e.location || r.stacks.empty()) return;
  if (const PyFrame* f = userFrame(r.stacks, lib)) {
    e.location = Location{f->file, f->line};
    e.source_line = f->source;
  }
}

// A fatal signal says nothing of where the rank's Python code was: the
// shim's faulthandler dump at that moment (crash_stacks.txt) does, in the
// thread that took the signal. A signal taken by a thread without Python
// (a native one) has no such thread: no place is made up from another.
// The dump must be of this signal (a restarted rank's earlier crash is not
// its later death by another).
void addCrashLocation(Evidence& e, const RankInput& r, const LibraryPaths& lib) {
  if (e.kind != Kind::kSignal || e.location || e.signal_handled) return;
  static const std::map<std::string, std::string> kFaulthandlerWords = {
      {"SIGSEGV", "Segmentation fault"}, {"SIGBUS", "Bus error"},        {"SIGFPE", "Floating point exception"},
      {"SIGILL", "Illegal instruction"}, {"SIGABRT", "Aborted"}};
  const auto words = kFaulthandlerWords.find(r.signal.value_or(e.signal));
  if (words == kFaulthandlerWords.end() || r.crash_what != words->second) return;
  for (const StackThread& t : r.crash_stacks) {
    if (!t.current) continue;
    if (const PyFrame* f = userFrameIn(t, lib)) {
      e.location = Location{f->file, f->line};
      e.source_line = f->source;
    }
    return;
  }
}

// The fields every collective verdict (mismatch or hang) puts in a root cause.
RootCause rootFromCollective(const CollectiveVerdict& v) {
  RootCause c;
  c.kind = v.kind;
  c.rank = v.rank;
  c.blame = v.blame;
  c.ranks = v.culprits;
  c.sides = v.sides;
  c.collective = v.collective;
  c.waiting_ranks = v.waiting;
  c.missing_ranks = v.missing;
  return c;
}

// "/app/train.py:42" as a location; nullopt when it is not FILE:LINE.
std::optional<Location> siteLocation(const std::string& site) {
  const size_t colon = site.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= site.size()) return std::nullopt;
  int line = 0;
  for (size_t i = colon + 1; i < site.size(); ++i) {
    if (site[i] < '0' || site[i] > '9') return std::nullopt;
    line = line * 10 + (site[i] - '0');
  }
  return Location{site.substr(0, colon), line};
}

// What the verdict says about blame, for the summary: "; ambiguous: ranks 0
// and 1 each made a different call and nothing says which is wrong", or
// "; rank 0 is blamed: its call runs only on some ranks (...)".
std::string blameText(const CollectiveVerdict& v) {
  if (v.blame == Blame::kAmbiguous) {
    return "; ambiguous: no majority and no evidence for one side (candidates: ranks " + joinRanks(v.culprits) + ")";
  }
  if (v.why.empty()) return "";
  return std::string("; ") + (v.culprits.size() == 1 ? "rank " : "ranks ") + joinRanks(v.culprits) + " blamed: " +
         v.why;
}

// Whether a rank's stack dump shows it inside torch.distributed (waiting in
// some collective or the rendezvous), rather than elsewhere.
bool stackInDistributed(const RankInput& r) {
  for (const StackThread& t : r.stacks) {
    if (!t.current && r.stacks.size() > 1) continue;
    for (const PyFrame& f : t.frames) {
      if (f.file.find("torch/distributed") != std::string::npos) return true;
    }
  }
  return false;
}

RootCause rootFromEvidence(const RunInput& in, const RankState& st) {
  RootCause rc;
  Evidence e = st.evidence;
  if (st.in) addCrashLocation(e, *st.in, in.library);
  rc.kind = e.kind;
  rc.rank = st.in ? std::optional<int>(st.in->rank) : std::nullopt;
  if (!e.type.empty() && e.kind != Kind::kSignal && e.kind != Kind::kExitCode && e.type != "symbol lookup error") {
    rc.exception_type = e.type;
  }
  if (!e.message.empty()) rc.message = e.message;
  rc.location = e.location;
  rc.native_location = e.native_location;
  if (!e.native_function.empty()) rc.native_function = e.native_function;
  if (!e.symbol.empty()) rc.symbol = e.symbol;
  if (st.in && st.in->signal) rc.signal = st.in->signal;
  else if (!e.signal.empty()) rc.signal = e.signal;
  // The status the trainer asked for, not Ray's ending of its process or the crash on its way out.
  if ((e.exit_caught || !e.crashed_exiting.empty()) && e.exit_code) rc.exit_code = e.exit_code;
  else if (st.in && st.in->exit_code) rc.exit_code = st.in->exit_code;
  else if (e.exit_code) rc.exit_code = e.exit_code;
  std::string what;
  if (!e.worker.empty() && e.message.find(e.worker) != std::string::npos) {
    // A worker process of the rank died: torch's sentence says which and how.
    what = e.message;
    if (e.location) what += " (" + baseName(e.location->file) + ":" + std::to_string(e.location->line) + ")";
    if (!e.note.empty()) what += "; " + e.note;
    rc.summary = rankPrefix(rc.rank) + what;
    rc.layers = buildLayers(in, st);
    return rc;
  }
  switch (e.kind) {
    case Kind::kSignal:
      // A rank that handled the signal (classifyRank) got it; it was not killed by it.
      what = e.signal_handled ? "got " + e.signal : "killed by " + rc.signal.value_or(e.signal);
      if (e.signal_handled) rc.signal = e.signal;
      if (!e.function.empty()) what += " in " + e.function;
      if (!e.message.empty() && e.message != e.signal) what += " (" + e.message + ")";
      if (e.location) what += " (" + baseName(e.location->file) + ":" + std::to_string(e.location->line) + ")";
      if (!e.note.empty()) what += "; " + e.note;
      break;
    case Kind::kExitCode:
      what = e.crashed_exiting.empty() ? "exited with code " + std::to_string(rc.exit_code.value_or(-1))
                                       : "called exit(" + std::to_string(rc.exit_code.value_or(-1)) +
                                             "), then crashed on its way out: " + e.crashed_exiting;
      if (!e.message.empty()) what += ": " + e.message;  // a start-up error without a traceback
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

// Two failures are the same when they have the same kind, type, place and
// message, numbers aside (a rank, a port, a pid differ from rank to rank).
std::string failureSignature(const Evidence& e) {
  std::string msg;
  for (char ch : e.message) {
    if (ch >= '0' && ch <= '9') {
      if (msg.empty() || msg.back() != '#') msg.push_back('#');
    } else {
      msg.push_back(ch);
    }
  }
  std::string where = e.location ? e.location->file + ":" + std::to_string(e.location->line) : "";
  return kindName(e.kind) + "\n" + e.type + "\n" + where + "\n" + msg;
}

// How far a rank got: the milestones of a run that its events show.
std::set<std::string> milestones(const RankInput& r) {
  std::set<std::string> out;
  for (const Event& e : r.events.events) {
    if (e.ev == "pg_init_begin" || e.ev == "pg_init" || e.ev == "step_begin" || e.ev == "collective_begin") {
      out.insert(e.ev);
    }
  }
  return out;
}

// The command line a rank ran, as the supervisor read it at exec, with its
// numbers blanked (a launcher's --local_rank=N differs by rank and changes
// nothing else); nullopt when not known. Every rank of the builtin launcher
// runs its one command.
std::optional<std::string> rankCommand(const RunInput& in, const RankInput& ri) {
  if (!in.supervisor) return std::nullopt;
  const SupervisorRecord& s = *in.supervisor;
  std::string cmd;
  if (s.launcher == "builtin") {
    for (const std::string& arg : s.command) cmd += arg + '\0';
  } else {
    for (const ProcessExit& pe : s.process_exits) {
      if (pe.cmdline.empty()) continue;
      if ((ri.pid && pe.pid == *ri.pid) || (!ri.pid && pe.rank == ri.rank)) cmd = pe.cmdline;
    }
  }
  if (cmd.empty()) return std::nullopt;
  std::string out;
  for (char ch : cmd) {
    if (ch < '0' || ch > '9') out.push_back(ch);
    else if (out.empty() || out.back() != '#') out.push_back('#');
  }
  return out;
}

}  // namespace

bool joinsProcessGroup(const Analysis& a) {
  for (const auto& [r, st] : a.states) {
    const RankInput& ri = *st.in;
    if (hasEvent(ri, "pg_init_begin") || hasEvent(ri, "pg_init")) return true;
    // A peer's store error, or a stack dump inside torch.distributed (the rendezvous).
    if (st.has_evidence && st.evidence.collateral &&
        (st.evidence.collateral_reason == collateralKindName(CollateralKind::kStoreTimeout) ||
         st.evidence.collateral_reason == collateralKindName(CollateralKind::kPeerClosed))) {
      return true;
    }
    for (const StackThread& t : ri.stacks) {
      for (const PyFrame& f : t.frames) {
        if (f.file.find("torch/distributed") != std::string::npos || f.function.find("TCPStore") != std::string::npos ||
            f.function.find("rendezvous") != std::string::npos) {
          return true;
        }
      }
    }
  }
  return false;
}

std::optional<Candidate> sameFailureEverywhere(const Analysis& a) {
  // Every rank that failed by its own fault failed the same way, within
  // moments: a missing script, a bad argument, an import error on every
  // rank. Nobody's failure caused another's, so no rank is primary.
  constexpr int64_t kMoments = 10'000'000'000;  // ns
  if (a.primaries.empty()) return std::nullopt;
  const RankState& first = a.states.at(a.primaries.front());
  if (!first.has_evidence) return std::nullopt;
  // One failing rank is enough when what failed was the command line itself
  // and every other rank runs the same one: a launcher that stops the rest
  // within 0.1 s (torchrun 2.x) often leaves just one to say it.
  const std::optional<std::string> command = rankCommand(*a.in, *first.in);
  const bool one_for_all = a.primaries.size() == 1 && first.evidence.command_line && command;
  if (a.primaries.size() < 2 && !one_for_all) return std::nullopt;
  // A fault faultline struck in some of them caused theirs; the others'
  // like failure a moment later is its consequence (a Gloo peer that aborts
  // when the aborted rank's sockets close), not the same cause everywhere.
  const size_t struck = std::count_if(a.primaries.begin(), a.primaries.end(),
                                      [&](int r) { return struckByAFault(*a.states.at(r).in); });
  if (struck > 0 && struck < a.primaries.size()) return std::nullopt;
  const std::string sig = failureSignature(first.evidence);
  std::optional<int64_t> lo, hi;
  std::set<std::string> reached;
  for (int r : a.primaries) {
    const RankState& st = a.states.at(r);
    if (!st.has_evidence || failureSignature(st.evidence) != sig) return std::nullopt;
    if (st.t_ns) {
      lo = lo ? std::min(*lo, *st.t_ns) : *st.t_ns;
      hi = hi ? std::max(*hi, *st.t_ns) : *st.t_ns;
    }
    const auto m = milestones(*st.in);
    reached.insert(m.begin(), m.end());
  }
  if (lo && hi && *hi - *lo > kMoments) return std::nullopt;
  // The others: stopped by the teardown before they got any further than
  // the failing ranks did (they would have met the same end). A rank that
  // failed because of them (collateral) says they were not every rank: two
  // of three ranks failing alike is not this class, and the earliest of
  // them is named as before.
  std::vector<int> stopped;
  for (const auto& [r, st] : a.states) {
    if (st.cls == FailureClass::kPrimary) continue;
    if (st.cls == FailureClass::kCollateral) return std::nullopt;
    const RankInput& ri = *st.in;
    if (ri.exit_known && ri.exit_code == 0 && !ri.signal) return std::nullopt;  // a rank that succeeded
    // Only a start-up failure can be assumed of a rank stopped before it got
    // there: one that was training when it was stopped had passed the point
    // where the others failed, or was waiting at it, and had not failed.
    if (!reached.empty() || !milestones(ri).empty()) return std::nullopt;
    if (one_for_all && rankCommand(*a.in, ri) != command) return std::nullopt;
    stopped.push_back(r);
  }
  const RunInput& in = *a.in;
  const int world = std::max<int>(in.world_size, static_cast<int>(in.ranks.size()));
  if (static_cast<int>(a.primaries.size() + stopped.size()) != world) return std::nullopt;  // a rank never seen
  if (one_for_all && stopped.empty()) return std::nullopt;  // one rank in all: its own failure
  // Shown: the first failing rank whose exit status is known (a rank can
  // print its error and still be stopped by the teardown before it exits).
  RankState shown = first;
  for (int r : a.primaries) {
    if (a.states.at(r).in->exit_code) {
      shown = a.states.at(r);
      break;
    }
  }
  addLocationFromStacks(shown.evidence, *shown.in, in.library);
  RootCause c = rootFromEvidence(in, shown);
  c.rank.reset();
  c.ranks = a.primaries;
  c.blame = Blame::kAllRanks;
  std::string what = c.summary.substr(rankPrefix(shown.in->rank).size());
  if (shown.evidence.kind == Kind::kExitCode && !shown.evidence.message.empty()) what = shown.evidence.message;
  const size_t n = a.primaries.size();
  const std::string of = " of " + std::to_string(world);
  std::string who = static_cast<int>(n) == world ? "all " + std::to_string(n) + " ranks"
                    : n == 1                     ? "rank " + joinRanks(a.primaries) + of
                                                 : "ranks " + joinRanks(a.primaries) + of;
  c.summary = who + ": " + what;
  if (!stopped.empty() && static_cast<int>(n) != world) {
    const bool one = stopped.size() == 1;
    c.summary += " (" + std::string(one ? "rank " : "ranks ") + joinRanks(stopped) +
                 (one_for_all ? one ? " runs the same command line and was" : " run the same command line and were"
                              : "") +
                 " stopped by the teardown before getting further)";
  }
  c.layers.erase(std::remove_if(c.layers.begin(), c.layers.end(), [](const Layer& l) { return l.layer == "process"; }),
                 c.layers.end());
  c.layers.insert(c.layers.begin() + (c.layers.empty() || c.layers.front().layer != "launcher" ? 0 : 1),
                  Layer{"process", who + " " + exitText(*shown.in) + (n > 1 ? " the same way" : "")});
  return Candidate{c, std::nullopt, {}};
}

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
    // Without a traceback, its last words are all the user has.
    if (in.launcher && !in.launcher->last_line.empty()) {
      constexpr size_t kMax = 300;
      const std::string& last = in.launcher->last_line;
      l.message = last.size() > kMax ? last.substr(0, kMax) + "..." : last;
      what += "; its last line: " + *l.message;
    }
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

// Where the collectives came from, when it was not the ranks' own events.
std::string flightRecorderNote(const RunInput& in) {
  for (const auto& [r, ri] : in.ranks) {
    if (ri.flight_recorder) return " (from torch's Flight Recorder dumps)";
  }
  return "";
}

std::optional<Candidate> collectiveMismatch(const Analysis& a) {
  const auto m = findCollectiveMismatch(a.logs);
  if (!m) return std::nullopt;
  RootCause c = rootFromCollective(*m);
  c.summary = rankPrefix(m->rank) + "collective mismatch: " + m->detail + blameText(*m) + flightRecorderNote(*a.in);
  if (m->rank && a.states.count(*m->rank)) {
    const RankState& st = a.states.at(*m->rank);
    if (st.has_evidence && st.evidence.location && !a.in->library.isLibrary(st.evidence.location->file)) {
      c.location = st.evidence.location;
    }
    c.layers = buildLayers(*a.in, st);
  }
  // The blamed side's own call site says where better than an error it raised later.
  if (m->blame != Blame::kAmbiguous && !m->sides.empty()) {
    if (auto at = siteLocation(m->sides.front().site)) c.location = at;
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
  addLocationFromStacks(first.evidence, *first.in, a.in->library);
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
  // And only a program that uses a process group has a rendezvous to fail:
  // a plain program that exits non-zero is exit_code.
  if (!(instrumented && !any_pg && !peer_clean && a.gaps.process_group.empty() &&
        first.evidence.kind == Kind::kExitCode && a.in->world_size > 1 && joinsProcessGroup(a))) {
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

std::optional<Candidate> hungRendezvous(const Analysis& a) {
  // A hang before any process group formed: ranks inside init_process_group
  // (pg_init_begin, no pg_init) and ranks that never began it. The group
  // never formed because they never came; the ranks inside waited for the
  // store, in no collective.
  if (!a.trigger_hang) return std::nullopt;
  const RunInput& in = *a.in;
  std::vector<int> waiting, missing;
  for (int r = 0; r < in.world_size; ++r) {
    const auto it = in.ranks.find(r);
    if (it == in.ranks.end()) {
      missing.push_back(r);  // never seen at all
      continue;
    }
    if (hasEvent(it->second, "pg_init")) return std::nullopt;  // a group formed: not the rendezvous
    if (hasEvent(it->second, "pg_init_begin")) {
      waiting.push_back(r);
    } else if (hasEvent(it->second, "start")) {
      missing.push_back(r);  // instrumented, and never began it
    } else {
      return std::nullopt;  // not instrumented: nothing says it never began
    }
  }
  if (waiting.empty() || missing.empty()) return std::nullopt;
  RootCause c;
  c.kind = Kind::kRendezvousFailure;
  c.missing_ranks = missing;
  if (missing.size() == 1) c.rank = missing.front();
  std::string where;
  if (c.rank && in.ranks.count(*c.rank)) {
    if (const PyFrame* f = userFrame(in.ranks.at(*c.rank).stacks, in.library)) {
      c.location = Location{f->file, f->line};
      where = stackWhere(*f);
    }
    c.layers = buildLayers(in, a.states.at(*c.rank));
  }
  const std::string detail = ranksText(missing) + " never began init_process_group while " + ranksText(waiting) +
                             " waited for " + (missing.size() == 1 ? "it" : "them") +
                             " at the rendezvous (in the store, no collective yet)";
  c.layers.push_back({"error", detail});
  c.summary = rankPrefix(c.rank) + "rendezvous failure: " + detail + where;
  return Candidate{c, c.rank, waiting};
}

namespace {

// The blocking store call a rank was inside at the end (a store_begin with no
// store_end after it); null when none.
const Event* openStoreCall(const RankInput& ri) {
  const Event* open = nullptr;
  for (const Event& e : ri.events.events) {
    if (e.ev == "store_begin") open = &e;
    if (e.ev == "store_end") open = nullptr;
  }
  return open;
}

// The collective a rank was inside at the end ("barrier #4 (train.py:35)"); "" when none.
std::string openCollectiveText(const RankInput& ri) {
  const Event* open = nullptr;
  for (const Event& e : ri.events.events) {
    if (e.ev == "collective_begin") open = &e;
    if (e.ev == "collective_end") open = nullptr;
  }
  if (!open) return "";
  return open->op + (open->seq >= 0 ? " #" + std::to_string(open->seq) : "") +
         (open->site.empty() ? "" : " (" + shortSite(open->site) + ")");
}

}  // namespace

std::optional<Candidate> storeWait(const Analysis& a) {
  // A hang with ranks blocked in the c10d store (Store.get/wait on a key
  // another rank was to set: a handshake, a barrier through the store), not
  // in a collective: the store wait is the fault, and the ranks not in it
  // are the ones that never set the key or never arrived.
  if (!a.trigger_hang) return std::nullopt;
  const RunInput& in = *a.in;
  std::vector<int> waiting, others;
  std::map<std::string, std::vector<int>> by_call;  // "get 'k' at f.py:3" -> ranks
  const Event* first_call = nullptr;
  for (const auto& [r, ri] : in.ranks) {
    if (const Event* e = openStoreCall(ri)) {
      waiting.push_back(r);
      by_call[e->op + " '" + e->key + "'" + (e->site.empty() ? "" : " at " + shortSite(e->site))].push_back(r);
      if (!first_call) first_call = e;
    } else {
      others.push_back(r);
    }
  }
  for (int r = 0; r < in.world_size; ++r) {
    if (!in.ranks.count(r)) others.push_back(r);
  }
  std::sort(others.begin(), others.end());
  if (waiting.empty()) return std::nullopt;
  RootCause c;
  c.kind = Kind::kStoreWait;
  c.missing_ranks = others;
  if (others.size() == 1) c.rank = others.front();
  if (first_call && !first_call->site.empty()) c.location = siteLocation(first_call->site);
  std::string calls;
  for (const auto& [call, ranks] : by_call) {
    calls += (calls.empty() ? "" : "; ") + ranksText(ranks) + ": " + call;
  }
  std::string detail = ranksText(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in the c10d store, in no collective (" + calls + ")";
  if (others.empty()) {
    detail += ": every rank waits there, for a key none of them sets";
  } else {
    std::string elsewhere;
    for (int r : others) {
      const auto it = in.ranks.find(r);
      const std::string coll = it == in.ranks.end() ? "" : openCollectiveText(it->second);
      elsewhere += (elsewhere.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) +
                   (it == in.ranks.end() ? " never started"
                    : coll.empty()       ? " is elsewhere"
                                         : " waits in " + coll);
    }
    detail += "; the key was never set: " + elsewhere;
  }
  if (c.rank && a.states.count(*c.rank)) c.layers = buildLayers(in, a.states.at(*c.rank));
  c.layers.push_back({"error", detail});
  c.summary = rankPrefix(c.rank) + "store wait: " + detail;
  return Candidate{c, c.rank, waiting};
}

std::optional<Candidate> hungCollective(const Analysis& a) {
  if (!(a.any_failure || a.trigger_hang)) return std::nullopt;
  auto h = findHungCollective(a.logs);
  if (!h) return std::nullopt;
  const RunInput& in = *a.in;
  auto hung = *h;
  // No rank named (every rank entered it, or one side against another with
  // no majority: rank 1 of 2 missing), but the supervisor found one the
  // kernel had stopped (SIGSTOP, a freeze): that one cannot do its part, and
  // is the evidence for its side.
  if (!hung.rank && in.supervisor && in.supervisor->trigger.kind == TriggerKind::kHang && in.supervisor->trigger.rank &&
      in.supervisor->trigger.detail.find("stopped") != std::string::npos) {
    const int stopped = *in.supervisor->trigger.rank;
    hung.rank = stopped;
    hung.detail += "; rank " + std::to_string(stopped) + " is stopped (" + in.supervisor->trigger.detail + ")";
    std::erase(hung.waiting, stopped);
    if (hung.blame == Blame::kAmbiguous) {
      hung.blame = Blame::kRank;
      hung.culprits = {stopped};
      hung.why.clear();  // the detail says it
      std::stable_partition(hung.sides.begin(), hung.sides.end(), [&](const CollectiveSide& s) {
        return std::find(s.ranks.begin(), s.ranks.end(), stopped) != s.ranks.end();
      });
    }
  }
  // No majority and no evidence in the events: a single missing rank that
  // was alive at the end, somewhere outside torch.distributed, is the laggard.
  if (hung.blame == Blame::kAmbiguous && hung.missing.size() == 1 && in.ranks.count(hung.missing.front())) {
    const RankInput& m = in.ranks.at(hung.missing.front());
    const bool alive = (m.killed_by_teardown || !m.exit_known) && m.started;
    if (alive && !m.stacks.empty() && !stackInDistributed(m)) {
      hung.blame = Blame::kRank;
      hung.rank = hung.missing.front();
      hung.culprits = hung.missing;
      hung.why = "its stack dump shows it elsewhere, in no collective";
      if (hung.sides.size() == 2) std::swap(hung.sides[0], hung.sides[1]);
    }
  }
  if (hung.blame == Blame::kAmbiguous) hung.rank.reset();
  h = hung;
  RootCause c = rootFromCollective(*h);
  std::string where;
  const bool missing_blamed = h->rank && std::find(h->missing.begin(), h->missing.end(), *h->rank) != h->missing.end();
  if (h->rank && in.ranks.count(*h->rank)) {
    const RankInput& blamed = in.ranks.at(*h->rank);
    if (const PyFrame* f = missing_blamed ? userFrame(blamed.stacks, in.library) : nullptr) {
      c.location = Location{f->file, f->line};
      where = stackWhere(*f);
    } else if (!missing_blamed && !h->sides.empty()) {
      // A waiter blamed: its call site is the place.
      c.location = siteLocation(h->sides.front().site);
    }
    c.layers = buildLayers(in, a.states.at(*h->rank));
  }
  std::string detail = h->detail + blameText(*h);
  if (!a.collective_gap.empty()) {
    // Only the traced ranks were compared: "every rank" is every traced one.
    const std::string every = "that every rank entered";
    if (const size_t p = detail.find(every); p != std::string::npos) {
      detail.replace(p, every.size(), "that every traced rank entered");
    }
    detail += "; " + a.collective_gap;
  }
  c.layers.push_back({"error", detail});
  c.summary = rankPrefix(h->rank) + "hung collective: " + detail + flightRecorderNote(in) + where;
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
  // The two latest exits: whether another rank ended after each one, linearly.
  std::optional<std::pair<int64_t, int>> last_exit, second_exit;
  for (const auto& [o, other] : in.ranks) {
    if (!other.exit_ns) continue;
    const std::pair<int64_t, int> x{*other.exit_ns, -o};
    if (!last_exit || x > *last_exit) {
      second_exit = last_exit;
      last_exit = x;
    } else if (!second_exit || x > *second_exit) {
      second_exit = x;
    }
  }
  for (const auto& [r, ri] : in.ranks) {
    if (maxStepEnd(ri) != top) all_done = false;
    if (!hasEvent(ri, "pg_destroy")) all_destroyed = false;
    const RankState& st = a.states.at(r);
    const bool never_exited = st.cls == FailureClass::kTeardown || st.cls == FailureClass::kSurvivor ||
                              (ri.killed_by_teardown && !st.has_evidence) || interruptedByTeardown(a, r);
    // Stuck means still there after the others: a rank that ended before a
    // peer did (stopped by its launcher, say) was not hanging on its way out.
    const auto& later = last_exit && -last_exit->second == r ? second_exit : last_exit;
    const bool ended_first = ri.exit_ns && later && *ri.exit_ns < later->first;
    if (never_exited && !ended_first && !hasEvent(ri, "exit")) stuck.push_back(r);
  }
  if (!((all_done || all_destroyed) && !stuck.empty() && stuck.size() < in.ranks.size() + 1)) return std::nullopt;
  RootCause c;
  c.kind = Kind::kShutdownHang;
  if (stuck.size() == 1) c.rank = stuck.front();
  std::string where;
  if (c.rank) {
    const RankInput& ri = in.ranks.at(*c.rank);
    if (const PyFrame* f = userFrame(ri.stacks, in.library)) {
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
  // Where the rank waits in C++, its native threads say why.
  for (int r : stuck) {
    const auto deadlock = glooTeardownDeadlock(in.ranks.at(r).native_stacks);
    if (!deadlock) continue;
    c.layers.push_back(
        {"error", (stuck.size() == 1 ? std::string() : "rank " + std::to_string(r) + ": ") +
                      "deadlock in torch's Gloo teardown: destroying the process group (" + deadlock->destroying +
                      "), a thread holds the GIL and waits for a Gloo worker, which waits for the GIL (" +
                      deadlock->waiting +
                      ") to free a finished collective's tensor whose Python object is gone; wait() async "
                      "collectives, or keep their tensors, until the group is destroyed"});
    c.summary += "; deadlock in torch's Gloo teardown: ~ProcessGroupGloo holds the GIL, a Gloo worker waits for it";
    break;
  }
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
    if (const PyFrame* f = userFrame(ri.stacks, in.library)) {
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
  // Stacks the supervisor could not take (no tool on the machine): the
  // reader must know why nothing names the rank.
  for (const std::string& n : in.supervisor->notes) {
    if (n.rfind("no stack dump of ", 0) == 0) c.summary += "; " + n;
  }
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
      {"node_launcher_lost", "a node whose launcher was killed before its ranks started leaves the others waiting",
       nodeLauncherLost},
      {"launcher_failed_first", "no rank could fail before the launcher itself did", launcherFailedFirst},
      {"collective_mismatch", "a mismatch explains the errors it causes on every rank", collectiveMismatch},
      {"node_lost", "a node that went away whole explains every SIGKILL and lost peer that follows", nodeLost},
      {"network_partition", "a link down before the failures explains the network errors on both sides",
       networkPartition},
      {"same_failure_everywhere", "every rank failing the same way has no primary; naming the first is a guess",
       sameFailureEverywhere},
      {"exit_before_rendezvous", "a bare exit before any process group left its peers at the rendezvous",
       exitBeforeRendezvous},
      {"earliest_primary", "the first rank to fail by its own fault started it; collateral never does",
       earliestPrimary},
      {"hung_rendezvous", "with no primary failure, a hang before any group formed: the ranks that never began the rendezvous",
       hungRendezvous},
      {"store_wait", "with no primary failure, ranks blocked in the c10d store wait for a key, not in a collective",
       storeWait},
      {"hung_collective", "with no primary failure, the collective some ranks never entered", hungCollective},
      {"shutdown_hang", "the work finished and one rank never exited", shutdownHang},
      {"store_rendezvous_failure", "every failure is a lost store before any process group", storeRendezvousFailure},
      {"stack_dump_hang", "no event says where, and the stack dumps show who waits in a collective and who is elsewhere",
       stackDumpHang},
      {"no_progress", "the supervisor saw no progress and no event says where", noProgress},
      {"only_collateral", "only symptoms of another failure: say so, never guess", onlyCollateral},
      {"launcher_failed_alone", "every rank was clean; the launcher's own exit is all there is", launcherFailedAlone},
  };
  return rules;
}

namespace {

// torch 2.x's abort at exit (docs/TORCH2.md): std::terminate with no active
// exception after the rank destroyed its process group. Its work was done.
bool abortedAtExit(const RankState& st) {
  return st.has_evidence && st.evidence.kind == Kind::kCppException && st.evidence.type == "std::terminate" &&
         hasEvent(*st.in, "pg_destroy");
}

constexpr const char* kExitAbortCause =
    "a Gloo worker thread outlived destroy_process_group (DDP keeps the group alive) and let go of a finished "
    "collective's tensors, or of the Python state its work captured during backward(), while the interpreter "
    "finalized; taking the GIL then ends the thread, and the unwind through a noexcept frame calls "
    "std::terminate (torch 2.x; before exiting, wait with the GIL released until the workers have let go: "
    "docs/TORCH2.md)";

}  // namespace

std::optional<Candidate> chooseRootCause(const Analysis& a) {
  std::optional<Candidate> c;
  for (const NamedRule& rule : rootCauseRules()) {
    if ((c = rule.apply(a))) break;
  }
  // A rule that said nothing of blame blames its rank, or none.
  if (c && c->cause.blame == Blame::kNone && c->cause.rank) c->cause.blame = Blame::kRank;
  if (c && c->cause.blame == Blame::kRank && c->cause.ranks.empty()) c->cause.ranks = {*c->cause.rank};
  // Multi-node: a rank's fault says which node it was on ("rank 3 on n2: ...").
  if (c && c->cause.rank && !c->cause.node && a.in->ranks.count(*c->cause.rank)) {
    const std::string& node = a.in->ranks.at(*c->cause.rank).node;
    if (!node.empty()) {
      c->cause.node = node;
      const std::string prefix = rankPrefix(c->cause.rank);
      if (c->cause.summary.rfind(prefix, 0) == 0) {
        c->cause.summary.insert(prefix.size() - 2, " on " + node);
      }
    }
  }
  // An injected system-call failure on the root-cause rank is the onion's
  // core: the exception the trainer raised is only how it surfaced.
  if (c && c->cause.rank && a.states.count(*c->cause.rank)) {
    const RankState& st = a.states.at(*c->cause.rank);
    if (const Event* f = firstInjectedSyscall(*st.in, st.t_ns)) {
      c->cause.layers.push_back({"error", "injected by faultline: " + injectedSyscall(*f)});
    }
  }
  // torch 2.x's abort at exit, on the rank blamed or on every rank blamed.
  if (c && !c->cause.ranks.empty() &&
      std::all_of(c->cause.ranks.begin(), c->cause.ranks.end(),
                  [&](int r) { return a.states.count(r) && abortedAtExit(a.states.at(r)); })) {
    c->cause.summary += " at exit, after destroy_process_group";
    c->cause.layers.push_back({"error", kExitAbortCause});
  }
  return c;
}

}  // namespace faultline::diagnose
