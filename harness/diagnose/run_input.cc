// Gathers a run directory into a RunInput.
#include "harness/diagnose/run_input.h"

#include "harness/diagnose/flight_recorder.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/error_file.h"
#include "harness/diagnose/native_error.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "harness/model/node_layout.h"
#include "harness/model/outcome.h"
#include "harness/model/run_layout.h"

namespace faultline::diagnose {
namespace fs = std::filesystem;
namespace {

std::optional<int> parseRankDir(const std::string& name) {
  if (name.empty() || name.size() > 6) return std::nullopt;
  int r = 0;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
    r = r * 10 + (c - '0');
  }
  return r;
}

// torchrun --log_dir layout: logs/<run_id>/attempt_<N>/<local_rank>/{stdout,stderr}.log, error.json.
// Returns the directory of the first attempt (whose failure is the root
// cause; a restart's are later ones), or empty.
fs::path firstAttemptDir(const fs::path& logs) {
  std::error_code ec;
  if (!fs::is_directory(logs, ec)) return {};
  fs::path best;
  int best_n = -1;
  const auto consider = [&](const fs::path& att) {
    const int n = std::atoi(att.filename().string().c_str() + 8);
    if (best_n < 0 || n < best_n) best_n = n, best = att;
  };
  for (const auto& run : fs::directory_iterator(logs, ec)) {
    if (!run.is_directory(ec)) continue;
    if (startsWith(run.path().filename().string(), "attempt_")) {
      consider(run.path());  // --log_dir pointed straight at a run id directory.
      continue;
    }
    for (const auto& att : fs::directory_iterator(run.path(), ec)) {
      if (att.is_directory(ec) && startsWith(att.path().filename().string(), "attempt_")) consider(att.path());
    }
  }
  return best;
}

// What a rank's output (`text`, read from `origin`) says, added to the rank.
void addRankOutput(RankInput& r, std::string_view text, const std::string& origin, bool is_stderr) {
  r.started = true;
  RankLog log = scanRankLog(text);
  for (Evidence& e : log.errors) {
    e.origin = origin;
    r.errors.push_back(std::move(e));
  }
  for (StackThread& t : log.stacks) r.stacks.push_back(std::move(t));
  if (r.pg_not_destroyed.empty()) r.pg_not_destroyed = sanitizeUtf8(log.pg_not_destroyed);
  r.announced_faults.insert(r.announced_faults.end(), log.announced_faults.begin(), log.announced_faults.end());
  if (is_stderr && r.stderr_tail.empty()) r.stderr_tail = sanitizeUtf8(tailOf(text, 4096));
}

void addLog(RankInput& r, const fs::path& p, bool is_stderr) {
  // Failures are reported on stderr; stdout gets a shorter look (2>&1 setups).
  auto text = readTail(p.string(), is_stderr ? kMaxLogBytes : kMaxLogBytes / 4);
  if (!text || text->empty()) return;
  r.sources.push_back(p.filename().string());
  addRankOutput(r, *text, p.filename().string(), is_stderr);
}

void addErrorFile(RankInput& r, const fs::path& p) {
  auto text = readTail(p.string(), 1 << 20);
  if (!text) return;
  if (auto e = parseErrorFile(*text)) {
    r.started = true;
    r.errors.push_back(std::move(*e));
  }
}

// One rank's directory of a torchrun --log_dir attempt: its stderr, stdout and error file.
void addAttemptRankDir(RankInput& r, const fs::path& dir) {
  addLog(r, dir / "stderr.log", true);
  addLog(r, dir / "stdout.log", false);
  addErrorFile(r, dir / "error.json");
}

void addStacks(std::vector<StackThread>& to, const fs::path& p) {
  auto text = readTail(p.string());
  if (!text || text->empty()) return;
  for (StackThread& t : parseStackDump(*text)) to.push_back(std::move(t));
}

// The last crash's dump of crash_stacks.txt: each starts "Fatal Python
// error: ..." (a restarted rank appends its own).
void addCrashStacks(RankInput& r, const fs::path& p) {
  auto text = readTail(p.string());
  if (!text || text->empty()) return;
  constexpr std::string_view kHead = "Fatal Python error: ";
  const size_t last = text->rfind(kHead);
  if (last == std::string::npos) return;
  const std::string_view dump = std::string_view(*text).substr(last);
  r.crash_what = std::string(trim(dump.substr(kHead.size(), dump.find('\n') - kHead.size())));
  for (StackThread& t : parseStackDump(dump)) r.crash_stacks.push_back(std::move(t));
}

}  // namespace

namespace {

// The shim's `traceback` field, parsed as stderr's text is: the whole onion.
std::optional<Evidence> evidenceFromTraceback(const Event& e) {
  if (e.traceback.empty() || e.kind != "python_exception") return std::nullopt;
  const std::vector<PyChain> chains = parsePythonTracebacks(e.traceback);
  const PyChain* pick = nullptr;
  for (const PyChain& c : chains) {
    if (c.final().type.empty()) continue;
    // Python prints the type with its module ("queue.Empty"); the event has its __name__.
    const std::string& t = c.final().type;
    const bool same = t == e.type || (t.size() > e.type.size() && t.compare(t.size() - e.type.size(), e.type.size(), e.type) == 0 &&
                                      t[t.size() - e.type.size() - 1] == '.');
    if (!pick || same) pick = &c;
    if (same) break;
  }
  if (!pick) return std::nullopt;
  Evidence ev = evidenceFromChain(*pick);
  ev.origin = "events.jsonl";
  ev.t_ns = e.t;
  ev.thread = e.thread;
  return ev;
}

// A SystemExit the shim saw caught before it could end the process (Ray
// Train's worker catches the training function's BaseException): the exit
// status the trainer asked for, where it asked.
std::optional<Evidence> caughtExit(const Event& e) {
  if (e.kind != "python_exception" || e.type != "SystemExit") return std::nullopt;
  Evidence ev;
  ev.kind = Kind::kExitCode;
  ev.origin = "events.jsonl";
  ev.t_ns = e.t;
  ev.exit_caught = true;
  int code = 1;  // sys.exit("message") exits with 1
  const auto parsed = std::from_chars(e.message.data(), e.message.data() + e.message.size(), code);
  if (parsed.ec != std::errc() || parsed.ptr != e.message.data() + e.message.size()) code = 1;
  ev.exit_code = code;
  ev.type = "exit code " + std::to_string(code);
  if (!e.file.empty() && e.line > 0) ev.location = Location{e.file, static_cast<int>(e.line)};
  ev.note = "a SystemExit its framework caught; the process ended otherwise";
  ev.thread = e.thread;
  return ev;
}

}  // namespace

Evidence evidenceFromEvent(const Event& e) {
  if (auto ev = caughtExit(e)) return std::move(*ev);
  if (auto ev = evidenceFromTraceback(e)) return std::move(*ev);
  Evidence ev;
  ev.origin = "events.jsonl";
  ev.t_ns = e.t;
  ev.type = e.type;
  // c10::Error's what() carries "Exception raised from ..." and a frame list: keep the first line.
  const size_t nl = e.message.find('\n');
  ev.message = e.message.substr(0, nl);
  if (!e.file.empty() && e.line > 0) ev.location = Location{e.file, static_cast<int>(e.line)};
  if (!ev.location && nl != std::string::npos) ev.location = parseC10Location(e.message);
  if (e.kind == "signal") {
    ev.kind = Kind::kSignal;
    ev.signal = e.type;
  } else if (e.kind == "undefined_symbol") {
    ev.kind = Kind::kUndefinedSymbol;
  } else if (e.kind == "oom") {
    ev.kind = Kind::kOom;
  } else if (e.kind == "python_exception") {
    ev.kind = Kind::kPythonException;
  } else {
    ev.kind = Kind::kCppException;
  }
  // Native backtrace frames: "#1 0x55 ns::fn()+0x2 (/path/bin+0x1471d)" or "... at file.cc:42".
  for (const std::string& fr : e.stack) {
    std::string_view f = fr;
    if (startsWith(f, "#")) {
      const size_t sp = f.find(' ');
      f = sp == std::string_view::npos ? std::string_view() : trim(f.substr(sp + 1));
      if (startsWith(f, "0x")) {
        const size_t sp2 = f.find(' ');
        f = sp2 == std::string_view::npos ? std::string_view() : trim(f.substr(sp2 + 1));
      }
    }
    if (f.empty() || f.front() == '(') continue;  // no symbol
    // Frames in the C and C++ runtimes (signal trampolines, abort, terminate) say nothing.
    if (contains(f, "/libc.so") || contains(f, "libstdc++") || contains(f, "libgcc") || contains(f, "libpthread")) {
      continue;
    }
    // The probe's signal handler writes mangled names (demangling allocates,
    // which a handler must not); its terminate handler writes them demangled.
    const std::string fn = demangle(std::string(f.substr(0, std::min(f.find("+0x"), f.find(" (")))));
    if (fn.empty() || contains(fn, "fl_probe") || contains(fn, "faultline::probe") || startsWith(fn, "__") ||
        startsWith(fn, "_start") || fn == "main" || contains(fn, "raise") || contains(fn, "abort") ||
        contains(fn, "pthread_") || contains(fn, "std::terminate") || contains(fn, "__cxxabi")) {
      continue;
    }
    if (ev.function.empty()) {
      ev.function = fn;
      // "ns::fn(long, argument, list)" reads better as "ns::fn(...)" in a one-line summary.
      const size_t paren = ev.function.find('(');
      if (ev.function.size() > 60 && paren != std::string::npos) ev.function = ev.function.substr(0, paren) + "(...)";
    }
    const size_t at = fr.rfind(" at ");
    if (!ev.location && at != std::string::npos) {
      const std::string loc = fr.substr(at + 4);
      const size_t colon = loc.rfind(':');
      if (colon != std::string::npos && !isLibraryPath(loc.substr(0, colon))) {
        ev.location = Location{loc.substr(0, colon), std::atoi(loc.c_str() + colon + 1)};
      }
    }
    if (!ev.function.empty()) break;
  }
  ev.thread = e.thread;
  if (auto c = classifyCollateral(ev.type + ": " + ev.message)) {
    ev.collateral = true;
    ev.collateral_reason = collateralKindName(*c);
  }
  refineKind(ev);
  return ev;
}

namespace {

// A signal a process dies of by its own fault or the kernel's (a crash, an
// abort, the OOM killer), not by a teardown's or a user's request to stop.
bool ownFatalSignal(const std::string& sig) {
  return sig == "SIGSEGV" || sig == "SIGBUS" || sig == "SIGFPE" || sig == "SIGILL" || sig == "SIGABRT" ||
         sig == "SIGKILL" || sig == "SIGSYS" || sig == "SIGTRAP";
}

// The supervisor's exits of processes below a rank (by their ppid chain),
// dead of their own fatal signal before any teardown began.
void attachCrashedChildren(RunInput& in) {
  if (!in.supervisor) return;
  const SupervisorRecord& s = *in.supervisor;
  std::map<int, int> parent;
  for (const ProcessExit& pe : s.process_exits) {
    if (pe.ppid) parent[pe.pid] = *pe.ppid;
  }
  std::map<int, int> rank_of_pid;
  for (const auto& [r, ri] : in.ranks) {
    if (ri.pid) rank_of_pid[*ri.pid] = r;
  }
  const int64_t teardown = s.teardown.started_ns;
  for (const ProcessExit& pe : s.process_exits) {
    if (!pe.signal || !ownFatalSignal(*pe.signal) || rank_of_pid.count(pe.pid)) continue;
    if (teardown && pe.t_ns >= teardown) continue;
    int p = pe.pid;
    for (int depth = 0; depth < 64; ++depth) {  // a bounded walk: a record is no trusted tree
      auto up = parent.find(p);
      if (up == parent.end()) break;
      p = up->second;
      if (auto r = rank_of_pid.find(p); r != rank_of_pid.end()) {
        in.ranks[r->second].crashed_children.push_back(pe);
        break;
      }
    }
  }
  for (auto& [r, ri] : in.ranks) {
    std::sort(ri.crashed_children.begin(), ri.crashed_children.end(),
              [](const ProcessExit& a, const ProcessExit& b) { return a.t_ns < b.t_ns; });
  }
}

}  // namespace

namespace {

// A collective begun after faultline's teardown began is the teardown's
// doing, not the job's: Lightning's SIGTERM handler broadcasts among the
// ranks (trainer/connectors/signal_connector.py), and a hung job's ranks
// disagree there about nothing the job did. Those calls are left out.
void dropTeardownCollectives(RunInput& in) {
  if (!in.supervisor) return;
  const auto& td = in.supervisor->teardown;
  int64_t from = td.started_ns;
  for (const auto& s : td.signals) from = from > 0 ? std::min(from, s.t_ns) : s.t_ns;
  if (from <= 0) return;
  for (auto& [r, ri] : in.ranks) {
    std::set<int64_t> late;
    for (const Event& e : ri.events.events) {
      if (e.ev == "collective_begin" && e.t >= from && e.seq >= 0) late.insert(e.seq);
    }
    if (late.empty()) continue;
    std::erase_if(ri.events.events, [&](const Event& e) {
      return (e.ev == "collective_begin" || e.ev == "collective_end") && e.seq >= 0 && late.count(e.seq);
    });
  }
}

}  // namespace

// torch's Flight Recorder dumps (flight_recorder.h): a rank's collectives
// when no rank has any of its own, as in a trainer faultline could not
// instrument. Never mixed with the shim's: the two number their calls from
// different points (the recorder also sees the calls DDP makes in C++).
void addFlightRecorder(RunInput& in, const std::string& dir) {
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "collective_begin") return;
    }
  }
  const FlightRecorderDumps dumps = readFlightRecorderDumps(dir);
  for (auto& [r, events] : collectiveEventsOf(dumps)) {
    if (events.empty()) continue;
    RankInput& ri = in.ranks[r];
    ri.rank = r;
    ri.started = true;
    ri.sources.push_back("flight_recorder/" + std::filesystem::path(dumps.by_rank.at(r).path).filename().string());
    ri.flight_recorder = true;
    for (Event& e : events) ri.events.events.push_back(std::move(e));
  }
}

namespace {

// The global rank of local rank LOCAL on a node: its agent's rank_start
// (which carries LOCAL_RANK), else its place in the nodes' layout (node_layout.h).
std::optional<int> globalRankOf(const RunInput& in, const NodeInput& node, int local, int nodes) {
  for (const auto& [r, on] : node.ranks) {
    if (on.local_rank && *on.local_rank == local) return r;
  }
  const std::string& name = node.name;
  const bool numbered = name.size() > 1 && name[0] == 'n' &&
                        std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!numbered || nodes < 1 || in.world_size <= 0) return std::nullopt;
  const int rank = globalRank(std::atoi(name.c_str() + 1), local, ranksPerNode(in.world_size, nodes));
  if (rank < 0) return std::nullopt;
  return rank;
}

// torchrun-multinode's nodes n2.. log their ranks in OUT/nodes/NAME/logs, by
// local rank: each read as its global rank's, as n1's OUT/launcher/logs are.
void addNodeLogs(RunInput& in, const RunLayout& layout) {
  std::error_code ec;
  for (const auto& [name, node] : in.nodes) {
    const fs::path attempt = firstAttemptDir(layout.nodeLogsDir(name));
    if (attempt.empty()) continue;
    for (const auto& d : fs::directory_iterator(attempt, ec)) {
      const auto local = parseRankDir(d.path().filename().string());
      if (!local || !d.is_directory(ec)) continue;
      const auto rank = globalRankOf(in, node, *local, static_cast<int>(in.nodes.size()));
      if (!rank) continue;
      RankInput& ri = in.ranks[*rank];
      ri.rank = *rank;
      addAttemptRankDir(ri, d.path());
      if (ri.node.empty()) ri.node = name;
    }
  }
}

}  // namespace

namespace {

std::optional<int64_t> firstTeardownSignalNs(const TeardownRecord& t) {
  std::optional<int64_t> first;
  for (const SignalSent& sig : t.signals) {
    if ((sig.signal == "SIGTERM" || sig.signal == "SIGKILL") && sig.t_ns > 0) first = first ? std::min(*first, sig.t_ns) : sig.t_ns;
  }
  return first;
}

RankInput& rankAt(RunInput& in, int r) {
  RankInput& ri = in.ranks[r];
  ri.rank = r;
  return ri;
}

// Rank r in attempt k (0: the first, RunInput::ranks).
RankInput& rankAt(RunInput& in, int r, int k) {
  if (k <= 0) return rankAt(in, r);
  auto it = std::find_if(in.attempts.begin(), in.attempts.end(), [&](const AttemptInput& a) { return a.attempt == k; });
  if (it == in.attempts.end()) {
    it = in.attempts.insert(std::upper_bound(in.attempts.begin(), in.attempts.end(), k,
                                             [](int v, const AttemptInput& a) { return v < a.attempt; }),
                            AttemptInput{k, {}});
  }
  RankInput& ri = it->ranks[r];
  ri.rank = r;
  return ri;
}

// A rank's events, split by attempt: each restarted process of the rank
// appends to the same file, beginning with a `start` that names its attempt.
void splitEventsByAttempt(RunInput& in, int r) {
  RankInput& first = in.ranks.at(r);
  auto& events = first.events.events;
  auto it = std::find_if(events.begin(), events.end(), [](const Event& e) { return e.ev == "start" && e.attempt > 0; });
  if (it == events.end()) return;
  std::vector<Event> later(std::make_move_iterator(it), std::make_move_iterator(events.end()));
  events.erase(it, events.end());
  int k = 0;
  for (Event& e : later) {
    if (e.ev == "start" && e.attempt > 0) k = static_cast<int>(e.attempt);
    RankInput& ri = rankAt(in, r, k);
    ri.started = true;
    ri.events.events.push_back(std::move(e));
  }
}

// The files of a rank's restarts by faultline's own launcher: its
// OUT/ranks/R/attempt_K directories (the events are in the rank's one file).
void addRestartedRankFiles(RunInput& in, const RunLayout& layout, int r) {
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(layout.rankDir(r), ec)) {
    const std::string name = d.path().filename().string();
    if (!d.is_directory(ec) || !startsWith(name, "attempt_")) continue;
    const auto k = parseRankDir(name.substr(8));
    if (!k || *k < 1 || layout.rankAttemptDir(r, *k) != d.path().string()) continue;
    RankInput& ri = rankAt(in, r, *k);
    addLog(ri, layout.rankStderr(r, *k), true);
    addLog(ri, layout.rankStdout(r, *k), false);
    addErrorFile(ri, layout.rankErrorFile(r, *k));
  }
}

// Exit facts: the supervisor's record (its ranks, the exits it attributed,
// what its teardown signalled, the launcher), else only what the files say.
void readSupervisorFacts(RunInput& in, const RunLayout& layout) {
  std::error_code ec;
  if (fs::exists(layout.supervisorPath(), ec)) {
    auto rec = readSupervisorRecord(layout.supervisorPath());
    if (rec) in.supervisor = std::move(*rec);
  }
  if (!in.supervisor) return;
  const SupervisorRecord& s = *in.supervisor;
  if (s.world_size > 0) in.world_size = s.world_size;
  if (!s.launcher.empty()) in.launcher_name = s.launcher;
  for (const SupervisedRank& sr : s.ranks) {
    RankInput& r = rankAt(in, sr.rank, sr.attempt);
    r.pid = sr.pid;
    r.started = true;
    r.start_ns = sr.start_ns;
    r.exit_ns = sr.exit_ns;
    r.exit_code = sr.exit_code;
    r.signal = sr.signal;
    r.exit_known = sr.exit_code.has_value() || sr.signal.has_value();
    r.killed_by_teardown = sr.killed_by_teardown;
    // Its node as the supervisor read it (FAULTLINE_NODE) when it found the
    // rank: a rank killed before its node's agent saw it has no other record.
    if (sr.node && r.node.empty()) r.node = *sr.node;
  }
  // External mode: exits of descendants the supervisor attributed to a rank.
  std::set<int> later_pids;  // the restarts' processes: their exits are their attempts'
  for (const SupervisedRank& sr : s.ranks) {
    if (sr.attempt > 0) later_pids.insert(sr.pid);
  }
  for (const ProcessExit& pe : s.process_exits) {
    if (!pe.rank || later_pids.count(pe.pid)) continue;
    RankInput& r = rankAt(in, *pe.rank);
    r.started = true;
    if (r.exit_known && r.pid && *r.pid != pe.pid) continue;  // another process of that rank
    if (!r.pid) r.pid = pe.pid;
    if (!r.exit_ns) r.exit_ns = pe.t_ns;
    if (!r.exit_known) {
      r.exit_code = pe.exit_code;
      r.signal = pe.signal;
      r.exit_known = pe.exit_code.has_value() || pe.signal.has_value();
    }
  }
  for (const SignalSent& sig : s.teardown.signals) {
    if (sig.rank && (sig.signal == "SIGTERM" || sig.signal == "SIGKILL") && in.ranks.count(*sig.rank)) {
      RankInput& r = rankAt(in, *sig.rank);
      if (r.pid && *r.pid != sig.pid) continue;  // a later attempt's process of that rank
      // Signalled in teardown and then died of a signal: the teardown ended it.
      if (!r.exit_known || (r.signal && (*r.signal == "SIGTERM" || *r.signal == "SIGKILL"))) {
        r.killed_by_teardown = true;
      }
    }
  }
  // A launcher stopped first (srun, torchrun-multinode's driver) passes the
  // teardown on to its ranks: one that died of SIGTERM or SIGKILL after
  // faultline's first teardown signal died of the teardown, whoever sent it.
  if (const auto first = firstTeardownSignalNs(s.teardown)) {
    for (auto& [rank, r] : in.ranks) {
      if (r.exit_ns && *r.exit_ns >= *first && r.signal && (*r.signal == "SIGTERM" || *r.signal == "SIGKILL")) {
        r.killed_by_teardown = true;
      }
    }
  }
  if (s.launcher_process) {
    in.launcher_exit_code = s.launcher_process->exit_code;
    in.launcher_signal = s.launcher_process->signal;
  }
  in.library = LibraryPaths(s.library_paths);
}

// Each rank's directory: its output, error file, stacks and events.
void readRankDirs(RunInput& in, const RunLayout& layout) {
  std::error_code ec;
  const fs::path ranks_dir = layout.ranksDir();
  if (fs::is_directory(ranks_dir, ec)) {
    for (const auto& d : fs::directory_iterator(ranks_dir, ec)) {
      auto r = parseRankDir(d.path().filename().string());
      if (!r || !d.is_directory(ec)) continue;
      // A directory whose name is not the rank's own spelling ("01") is no rank's.
      if (d.path().filename().string() != std::to_string(*r)) continue;
      RankInput& ri = rankAt(in, *r);
      addLog(ri, layout.rankStderr(*r), true);
      addLog(ri, layout.rankStdout(*r), false);
      addErrorFile(ri, layout.rankErrorFile(*r));
      addStacks(ri.stacks, layout.rankStacks(*r));
      addStacks(ri.native_stacks, layout.rankNativeStacks(*r));
      addCrashStacks(ri, layout.rankCrashStacks(*r));
      ri.events = readEvents(layout.rankEvents(*r));
      if (!ri.events.events.empty()) ri.started = true;
      splitEventsByAttempt(in, *r);
      addRestartedRankFiles(in, layout, *r);
    }
  }
}

// Exits the supervisor could not attribute (no RANK in the environment, as
// in torch.multiprocessing.spawn children) belong to the rank whose events
// carry that pid: the pid of its `start` line, the shim in the rank's own
// process. Its DataLoader workers write events too (a file they open),
// under their own pids; they are the rank's children, not the rank.
void attributeUnnamedExits(RunInput& in) {
  if (!in.supervisor) return;
  std::map<int, std::set<int>> start_pids;  // rank -> the pids of its `start` lines, where it has any
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "start") start_pids[r].insert(e.pid);
    }
  }
  for (const ProcessExit& pe : in.supervisor->process_exits) {
    if (pe.rank) continue;
    for (auto& [r, ri] : in.ranks) {
      const auto start = start_pids.find(r);
      const bool same = start != start_pids.end()
                            ? start->second.count(pe.pid) > 0
                            : std::any_of(ri.events.events.begin(), ri.events.events.end(),
                                          [&](const Event& e) { return e.pid == pe.pid; });
      if (!same || ri.exit_known) continue;
      ri.pid = pe.pid;
      ri.exit_ns = pe.t_ns;
      ri.exit_code = pe.exit_code;
      ri.signal = pe.signal;
      ri.exit_known = pe.exit_code.has_value() || pe.signal.has_value();
    }
  }
}

// Each rank whose own process said its work was done (`work_end`), in every attempt.
void markWorkDone(RunInput& in) {
  const auto mark = [](RankInput& ri) {
    ri.work_done = std::any_of(ri.events.events.begin(), ri.events.events.end(),
                               [&](const Event& e) { return e.ev == "work_end" && (!ri.pid || e.pid == *ri.pid); });
  };
  for (auto& [r, ri] : in.ranks) mark(ri);
  for (AttemptInput& a : in.attempts) {
    for (auto& [r, ri] : a.ranks) mark(ri);
  }
}

// A launcher's log file per rank, STAMP_rankR.log (deepspeed's
// --enable_each_rank_log): the rank's stdout and stderr together, read as
// its stderr (where a failure is told).
void addRankLogFiles(RunInput& in, const RunLayout& layout) {
  std::error_code ec;
  static const std::regex kName(R"(.*_rank([0-9]+)\.log)");
  for (const auto& f : fs::directory_iterator(layout.launcherRankLogsDir(), ec)) {
    std::smatch m;
    const std::string name = f.path().filename().string();
    if (!f.is_regular_file(ec) || !std::regex_match(name, m, kName)) continue;
    if (const auto rank = parseRankDir(m[1].str())) addLog(rankAt(in, *rank), f.path(), true);
  }
}

// What one spawn program reported (ProcessRaisedException,
// ProcessExitedException) of the process it names: that rank's end, its
// traceback as evidence, and every other process of the same program
// (`siblings`; empty: all of them) terminated by spawn itself.
void addSpawnReport(RunInput& in, const LauncherLog& L, int rank, const std::vector<int>& siblings,
                    const std::string& origin) {
  RankInput& ri = rankAt(in, rank);
  ri.started = true;
  if (L.spawn_chain) {
    Evidence e = evidenceFromChain(*L.spawn_chain);
    e.origin = origin;
    ri.errors.push_back(std::move(e));
  }
  if (!ri.exit_known) {
    if (L.spawn_signal) ri.signal = L.spawn_signal, ri.exit_known = true;
    else if (L.spawn_exit_code) ri.exit_code = L.spawn_exit_code, ri.exit_known = true;
    else if (L.spawn_chain) ri.exit_code = 1, ri.exit_known = true;
  }
  const auto sibling = [&](int r) { return siblings.empty() || std::find(siblings.begin(), siblings.end(), r) != siblings.end(); };
  for (auto& [r, other] : in.ranks) {
    if (r != rank && sibling(r) && !other.exit_known) other.killed_by_teardown = true;
  }
}

// spawn's reports. One program names its processes by index, the rank on
// one node. Across nodes each node's program reports apart (its agent's
// copy, OUT/nodes/NAME/launcher.stderr): its index is a local rank of that
// node, and the stack's own blame is the first node's report (the run's
// exit status is that node's, node_driver.cc).
void addSpawnReports(RunInput& in, const RunLayout& layout) {
  LauncherLog& whole = *in.launcher;
  const int nodes = static_cast<int>(in.nodes.size());
  bool first = true;
  for (const auto& [name, node] : in.nodes) {  // n1, n2, ... (NodeInput's order)
    const std::string path = layout.nodeLauncherStderr(name);
    auto text = readTail(path);
    if (!text) continue;
    const LauncherLog own = parseLauncherLog(*text);
    if (!own.spawn_rank) continue;
    const auto rank = globalRankOf(in, node, *own.spawn_rank, nodes);
    if (!rank) continue;
    std::vector<int> siblings;
    for (int local = 0; local < in.world_size; ++local) {
      const auto r = globalRankOf(in, node, local, nodes);
      if (!r) break;
      siblings.push_back(*r);
    }
    addSpawnReport(in, own, *rank, siblings, "nodes/" + name + "/launcher.stderr");
    if (first && whole.claimed_root_rank == whole.spawn_rank) whole.claimed_root_rank = rank;
    if (first) whole.spawn_rank = rank;
    first = false;
  }
  if (first) addSpawnReport(in, whole, *whole.spawn_rank, {}, "launcher/stderr");
}

// The launcher: its stderr and stdout, torchrun's per-rank log files, spawn's
// children. Returns the tracebacks its failure block quotes, by rank (into
// *in.launcher), for addQuotedChains.
std::map<int, const PyChain*> readLauncherFiles(RunInput& in, const RunLayout& layout) {
  std::error_code ec;
  auto lerr = readTail(layout.launcherStderr());
  std::map<int, const PyChain*> pending_chains;  // into *in.launcher
  // The first attempt's: its failure is the run's root cause (later ones are
  // the launcher's restarts, RunInput::attempts).
  const fs::path attempt = firstAttemptDir(layout.launcherLogsDir());
  if (lerr) {
    in.launcher = parseLauncherLog(*lerr);
    if (auto lout = readTail(layout.launcherStdout())) readLauncherStdout(*lout, *in.launcher);
    const LauncherLog& L = *in.launcher;
    // Without per-rank log files, rank lines prefixed "[default1]:" are the rank's output.
    if (attempt.empty()) {
      std::map<int, std::string> demuxed;
      for (std::string_view l : splitLines(*lerr)) {
        if (auto p = splitRankPrefix(l)) demuxed[p->rank].append(p->text).push_back('\n');
      }
      for (auto& [r, text] : demuxed) addRankOutput(rankAt(in, r), text, "launcher/stderr", true);
    }
    if (L.spawn_rank) addSpawnReports(in, layout);
    // torchrun's failure entries give exit status (never the choice of root cause).
    for (const LauncherFailure& f : L.failures) {
      if (f.rank < 0) continue;
      // After restarts the block tells of the last attempt: an entry for
      // another process of the rank than the first attempt's (or, without a
      // pid, any entry) is a restart's failure, not the run's root cause.
      if (const auto known = in.ranks.find(f.rank); known != in.ranks.end() && known->second.pid && f.pid &&
                                                    *known->second.pid != *f.pid) {
        continue;
      }
      if (!in.attempts.empty() && !f.pid) continue;
      RankInput& ri = rankAt(in, f.rank);
      ri.started = true;
      if (f.chain) pending_chains[f.rank] = &*f.chain;
      if (!ri.pid && f.pid) ri.pid = f.pid;
      if (!ri.exit_known && (f.exit_code || f.signal)) {
        ri.exit_code = f.exit_code;
        ri.signal = f.signal;
        ri.exit_known = true;
      }
    }
  }
  if (!attempt.empty()) {
    for (const auto& d : fs::directory_iterator(attempt, ec)) {
      auto r = parseRankDir(d.path().filename().string());
      if (!r || !d.is_directory(ec)) continue;
      addAttemptRankDir(rankAt(in, *r), d.path());  // single node: local rank == rank
    }
  }
  addRankLogFiles(in, layout);
  return pending_chains;
}

// An error file's traceback quoted in the failure block is evidence only
// for a rank that has none of its own (its error file was not in reach).
void addQuotedChains(RunInput& in, const std::map<int, const PyChain*>& pending_chains) {
  for (const auto& [r, chain] : pending_chains) {
    RankInput& ri = rankAt(in, r);
    const bool has_own = !ri.errors.empty() ||
                         std::any_of(ri.events.events.begin(), ri.events.events.end(),
                                     [](const Event& e) { return e.ev == "error"; });
    if (has_own) continue;
    Evidence e = evidenceFromChain(*chain);
    e.origin = "launcher/stderr";
    ri.errors.push_back(std::move(e));
  }
}

// An exception on its way to the trainer's code (the shim's
// collective_raised and signal_raised) that the rank caught: it began
// another collective afterwards. What it says, and where it was raised and caught.
std::optional<Evidence> caughtException(const std::vector<Event>& events, size_t i) {
  const Event& e = events[i];
  const bool went_on = std::any_of(events.begin() + static_cast<std::ptrdiff_t>(i) + 1, events.end(),
                                   [](const Event& later) { return later.ev == "collective_begin"; });
  if (!went_on) return std::nullopt;
  Evidence ev = evidenceFromEvent(e);
  const std::string site = std::filesystem::path(e.site).filename().string();
  if (e.ev == "signal_raised") {
    ev.note = "raised by torch's SIGCHLD handler" + (site.empty() ? "" : " at " + site) + " and caught; the rank went on";
  } else {
    ev.note = "raised in " + e.op + (e.seq >= 0 ? " #" + std::to_string(e.seq) : "") + " and caught" +
              (site.empty() ? "" : " by its caller at " + site) + ", which went on";
  }
  return ev;
}

// Events: pids, the probe's error events, exit codes, exceptions the rank caught.
void readEventFacts(RunInput& in) {
  for (auto& [r, ri] : in.ranks) {
    const std::vector<Event>& events = ri.events.events;
    for (size_t i = 0; i < events.size(); ++i) {
      const Event& e = events[i];
      if (!ri.pid && e.pid > 0) ri.pid = e.pid;
      if (e.ev == "error") {
        ri.errors.push_back(evidenceFromEvent(e));
      } else if (e.ev == "collective_raised" || e.ev == "signal_raised") {
        if (auto caught = caughtException(events, i)) ri.caught.push_back(std::move(*caught));
      } else if (e.ev == "exit" && !ri.exit_known && e.code >= 0) {
        ri.exit_code = static_cast<int>(e.code);
        ri.exit_known = true;
      }
    }
  }
}

// A rank that called exit(N), N != 0 (the probe's `exit` event, written as
// exit() begins), and then crashed on its way out: a thread still at work as
// the static destructors ran (the reference trainer's data loader calling a
// torch operator being unregistered, "Tried to access the schema for
// aten::index_select"). The exit it asked for is its failure; the crash is
// how its process ended, said with it, not a failure of its own. Errors
// recorded after the exit event are the crash; its output's record of the
// same exception (stderr's "terminate called after throwing") goes with them.
void foldCrashesOnTheWayOut(RankInput& ri) {
  const auto exit_ev = std::find_if(ri.events.events.begin(), ri.events.events.end(),
                                    [](const Event& e) { return e.ev == "exit" && e.code > 0; });
  if (exit_ev == ri.events.events.end()) return;
  const auto after_exit = [&](const Evidence& e) { return e.origin == "events.jsonl" && e.t_ns && *e.t_ns > exit_ev->t; };
  std::vector<Evidence> crashes;
  std::copy_if(ri.errors.begin(), ri.errors.end(), std::back_inserter(crashes), after_exit);
  if (crashes.empty()) return;
  const auto restates = [&](const Evidence& e) {
    if (e.origin == "events.jsonl") return after_exit(e);
    return e.cut_off || std::any_of(crashes.begin(), crashes.end(), [&](const Evidence& c) { return c.type == e.type; });
  };
  ri.errors.erase(std::remove_if(ri.errors.begin(), ri.errors.end(), restates), ri.errors.end());
  Evidence ev;
  ev.kind = Kind::kExitCode;
  ev.origin = "events.jsonl";
  ev.t_ns = exit_ev->t;
  ev.exit_code = static_cast<int>(exit_ev->code);
  ev.type = "exit code " + std::to_string(*ev.exit_code);
  ev.crashed_exiting = describe(crashes.front());
  ri.errors.push_back(std::move(ev));
}

// A rank that exited non-zero, with no signal, after a scripted `exit` fault
// of faultline's struck it ended by that fault, whatever its launcher
// signalled it afterwards: its exit handlers may still run when the launcher,
// seeing a peer fail first, signals every worker.
bool exitedByScriptedExit(const RankInput& r) {
  return r.exit_known && !r.signal && r.exit_code && *r.exit_code != 0 && struckByAFault(r, "exit");
}

// Ray Train's report lists the workers that failed, and Ray then shuts the
// worker group down: a worker it did not list that ended with a bare
// status after a listed one had died, with no error of its own, was ended
// by that shutdown (rank 0 waiting in the rendezvous for a dead peer).
bool endedByRayShutdown(const RunInput& in, int rank, const RankInput& ri) {
  const std::set<int>& listed = in.launcher->ray_failed_ranks;
  if (listed.empty() || listed.count(rank) || !ri.exit_known || ri.signal || !ri.exit_code || *ri.exit_code == 0 ||
      !ri.exit_ns || !ri.errors.empty()) {
    return false;
  }
  if (std::any_of(ri.events.events.begin(), ri.events.events.end(), [](const Event& e) { return e.ev == "error"; })) {
    return false;
  }
  return std::any_of(listed.begin(), listed.end(), [&](int f) {
    const auto it = in.ranks.find(f);
    return it != in.ranks.end() && it->second.exit_ns && *it->second.exit_ns < *ri.exit_ns;
  });
}

// torchelastic's "failed (exitcode: N) local_rank: R (pid: P)" and
// "Sending process P closing signal SIGTERM": match pids to ranks.
void matchLauncherPids(RunInput& in) {
  if (!in.launcher) return;
  for (auto& [r, ri] : in.ranks) {
    if (!ri.pid) continue;
    for (const auto& pe : in.launcher->failed_pids) {
      if (pe.pid == *ri.pid && !ri.exit_known && pe.exit_code) {
        if (*pe.exit_code < 0) ri.signal = signalName(-*pe.exit_code);
        else ri.exit_code = pe.exit_code;
        ri.exit_known = true;
      }
    }
    // The launcher's signal ended the rank unless the rank is known to
    // have died of another one first (torchrun signals every worker of a
    // failed job, a dead one it has not reaped yet too), or its exit is the
    // one that made the launcher signal them all (DeepSpeed's return code).
    if (!exitedByScriptedExit(ri) && launcherSignalEnded(*in.launcher, *ri.pid, ri.exit_known, ri.exit_code, ri.signal)) {
      ri.killed_by_teardown = true;
    }
    // Lightning's observer SIGKILLed every process but the child it saw
    // end: a SIGKILL of another one is its teardown (rank 0 waiting in the
    // rendezvous for that child has nothing else to say).
    const auto& observed = in.launcher->observer_killed_all_but;
    if (observed && *observed != *ri.pid && ri.signal == "SIGKILL") ri.killed_by_teardown = true;
    if (endedByRayShutdown(in, r, ri)) ri.killed_by_teardown = true;
  }
}

// The dynamic loader's "symbol lookup error" (a lazy binding that found no
// symbol) ends a process with status 127 and is said on its stderr without
// a rank. Where ranks share their launcher's stderr (spawn, Lightning), it
// is the line of the one rank that exited 127 with no error of its own.
void addLoaderError(RunInput& in, const RunLayout& layout) {
  RankInput* only = nullptr;
  for (auto& [r, ri] : in.ranks) {
    if (!ri.exit_known || ri.signal || ri.exit_code != 127) continue;
    if (only) return;  // two of them: whose line is whose is not said
    only = &ri;
  }
  if (!only || !only->errors.empty()) return;
  const auto text = readTail(layout.launcherStderr());
  if (!text) return;
  for (std::string_view l : splitLines(*text)) {
    auto e = parseUndefinedSymbol(l);
    if (!e || e->type != "symbol lookup error") continue;
    e->origin = "launcher/stderr";
    only->errors.push_back(std::move(*e));
    return;
  }
}

// Nodes: each rank's node and host from its agent's rank_start; the exit an
// agent saw where nothing else said one.
void readNodeFacts(RunInput& in, const RunLayout& layout) {
  for (const auto& [name, node] : in.nodes) {
    for (const auto& [r, on] : node.ranks) {
      RankInput& ri = rankAt(in, r);
      if (!ri.node.empty()) continue;  // a restarted rank: its first node
      ri.node = name;
      ri.host = node.host;
      ri.started = true;
      if (!ri.pid && on.pid) ri.pid = on.pid;
      if (!ri.start_ns && on.start_ns) ri.start_ns = on.start_ns;
      if (!ri.exit_known && (on.exit_code || on.signal)) {
        ri.exit_code = on.exit_code;
        ri.signal = on.signal;
        ri.exit_known = true;
        if (!ri.exit_ns) ri.exit_ns = on.exit_ns;
      }
    }
  }
  addNodeLogs(in, layout);
}

// The parsers picked locations by the built-in policy; the run's own
// library paths pick again among the same frames.
void repickLocations(RunInput& in) {
  if (!in.library.extra().empty()) {
    for (auto& [r, ri] : in.ranks) {
      for (Evidence& e : ri.errors) pickLocation(e, in.library);
    }
  }
}

// Without a record of the world size: the ranks seen, and what their start events say.
void inferWorldSize(RunInput& in) {
  if (in.world_size <= 0) {
    for (const auto& [r, ri] : in.ranks) in.world_size = std::max(in.world_size, r + 1);
    for (const auto& [r, ri] : in.ranks) {
      for (const Event& e : ri.events.events) {
        if (e.ev == "start" && e.world_size > in.world_size) in.world_size = static_cast<int>(e.world_size);
      }
    }
  }
}

}  // namespace

bool struckByAFault(const RankInput& r, std::string_view kind) {
  const auto announced = [&](const std::string& k) { return kind.empty() || k == kind; };
  if (std::any_of(r.announced_faults.begin(), r.announced_faults.end(), announced)) return true;
  return std::any_of(r.events.events.begin(), r.events.events.end(),
                     [&](const Event& e) { return e.ev == "fault" && announced(e.kind); });
}

RunInput loadRun(const std::string& dir) {
  RunInput in;
  in.dir = dir;
  const RunLayout layout(dir);
  readSupervisorFacts(in, layout);
  readRankDirs(in, layout);
  dropTeardownCollectives(in);
  addFlightRecorder(in, layout.flightRecorderDir());
  attributeUnnamedExits(in);
  markWorkDone(in);
  attachCrashedChildren(in);
  in.nodes = readNodes(dir, &in.node_problems);
  addQuotedChains(in, readLauncherFiles(in, layout));
  readEventFacts(in);
  for (auto& [r, ri] : in.ranks) foldCrashesOnTheWayOut(ri);
  matchLauncherPids(in);
  readNodeFacts(in, layout);
  addLoaderError(in, layout);
  repickLocations(in);
  inferWorldSize(in);
  if (const std::string twin = layout.twinDir(); fs::exists(fs::path(twin) / "supervisor.json")) {
    in.twin = loadRun(twin).ranks;
  }
  return in;
}

}  // namespace faultline::diagnose
