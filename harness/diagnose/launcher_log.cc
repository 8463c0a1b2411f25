// Parser for launcher output (torchrun, torch.distributed.launch, spawn parents).
#include "harness/diagnose/launcher_log.h"

#include "harness/diagnose/text.h"
#include "harness/model/outcome.h"

namespace faultline::diagnose {
namespace {

// Whether the launcher's account already named its first failure: one rank,
// or several together. The first account a launcher gives is its claim.
bool claimed(const LauncherLog& log) { return log.claimed_root_rank || !log.claimed_root_ranks.empty(); }

std::optional<int> leadingInt(std::string_view s) {
  s = trim(s);
  bool neg = false;
  if (!s.empty() && s.front() == '-') {
    neg = true;
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  long v = 0;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i < 9) v = v * 10 + (s[i++] - '0');
  return static_cast<int>(neg ? -v : v);
}

std::optional<int> intAfter(std::string_view s, std::string_view key) {
  const size_t p = s.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  return leadingInt(s.substr(p + key.size()));
}

// DeepSpeed's launch.py, whose logger writes to stdout: "[launch.py:253:
// sigkill_handler] Killing subprocess 123" (psutil's terminate(): SIGTERM;
// SIGKILL only to one still alive 30 s later), then "[...] ['python3', '-u',
// 'train.py', '--local_rank=2', ...] exits with return code = 1": the code is
// the failed rank's, the command the last one launch.py started, whichever
// failed. That command's --local_rank (one node: the rank) is the rank it
// blames.
void readDeepSpeedLine(std::string_view t, LauncherLog& log) {
  if (contains(t, "] Killing subprocess ")) {
    if (auto pid = intAfter(t, "] Killing subprocess ")) log.signals_sent[*pid].insert("SIGTERM");
  }
  if (contains(t, "] exits with return code = ") && contains(t, "sigkill_handler")) {
    log.failed_rank_return_code = intAfter(t, "] exits with return code = ");
    if (auto blamed = intAfter(t, "'--local_rank="); blamed && !claimed(log)) log.claimed_root_rank = blamed;
  }
}

// Ray Train's WorkerGroupError, in its controller's log (each attempt's
// failure) and in the driver's traceback: "Training failed due to worker
// errors:", then "[Rank 0,1 Error Snippet]:" before each failed worker's
// error. The first report's ranks are read; its repeats, and later
// attempts' reports, are not.
enum class RayReport { kNone, kReading, kRead };

void readRayLine(std::string_view t, RayReport& state, LauncherLog& log) {
  if (contains(t, "Training failed due to worker errors:")) {
    state = state == RayReport::kNone ? RayReport::kReading : RayReport::kRead;
    return;
  }
  const size_t at = t.find("[Rank ");
  if (state != RayReport::kReading || at == std::string_view::npos || !contains(t, " Error Snippet]")) return;
  std::string_view list = t.substr(at + 6);
  list = list.substr(0, list.find(' '));
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = list.substr(0, comma);
    const auto first = leadingInt(item);
    const size_t dash = item.find('-', 1);
    const auto last = dash == std::string_view::npos ? first : leadingInt(item.substr(dash + 1));
    for (int r = first.value_or(0); first && last && r <= *last && r - *first < 4096; ++r) log.ray_failed_ranks.insert(r);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

bool isLauncherWrapperType(std::string_view type) {
  for (std::string_view w : {"ChildFailedError", "CalledProcessError", "ProcessRaisedException",
                             "ProcessExitedException", "SignalException", "WorkerGroupError", "TrainingFailedError"}) {
    if (type.size() >= w.size() && type.substr(type.size() - w.size()) == w) return true;
  }
  return false;
}

bool isLauncherTraceback(const PyTraceback& tb) {
  if (isLauncherWrapperType(tb.type)) return true;
  if (tb.frames.empty()) return false;
  const std::string& outer = tb.frames.front().file;
  for (std::string_view f : {"bin/torchrun", "torch/distributed/run.py", "torch/distributed/launch.py",
                             "<frozen runpy>", "torch/distributed/elastic/"}) {
    if (contains(outer, f)) {
      // runpy also starts `python -m trainer`: require launcher frames further in.
      for (const PyFrame& fr : tb.frames) {
        if (contains(fr.file, "torch/distributed/run.py") || contains(fr.file, "torch/distributed/launch.py") ||
            contains(fr.file, "torch/distributed/elastic/") || contains(fr.file, "bin/torchrun")) {
          return true;
        }
      }
    }
  }
  return false;
}

std::vector<int> srunFailedTasks(std::string_view line) {
  constexpr std::string_view kPrefix = "srun: error: ";
  if (!startsWith(line, kPrefix)) return {};
  size_t at = line.find(": task ", kPrefix.size());
  size_t skip = 7;
  if (at == std::string_view::npos) {
    at = line.find(": tasks ", kPrefix.size());
    skip = 8;
  }
  if (at == std::string_view::npos) return {};
  const std::string_view rest = line.substr(at + skip);
  // "2", "2-3", "0,2-3", up to the ':' that ends the list.
  std::vector<int> tasks;
  size_t i = 0;
  const auto number = [&]() -> std::optional<int> {
    const size_t from = i;
    int n = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9' && i - from < 7) n = n * 10 + (rest[i++] - '0');
    if (i == from) return std::nullopt;
    return n;
  };
  while (true) {
    const auto first = number();
    if (!first) return {};
    int last = *first;
    if (i < rest.size() && rest[i] == '-') {
      ++i;
      const auto end = number();
      if (!end || *end < *first || *end - *first > 100000) return {};
      last = *end;
    }
    for (int t = *first; t <= last; ++t) tasks.push_back(t);
    if (i < rest.size() && rest[i] == ',') {
      ++i;
      continue;
    }
    if (i < rest.size() && rest[i] == ':') return tasks;
    return {};
  }
}

LauncherLog parseLauncherLog(std::string_view text) {
  LauncherLog log;
  std::vector<std::string_view> own;  // lines without a rank prefix
  for (std::string_view l : splitLines(text)) {
    if (!splitRankPrefix(l)) own.push_back(l);
  }
  for (auto it = own.rbegin(); it != own.rend() && log.last_line.empty(); ++it) log.last_line = std::string(trim(*it));
  // The ChildFailedError block and pid lines.
  bool in_root = false;
  RayReport ray_report = RayReport::kNone;
  LauncherFailure* cur = nullptr;
  for (size_t li = 0; li < own.size(); ++li) {
    const std::string_view l = own[li];
    const std::string_view t = trim(l);
    if (startsWith(t, "Root Cause (first observed failure):")) {
      in_root = true;
      continue;
    }
    if (startsWith(t, "Failures:")) {
      in_root = false;
      continue;
    }
    // "[N]:" heads an entry. N is the entry's index in the failure map, not a
    // rank (1.13 and 2.x alike): 2.x lists the failed rank first and the peers
    // it SIGTERMed after it, so its root cause reads "[0]:" and "rank : 1".
    if (t.size() >= 4 && t.front() == '[' && t.back() == ':' && t[t.size() - 2] == ']') {
      if (auto r = leadingInt(t.substr(1))) {
        log.failures.push_back(LauncherFailure{});
        cur = &log.failures.back();
        cur->rank = *r;  // until the "rank :" line says; a truncated entry names no blamed rank
        cur->root_cause_block = in_root;
        continue;
      }
    }
    if (cur && startsWith(t, "rank ")) {
      if (auto lr = intAfter(t, "local_rank: ")) cur->local_rank = lr;
      if (auto r = intAfter(t, ": ")) cur->rank = *r;
      if (cur->root_cause_block && !claimed(log)) log.claimed_root_rank = cur->rank;
      continue;
    }
    if (cur && startsWith(t, "traceback ")) {
      // "Signal 15 (SIGTERM) received by PID 6295", the error file's first
      // traceback line, or 1.13's "To enable traceback see: ...".
      const size_t c = t.find(": ");
      if (c != std::string_view::npos) cur->traceback = std::string(t.substr(c + 2));
      if (trim(cur->traceback) == "Traceback (most recent call last):") {
        // The error file's py_callstack, every line after the first indented
        // by two more spaces, up to the next section rule or entry.
        std::vector<std::string> tb{cur->traceback};
        while (li + 1 < own.size()) {
          const std::string_view n = own[li + 1];
          const std::string_view nt = trim(n);
          if (startsWith(nt, "-----") || startsWith(nt, "=====") ||
              (nt.size() >= 4 && nt.front() == '[' && nt.back() == ':' && leadingInt(nt.substr(1)))) {
            break;
          }
          tb.emplace_back(startsWith(n, "  ") ? n.substr(2) : n);
          ++li;
        }
        std::vector<std::string_view> views(tb.begin(), tb.end());
        for (PyChain& ch : parsePythonTracebacks(views)) {
          if (!ch.original().type.empty()) cur->chain = std::move(ch);
        }
      }
      continue;
    }
    if (cur && startsWith(t, "exitcode ")) {
      if (auto c = intAfter(t, ": ")) {
        // torchelastic reports a signal as a negative exit code.
        if (*c < 0) cur->signal = signalName(-*c);
        else cur->exit_code = c;
      }
      cur->pid = intAfter(t, "(pid: ");
      continue;
    }
    if (cur && startsWith(t, "time ")) {
      const size_t c = t.find(": ");
      if (c != std::string_view::npos) cur->time = std::string(t.substr(c + 2));
      continue;
    }
    if (cur && startsWith(t, "error_file")) {
      const size_t c = t.find(": ");
      if (c != std::string_view::npos && t.substr(c + 2) != "<N/A>") cur->error_file = std::string(t.substr(c + 2));
      continue;
    }
    if (startsWith(t, "=====")) cur = nullptr;
    // srun's own account, first failure first: "srun: error: n2: task 2:
    // Exited with exit code 1", then the tasks it ended ("tasks 0-1: ...").
    // Tasks of one node that ended at once share a line ("tasks 2-3:"): a
    // first line of several names them all and singles out none.
    if (const auto tasks = srunFailedTasks(t); !tasks.empty()) {
      const bool first = log.srun_failed_tasks.empty();
      log.srun_failed_tasks.insert(log.srun_failed_tasks.end(), tasks.begin(), tasks.end());
      if (first && !claimed(log)) {
        if (tasks.size() == 1) {
          log.claimed_root_rank = tasks.front();
        } else {
          log.claimed_root_ranks = tasks;
        }
      }
    }
    // Lightning's child-process observer (subprocess_script.py), polling
    // every 5 s: "[rank: 2] Child process with PID 123 terminated with code 1.
    // Forcefully terminating all other processes to avoid zombies"; it then
    // SIGKILLs the other children and rank 0.
    if (contains(t, "Child process with PID ") && contains(t, " terminated with code ")) {
      LauncherLog::PidExit pe;
      if (auto pid = intAfter(t, "Child process with PID ")) pe.pid = *pid;
      pe.exit_code = intAfter(t, " terminated with code ");
      log.failed_pids.push_back(pe);
      if (pe.pid && !log.observer_killed_all_but) log.observer_killed_all_but = pe.pid;
      if (auto r = intAfter(t, "[rank: "); r && !claimed(log)) log.claimed_root_rank = r;
    }
    readDeepSpeedLine(t, log);
    readRayLine(t, ray_report, log);
    if (contains(t, "failed (exitcode: ")) {
      LauncherLog::PidExit pe;
      pe.exit_code = intAfter(t, "failed (exitcode: ");
      pe.local_rank = intAfter(t, "local_rank: ");
      if (auto pid = intAfter(t, "(pid: ")) pe.pid = *pid;
      log.failed_pids.push_back(pe);
    }
    // The signal named last on the line: "SIGTERM", "SIGKILL" (torch 1.13 prints "Signals.SIGTERM").
    const auto sentSignal = [&](std::string_view after) {
      const size_t at = t.find(after);
      std::string name(at == std::string_view::npos ? std::string_view() : t.substr(at + after.size()));
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
      if (const size_t dot = name.rfind('.'); dot != std::string::npos) name = name.substr(dot + 1);
      return name;
    };
    if (contains(t, "Sending process ") && contains(t, "closing signal")) {
      if (auto pid = intAfter(t, "Sending process ")) log.signals_sent[*pid].insert(sentSignal("closing signal "));
    }
    // torch 2.x's spawn: "W1201 ... spawn.py:165] Terminating process 12557 via signal SIGTERM".
    if (contains(t, "Terminating process ") && contains(t, " via signal ")) {
      if (auto pid = intAfter(t, "Terminating process ")) log.signals_sent[*pid].insert(sentSignal(" via signal "));
    }
    // "launch.py:207: FutureWarning: The module torch.distributed.launch is deprecated".
    if (const size_t w = t.find(": FutureWarning: ");
        w != std::string_view::npos && contains(t, "torch/distributed/launch")) {
      log.warnings.push_back(std::string(t.substr(w + 2)));
    }
    // ProcessExitedException: "process 1 terminated with signal SIGSEGV" / "with exit code 3".
    if (contains(t, "ProcessExitedException") || startsWith(t, "process ")) {
      const size_t p = t.find("process ");
      std::string_view s = t.substr(p + 8);
      if (auto r = leadingInt(s); r && contains(s, "terminated with")) {
        log.spawn_rank = r;
        const size_t sig = s.find("with signal ");
        if (sig != std::string_view::npos) log.spawn_signal = std::string(trim(s.substr(sig + 12)));
        else if (auto c = intAfter(s, "with exit code ")) log.spawn_exit_code = c;
      }
    }
  }
  // Tracebacks: the launcher's own, and a spawn child's nested in ProcessRaisedException.
  std::vector<PyChain> chains = parsePythonTracebacks(own);
  for (size_t i = 0; i < chains.size(); ++i) {
    const PyTraceback& fin = chains[i].final();
    std::optional<int> spawned;
    for (std::string_view l : splitLines(fin.full_message)) {
      if (auto r = spawnProcessIndex(l)) spawned = r;
    }
    if (spawned && i + 1 < chains.size()) {
      log.spawn_rank = spawned;
      log.spawn_chain = chains[i + 1];
      log.wrapper = fin;
      ++i;
      continue;
    }
    if (isLauncherTraceback(fin)) log.wrapper = fin;
    else log.unattributed.push_back(chains[i]);
  }
  if (log.wrapper && !log.wrapper->type.empty() && !isLauncherWrapperType(log.wrapper->type)) {
    log.launcher_crashed = true;
  }
  if (log.ray_failed_ranks.size() == 1 && !claimed(log)) log.claimed_root_rank = *log.ray_failed_ranks.begin();
  // spawn's own report names the process whose failure it re-raised
  // (ProcessRaisedException, ProcessExitedException): its index, the rank.
  if (log.spawn_rank && !claimed(log)) log.claimed_root_rank = log.spawn_rank;
  return log;
}

bool launcherSignalEnded(const LauncherLog& log, int pid, bool exit_known, std::optional<int> exit_code,
                         const std::optional<std::string>& signal) {
  auto sent = log.signals_sent.find(pid);
  if (sent == log.signals_sent.end()) return false;
  if (const auto& code = log.failed_rank_return_code; code && exit_known) {
    const bool the_trigger = *code > 0 ? exit_code == *code && !signal : signal == signalName(-*code);
    if (the_trigger) return false;
  }
  return !signal || sent->second.count(*signal) || sent->second.count("");
}

void readLauncherStdout(std::string_view text, LauncherLog& log) {
  for (std::string_view line : splitLines(text)) readDeepSpeedLine(trim(line), log);
}

}  // namespace faultline::diagnose
