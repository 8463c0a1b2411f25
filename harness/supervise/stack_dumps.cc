// The teardown's first step for a stuck run: every rank's stacks, before any
// rank is signalled to end. The shim's own dump (SIGUSR1), torch's Flight
// Recorder, then a native or py-spy dump of a rank still stuck.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>

#include "harness/launch/helper_tools.h"
#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/probe/fault_spec.h"
#include "harness/supervise/flight_recorder_request.h"
#include "harness/supervise/proc_fs.h"
#include "harness/supervise/teardown.h"

namespace faultline::supervise {

void Teardown::requestStackDumps(const Ending& ending, const std::function<void()>& meanwhile) {
  const auto usr1 = requestSigusr1Dumps();
  meanwhile();  // the ranks write their dumps in the meantime
  if (!usr1.empty()) {
    ctx_.host.timeline(std::nullopt, "SIGUSR1 stack-dump request to " + std::to_string(usr1.size()) + " rank(s)",
                       TimelineKind::kDump);
    // The shim's handler is faulthandler's, which writes every thread's stack
    // from the signal handler itself, in a millisecond or so: a rank is done
    // once its stacks file has grown and then stayed the same size for one
    // poll. A rank that never writes (a handler that is not the shim's, a
    // stopped process) costs at most the bound, as before.
    std::map<RankState*, std::uintmax_t> before, last;
    auto size = [this](RankState* r) {
      std::error_code ec;
      const auto n = std::filesystem::file_size(ctx_.layout.rankStacks(r->rank), ec);
      return ec ? std::uintmax_t{0} : n;
    };
    for (RankState* r : usr1) before[r] = last[r] = size(r);
    const auto limit = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < limit) {
      ctx_.host.runUntil([] { return false; }, std::chrono::milliseconds(2));
      bool all = true;
      for (RankState* r : usr1) {
        if (r->finished) continue;
        const auto n = size(r);
        if (n == before[r] || n != last[r]) all = false;
        last[r] = n;
      }
      if (all) break;
    }
  }
  // torch's Flight Recorder through the ranks' dump pipes, once the stacks
  // are written: the shim's thread that answers runs Python, and a stack dump
  // taken meanwhile would show it at work instead of the rank's wait.
  requestFlightRecorder();
  // Native stacks only when a rank is stuck (hang, deadline): a plain crash
  // must not wait for them before SIGTERM.
  if (!ctx_.opts.gdb_stacks || !ending.failure) return;
  if (ending.failure->kind != TriggerKind::kHang && ending.failure->kind != TriggerKind::kDeadline) return;
  requestNativeDumps(usr1, ending.stuck_on_exit);
}

std::vector<RankState*> Teardown::requestSigusr1Dumps() {
  // Cheap dumps first: SIGUSR1 only where a handler is installed, because its
  // default action would kill the rank and destroy the evidence.
  std::vector<RankState*> usr1;
  for (const auto& r : ctx_.ranks) {
    if (r->finished || !catchesSignal(r->pid, SIGUSR1)) continue;
    sendSignal(r->pid, SIGUSR1);
    record_.stack_dumps.push_back({r->rank, r->pid, "sigusr1", "", true});
    usr1.push_back(r.get());
  }
  return usr1;
}

void Teardown::requestFlightRecorder() {
  const auto recorders = requestFlightRecorderDumps(ctx_.layout.flightRecorderDir());
  for (const auto& fr : recorders) {
    int pid = 0;
    for (const auto& r : ctx_.ranks) {
      if (r->rank == fr.rank) pid = r->pid;
    }
    record_.stack_dumps.push_back({fr.rank, pid, "flight_recorder", fr.dump, false});
  }
  if (recorders.empty()) return;
  ctx_.host.timeline(std::nullopt, "Flight Recorder dump request to " + std::to_string(recorders.size()) + " rank(s)",
                     TimelineKind::kDump);
  // The shim's thread answers in milliseconds; NCCL's watchdog reads its
  // pipe on its next heartbeat check, about a second apart.
  const auto limit = Clock::now() + std::chrono::milliseconds(1500);
  // A rank that ended meanwhile will not answer.
  auto answered = [&](const FlightRecorderRequest& fr) {
    if (flightRecorderDumpWritten(fr)) return true;
    return std::any_of(ctx_.ranks.begin(), ctx_.ranks.end(), [&](const auto& r) { return r->rank == fr.rank && r->finished; });
  };
  auto all = [&] { return std::all_of(recorders.begin(), recorders.end(), answered); };
  while (Clock::now() < limit && !all()) ctx_.host.runUntil([] { return false; }, std::chrono::milliseconds(5));
  for (auto& d : record_.stack_dumps) {
    if (d.method != "flight_recorder") continue;
    d.ok = std::any_of(recorders.begin(), recorders.end(),
                       [&](const auto& fr) { return fr.dump == d.path && flightRecorderDumpWritten(fr); });
  }
}

void Teardown::requestNativeDumps(const std::vector<RankState*>& dumped_by_usr1, const std::vector<int>& stuck_on_exit) {
  Host& host = ctx_.host;
  // eu-stack (elfutils) reads a LibTorch rank in about 0.2-0.5 s; gdb first
  // loads the symbols of every shared library, 2-5 s per LibTorch rank and
  // more with several at once on few cores (it hit its bound in every hang on
  // 2 cores), so it is the fallback where elfutils is missing.
  const auto env = launch::currentEnvironment();
  std::string method = "eu-stack";
  auto tool = launch::findHelperTool("eu-stack", env);
  if (!tool) {
    method = "gdb";
    tool = launch::findHelperTool("gdb", env);
  }
  // Python ranks the shim is not in: py-spy reads their Python stacks (and the
  // native frames under them, c10d's waits among them) from outside.
  const auto py_spy = launch::findHelperTool("py-spy", env);
  std::map<pid_t, size_t> running;  // dumper pid -> index in stack_dumps
  bool any_py_spy = false;
  // Said, not skipped in silence: the diagnosis of a hang without events
  // rests on these dumps, and the report must show why there are none.
  std::vector<int> no_py_spy, no_native;
  for (const auto& r : ctx_.ranks) {
    if (r->finished || !isAlive(r->pid)) continue;
    // Python ranks get their dump from the SIGUSR1 shim, or from py-spy where
    // the shim is not; a native dump sees only the interpreter.
    const bool python = exeName(r->pid).rfind("python", 0) == 0;
    const bool dumped = std::find(dumped_by_usr1.begin(), dumped_by_usr1.end(), r.get()) != dumped_by_usr1.end();
    // A Python rank stuck on its way out waits in C++ (a destructor at
    // exit): the shim's dump shows the line, its native threads the wait.
    const bool native_too =
        python && dumped && std::find(stuck_on_exit.begin(), stuck_on_exit.end(), r->rank) != stuck_on_exit.end();
    if (python && dumped && !native_too) continue;
    const bool by_py_spy = python && !native_too;
    if (by_py_spy ? !py_spy : !tool) {
      (by_py_spy ? no_py_spy : no_native).push_back(r->rank);
      continue;
    }
    launch::SpawnSpec spec;
    const std::string pid_text = std::to_string(r->pid);
    const std::string rank_method = by_py_spy ? "py-spy" : method;
    if (by_py_spy) {
      // Python frames first (a fraction of a second), then again with
      // --native: the C++ frames under them, where c10d waits (DDP's
      // Reducer), which costs seconds of symbol loading in a LibTorch
      // process. A native dump cut off at the bound leaves the first.
      spec.executable = "/bin/sh";
      spec.argv = {"sh", "-c", "\"$0\" dump --full-filenames --pid \"$1\"; exec \"$0\" dump --native --full-filenames --pid \"$1\"",
                   *py_spy, pid_text};
      any_py_spy = true;
    } else if (method == "eu-stack") {
      spec.executable = *tool;
      spec.argv = {"eu-stack", "-s", "-p", pid_text};  // -s: file:line:col under each frame
    } else {
      spec.executable = *tool;
      spec.argv = {"gdb", "-batch", "-nx", "-p", pid_text, "-ex", "thread apply all bt"};
    }
    spec.env = launch::toEnvStrings(env);
    // Under an external launcher a rank without events has no directory yet.
    if (auto made = launch::makeDirs(ctx_.layout.rankDir(r->rank)); !made) {
      host.note(rank_method + " for rank " + std::to_string(r->rank) + ": " + made.error().str());
      continue;
    }
    spec.stdout_path = native_too ? ctx_.layout.rankNativeStacks(r->rank) : ctx_.layout.rankStacks(r->rank);
    spec.stderr_path = spec.stdout_path;
    launch::Placement helper;  // outside the run's cgroup; dies with the harness
    helper.pdeath_signal = SIGKILL;
    auto pid = launch::spawnProcess(spec, helper);
    if (!pid) {
      host.note(rank_method + " for rank " + std::to_string(r->rank) + ": " + pid.error().str());
      continue;
    }
    ctx_.containment.excludeHelper(*pid);
    record_.stack_dumps.push_back({r->rank, r->pid, rank_method, spec.stdout_path, false});
    const size_t idx = record_.stack_dumps.size() - 1;
    running[*pid] = idx;
    host.watchChild(*pid, [this, idx, pid = *pid, &running, rank_method](int status) {
      // eu-stack exits 1 when some frames could not be unwound (a thread in
      // a library without unwind tables) but still printed the rest.
      const int limit = rank_method == "eu-stack" ? 1 : 0;
      record_.stack_dumps[idx].ok = WIFEXITED(status) && WEXITSTATUS(status) <= limit;
      running.erase(pid);
      ctx_.containment.forgetHelper(pid);
    });
  }
  auto noteMissing = [&](const std::vector<int>& ranks, const std::string& why) {
    if (ranks.empty()) return;
    host.note(std::string("no stack dump of ") + (ranks.size() == 1 ? "rank " : "ranks ") + probe::rankList(ranks) + ": " + why);
  };
  noteMissing(no_native, "neither eu-stack nor gdb is installed (apt-get install elfutils)");
  noteMissing(no_py_spy, "py-spy is not installed (pip install py-spy; ci/deps puts it in /opt/faultline/tools)");
  if (running.empty()) return;
  std::map<std::string, int> by_method;
  for (const auto& [pid, idx] : running) ++by_method[record_.stack_dumps[idx].method];
  std::string methods;
  for (const auto& [m, n] : by_method) methods += (methods.empty() ? "" : ", ") + m + " of " + std::to_string(n);
  host.timeline(std::nullopt, "stack dumps: " + methods + " rank(s)", TimelineKind::kDump);
  host.reapChildren();  // a dumper that already finished
  // py-spy --native on a few LibTorch ranks at once on a loaded machine took
  // over 5 s: it gets twice the bound.
  const double bound = any_py_spy ? 2 * ctx_.opts.gdb_timeout_s : ctx_.opts.gdb_timeout_s;
  host.runUntil([&] { return running.empty(); }, seconds(bound));
  if (!running.empty()) {
    host.timeline(std::nullopt, std::to_string(running.size()) + " stack dump(s) cut off after " + secondsText(bound) + " s",
                  TimelineKind::kDump);
    for (const auto& [pid, idx] : running) ::kill(pid, SIGKILL);
    host.runUntil([&] { return running.empty(); }, std::chrono::seconds(2));
  }
  // Handlers must not outlive `running`.
  for (const auto& [pid, idx] : running) host.forgetChild(pid);
}

}  // namespace faultline::supervise
