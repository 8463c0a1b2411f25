// Hangs read from stack dumps: where each main thread stands, and the rule
// that names the laggard from that.
#include "harness/diagnose/stack_hang.h"

#include <algorithm>

#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

bool isUser(const PyFrame& f) { return f.line > 0 && !isLibraryPath(f.file); }

bool isPythonFrame(const PyFrame& f) { return f.file.size() > 3 && f.file.compare(f.file.size() - 3, 3, ".py") == 0; }

// A frame that waits on peers: torch.distributed's Python, c10d's C++
// (collectives, their Work::wait, DDP's Reducer, the store), gloo's.
bool isCollectiveFrame(const PyFrame& f) {
  if (contains(f.file, "torch/distributed/") || contains(f.file, "csrc/distributed/")) return true;
  // Namespaces, not substrings: a user's template over c10d types
  // ("Comm<c10d::ProcessGroupGloo>::allreduce") is the user's frame.
  return startsWith(f.function, "c10d::") || startsWith(f.function, "gloo::");
}

bool isTorchFrame(const PyFrame& f) { return contains(f.file, "/torch/") || startsWith(f.file, "torch/"); }

// "all_reduce (distributed_c10d.py:1541)", "c10d::Reducer::finalize_backward".
std::string frameName(const PyFrame& f) {
  std::string fn = f.function.substr(0, f.function.find('('));
  if (f.file.empty()) return fn;
  return fn + " (" + baseName(f.file) + ":" + std::to_string(f.line) + ")";
}

// "skip.py:28 in lag"
std::string where(const PyFrame& f) {
  return baseName(f.file) + ":" + std::to_string(f.line) + (f.function.empty() ? "" : " in " + f.function);
}

}  // namespace

const StackThread* mainThread(const std::vector<StackThread>& threads) {
  // Of two dumps of it (py-spy's Python-only, then --native), the fuller.
  const StackThread* best = nullptr;
  for (const StackThread& t : threads) {
    if (t.current && !startedByThreading(t) && (!best || t.frames.size() > best->frames.size())) best = &t;
  }
  if (best) return best;
  // faulthandler's current thread was one threading started (it took the
  // signal): the main thread is the last listed that threading did not start.
  for (auto it = threads.rbegin(); it != threads.rend(); ++it) {
    if (!it->frames.empty() && !startedByThreading(*it)) return &*it;
  }
  return threads.empty() ? nullptr : &threads.back();
}

DumpReading readDump(const std::vector<StackThread>& threads) {
  DumpReading out;
  const StackThread* th = mainThread(threads);
  if (!th) {
    out.why = "no stack dump";
    return out;
  }
  if (th->frames.empty()) {
    out.why = "no frames in its main thread's dump";
    return out;
  }
  bool native = false;
  for (const PyFrame& f : th->frames) native = native || !isPythonFrame(f);
  // The collective it waits in, as named: torch.distributed's Python call
  // (distributed_c10d.py's before a wrapper's), else the innermost c10d
  // frame (the wait itself: Reducer::finalize_backward, Work::wait), else
  // gloo's, else whatever collective frame there was.
  const PyFrame *python = nullptr, *c10d_python = nullptr, *c10d = nullptr, *gloo = nullptr, *any = nullptr;
  for (const PyFrame& f : th->frames) {  // innermost first, up to the first user frame
    if (isCollectiveFrame(f)) {
      if (!any) any = &f;
      if (isPythonFrame(f)) {
        if (!python) python = &f;
        if (!c10d_python && contains(f.file, "distributed_c10d.py")) c10d_python = &f;
      }
      if (!c10d && startsWith(f.function, "c10d::")) c10d = &f;
      if (!gloo && startsWith(f.function, "gloo::")) gloo = &f;
      continue;
    }
    if (isUser(f)) {
      out.user = f;
      break;
    }
  }
  const PyFrame* collective = c10d_python ? c10d_python : python ? python : c10d ? c10d : gloo ? gloo : any;
  if (collective) {
    out.place = DumpPlace::kInCollective;
    out.collective = frameName(*collective);
    return out;
  }
  const PyFrame& inner = th->frames.front();
  if (!native && isTorchFrame(inner)) {
    // DDP's backward waits in c10d::Reducer, under torch/autograd frames: a
    // dump without native frames cannot tell that from computing.
    out.why = "inside torch at " + where(inner) + ", and the dump has no native frames to say whether it waits there";
    return out;
  }
  out.place = DumpPlace::kElsewhere;
  return out;
}

std::optional<Candidate> stackDumpHang(const Analysis& a) {
  if (!a.trigger_hang) return std::nullopt;
  const RunInput& in = *a.in;
  if (std::max<size_t>(in.ranks.size(), static_cast<size_t>(std::max(0, in.world_size))) < 2) return std::nullopt;
  bool any_dump = false;
  for (const auto& [r, ri] : in.ranks) any_dump = any_dump || !ri.stacks.empty();
  if (!any_dump) return std::nullopt;
  std::vector<int> waiting, elsewhere, unknown, exited;
  std::map<int, DumpReading> read;
  std::string waits_in;  // the first waiting rank's collective frame
  for (int r = 0; r < std::max(in.world_size, in.ranks.empty() ? 0 : in.ranks.rbegin()->first + 1); ++r) {
    auto it = in.ranks.find(r);
    if (it == in.ranks.end()) {
      unknown.push_back(r);
      read[r].why = "never seen";
      continue;
    }
    const RankInput& ri = it->second;
    // Gone before the teardown, cleanly: not in whatever its peers wait in.
    if (ri.exit_known && !ri.killed_by_teardown && ri.exit_code == 0 && !ri.signal) {
      exited.push_back(r);
      continue;
    }
    DumpReading d = readDump(ri.stacks);
    if (d.place == DumpPlace::kInCollective) {
      waiting.push_back(r);
      if (waits_in.empty()) waits_in = d.collective;
    } else if (d.place == DumpPlace::kElsewhere) {
      elsewhere.push_back(r);
    } else {
      unknown.push_back(r);
    }
    read[r] = std::move(d);
  }
  auto placeOf = [&](int r) -> std::string {
    const DumpReading& d = read[r];
    if (d.place == DumpPlace::kInCollective) return "waits in " + d.collective;
    if (d.place == DumpPlace::kElsewhere) return d.user ? "is at " + where(*d.user) : "is elsewhere (no user frame)";
    return "unknown (" + d.why + ")";
  };
  // What each dump showed, for every answer that names no single rank.
  std::string seen;
  for (const auto& [r, d] : read) seen += (seen.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " ") + placeOf(r);
  for (int r : exited) seen += (seen.empty() ? "" : "; ") + ("rank " + std::to_string(r) + " exited cleanly");
  std::vector<int> missing = elsewhere;
  missing.insert(missing.end(), exited.begin(), exited.end());
  std::sort(missing.begin(), missing.end());

  if (!waiting.empty() && missing.size() == 1 && unknown.empty()) {
    const int lag = missing.front();
    RootCause c;
    c.kind = Kind::kHungCollective;
    c.rank = lag;
    c.waiting_ranks = waiting;
    c.missing_ranks = missing;
    std::string lag_where;
    if (read.count(lag) && read[lag].user) {
      const PyFrame& f = *read[lag].user;
      c.location = Location{f.file, f.line};
      lag_where = " (stack: " + where(f) + ")";
    }
    const bool gone = std::find(exited.begin(), exited.end(), lag) != exited.end();
    const std::string detail = ranksText(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in " + waits_in +
                               " (stack dumps); rank " + std::to_string(lag) +
                               (gone ? " exited cleanly without entering it" : " is not in it") +
                               (a.collective_gap.empty() ? "" : "; " + a.collective_gap);
    if (a.states.count(lag)) c.layers = buildLayers(in, a.states.at(lag));
    c.layers.push_back({"error", detail});
    c.summary = "rank " + std::to_string(lag) + ": hung collective: " + detail + lag_where;
    return Candidate{c, lag, waiting};
  }
  // Every other answer is the supervisor's "no progress", with what the dumps showed.
  auto base = noProgress(a);
  if (!base) return std::nullopt;
  RootCause& c = base->cause;
  std::string verdict;
  if (waiting.empty()) {
    verdict = "stack dumps: no rank waits in a collective";
  } else if (missing.empty() && unknown.empty()) {
    verdict = "stack dumps: every rank waits in a collective, none is elsewhere (a mismatch of collectives, a peer "
              "lost, or a transport that stalled)";
  } else if (!unknown.empty()) {
    verdict = "stack dumps: ambiguous, " + ranksText(unknown) + " cannot be read";
  } else {
    verdict = "stack dumps: ambiguous, " + ranksText(missing) + " are all outside the collective " +
              ranksText(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in: one of them";
    c.kind = Kind::kHungCollective;
    c.waiting_ranks = waiting;
    c.missing_ranks = missing;
    base->waiting_ranks = waiting;
  }
  c.summary += "; " + verdict + " (" + seen + ")";
  if (!c.layers.empty()) c.layers.back().text = c.summary;
  return base;
}

}  // namespace faultline::diagnose
