// The teardown ladder: stack dumps, SIGTERM to the whole tree, SIGKILL after
// the grace period, then verify that nothing of the run is left.
#include "harness/supervise/watch_loop.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>

#include "harness/launch/clock.h"
#include "harness/launch/helper_tools.h"
#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/os/sys.h"
#include "harness/probe/fault_spec.h"
#include "harness/supervise/flight_recorder_request.h"
#include "harness/supervise/proc_fs.h"
#include "harness/supervise/terminate.h"

namespace faultline::supervise {
namespace {

// "SIGTERM" for the ladder's first step, "SIGKILL" for its second.
std::string escalationSignal(Escalation e) { return signalName(e == Escalation::kSigkill ? SIGKILL : SIGTERM); }

}  // namespace

void WatchLoop::runUntil(const std::function<bool()>& done, Clock::duration max) {
  const auto deadline = Clock::now() + max;
  // Under the subreaper nothing signals the death of a grandchild, so the wait
  // re-checks every 20 ms; under a cgroup, cgroup.events wakes it.
  const bool poll = containment_.kind() == ContainmentKind::kSubreaper;
  io_.restart();
  while (!done()) {
    const auto now = Clock::now();
    if (now >= deadline) break;
    auto until = deadline;
    if (poll) until = std::min(deadline, now + std::chrono::milliseconds(20));
    io_.run_one_until(until);
    if (io_.stopped()) io_.restart();
  }
}

void WatchLoop::sendSignal(pid_t pid, int sig) {
  if (os::sys().kill(pid, sig) != 0) {
    // Gone already (ESRCH) is no news; anything else (EPERM) is said: the
    // ladder's next step, or the proof, deals with the process.
    if (errno != ESRCH) note("kill(" + std::to_string(pid) + ", " + signalName(sig) + ") failed: " + std::strerror(errno));
    return;
  }
  // A stopped process (SIGSTOP, a freeze) holds SIGTERM pending until it runs
  // again: continue it so that it can end within the grace, as systemd and
  // Slurm do. SIGCONT's default action on a running process is nothing.
  if (sig == SIGTERM) ::kill(pid, SIGCONT);
  std::optional<int> rank;
  if (RankState* r = rankByPid(pid); r && !r->finished) {
    rank = r->rank;
    if (sig == SIGTERM || sig == SIGKILL) r->signalled_by_teardown = true;
    if (sig == SIGKILL) r->sigkilled_by_teardown = true;
  }
  teardown_.signals.push_back({pid, rank, signalName(sig), launch::realtimeNs()});
}

bool WatchLoop::allRanksReaped() const {
  for (const auto& r : ranks_) {
    if (!r->finished) return false;
  }
  return !launcher_ || launcher_finished_;
}

void WatchLoop::addSurvivor(pid_t pid, const std::string& why) {
  for (const auto& s : teardown_.report.survivors) {
    if (s.pid == pid) return;
  }
  std::string cmd = cmdline(pid);
  teardown_.report.survivors.push_back({pid, cmd});
  RankState* r = rankByPid(pid);
  timeline(r ? std::optional<int>(r->rank) : std::nullopt,
           "survivor pid " + std::to_string(pid) + " (" + cmd + "): " + why, TimelineKind::kTeardown);
}

void WatchLoop::requestStackDumps(const std::function<void()>& meanwhile) {
  // Cheap dumps first: SIGUSR1 only where a handler is installed, because its
  // default action would kill the rank and destroy the evidence.
  std::vector<RankState*> usr1;
  for (auto& r : ranks_) {
    if (r->finished || !catchesSignal(r->pid, SIGUSR1)) continue;
    sendSignal(r->pid, SIGUSR1);
    teardown_.stack_dumps.push_back({r->rank, r->pid, "sigusr1", "", true});
    usr1.push_back(r.get());
  }
  meanwhile();  // the ranks write their dumps in the meantime
  if (!usr1.empty()) {
    timeline(std::nullopt, "SIGUSR1 stack-dump request to " + std::to_string(usr1.size()) + " rank(s)", TimelineKind::kDump);
    // The shim's handler is faulthandler's, which writes every thread's stack
    // from the signal handler itself, in a millisecond or so: a rank is done
    // once its stacks file has grown and then stayed the same size for one
    // poll. A rank that never writes (a handler that is not the shim's, a
    // stopped process) costs at most the bound, as before.
    std::map<RankState*, std::uintmax_t> before, last;
    auto size = [this](RankState* r) {
      std::error_code ec;
      const auto n = std::filesystem::file_size(layout_.rankStacks(r->rank), ec);
      return ec ? std::uintmax_t{0} : n;
    };
    for (RankState* r : usr1) before[r] = last[r] = size(r);
    const auto limit = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < limit) {
      runUntil([] { return false; }, std::chrono::milliseconds(2));
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
  const auto recorders = requestFlightRecorderDumps(layout_.flightRecorderDir());
  for (const auto& fr : recorders) {
    int pid = 0;
    for (const auto& r : ranks_) {
      if (r->rank == fr.rank) pid = r->pid;
    }
    teardown_.stack_dumps.push_back({fr.rank, pid, "flight_recorder", fr.dump, false});
  }
  if (!recorders.empty()) {
    timeline(std::nullopt, "Flight Recorder dump request to " + std::to_string(recorders.size()) + " rank(s)",
             TimelineKind::kDump);
    // The shim's thread answers in milliseconds; NCCL's watchdog reads its
    // pipe on its next heartbeat check, about a second apart.
    const auto limit = Clock::now() + std::chrono::milliseconds(1500);
    // A rank that ended meanwhile will not answer.
    auto answered = [&](const FlightRecorderRequest& fr) {
      if (flightRecorderDumpWritten(fr)) return true;
      for (const auto& r : ranks_) {
        if (r->rank == fr.rank && r->finished) return true;
      }
      return false;
    };
    auto all = [&] { return std::all_of(recorders.begin(), recorders.end(), answered); };
    while (Clock::now() < limit && !all()) runUntil([] { return false; }, std::chrono::milliseconds(5));
    for (auto& d : teardown_.stack_dumps) {
      if (d.method != "flight_recorder") continue;
      d.ok = std::any_of(recorders.begin(), recorders.end(),
                         [&](const auto& fr) { return fr.dump == d.path && flightRecorderDumpWritten(fr); });
    }
  }
  // Native stacks only when a rank is stuck (hang, deadline): a plain crash
  // must not wait for them before SIGTERM. eu-stack (elfutils) reads a
  // LibTorch rank in about 0.2-0.5 s; gdb first loads the symbols of every
  // shared library, 2-5 s per LibTorch rank and more with several at once on
  // few cores (it hit its bound in every hang on 2 cores), so it is the
  // fallback where elfutils is missing.
  if (!opts_.gdb_stacks) return;
  if (trigger_.kind != TriggerKind::kHang && trigger_.kind != TriggerKind::kDeadline) return;
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
  for (auto& r : ranks_) {
    if (r->finished || !isAlive(r->pid)) continue;
    // Python ranks get their dump from the SIGUSR1 shim, or from py-spy where
    // the shim is not; a native dump sees only the interpreter.
    const bool python = exeName(r->pid).rfind("python", 0) == 0;
    const bool dumped = std::any_of(usr1.begin(), usr1.end(), [&](RankState* u) { return u == r.get(); });
    if (python && dumped) continue;
    if (python ? !py_spy : !tool) {
      (python ? no_py_spy : no_native).push_back(r->rank);
      continue;
    }
    launch::SpawnSpec spec;
    const std::string pid_text = std::to_string(r->pid);
    const std::string rank_method = python ? "py-spy" : method;
    if (python) {
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
    if (auto made = launch::makeDirs(layout_.rankDir(r->rank)); !made) {
      note(rank_method + " for rank " + std::to_string(r->rank) + ": " + made.error().str());
      continue;
    }
    spec.stdout_path = layout_.rankStacks(r->rank);
    spec.stderr_path = spec.stdout_path;
    launch::Placement helper;  // outside the run's cgroup; dies with the harness
    helper.pdeath_signal = SIGKILL;
    auto pid = launch::spawnProcess(spec, helper);
    if (!pid) {
      note(rank_method + " for rank " + std::to_string(r->rank) + ": " + pid.error().str());
      continue;
    }
    containment_.excludeHelper(*pid);
    teardown_.stack_dumps.push_back({r->rank, r->pid, rank_method, spec.stdout_path, false});
    const size_t idx = teardown_.stack_dumps.size() - 1;
    running[*pid] = idx;
    children_[*pid] = [this, idx, pid = *pid, &running, rank_method](int status) {
      // eu-stack exits 1 when some frames could not be unwound (a thread in
      // a library without unwind tables) but still printed the rest.
      const int limit = rank_method == "eu-stack" ? 1 : 0;
      teardown_.stack_dumps[idx].ok = WIFEXITED(status) && WEXITSTATUS(status) <= limit;
      running.erase(pid);
      containment_.forgetHelper(pid);
    };
  }
  auto noteMissing = [&](const std::vector<int>& ranks, const std::string& why) {
    if (ranks.empty()) return;
    note(std::string("no stack dump of ") + (ranks.size() == 1 ? "rank " : "ranks ") + probe::rankList(ranks) + ": " + why);
  };
  noteMissing(no_native, "neither eu-stack nor gdb is installed (apt-get install elfutils)");
  noteMissing(no_py_spy, "py-spy is not installed (pip install py-spy; ci/deps puts it in /opt/faultline/tools)");
  if (running.empty()) return;
  std::map<std::string, int> by_method;
  for (const auto& [pid, idx] : running) ++by_method[teardown_.stack_dumps[idx].method];
  std::string methods;
  for (const auto& [m, n] : by_method) methods += (methods.empty() ? "" : ", ") + m + " of " + std::to_string(n);
  timeline(std::nullopt, "stack dumps: " + methods + " rank(s)", TimelineKind::kDump);
  reapChildren();  // a dumper that already finished
  // py-spy --native on a few LibTorch ranks at once on a loaded machine took
  // over 5 s: it gets twice the bound.
  const double bound = any_py_spy ? 2 * opts_.gdb_timeout_s : opts_.gdb_timeout_s;
  runUntil([&] { return running.empty(); }, seconds(bound));
  if (!running.empty()) {
    timeline(std::nullopt, std::to_string(running.size()) + " stack dump(s) cut off after " + secondsText(bound) + " s",
             TimelineKind::kDump);
    for (const auto& [pid, idx] : running) ::kill(pid, SIGKILL);
    runUntil([&] { return running.empty(); }, std::chrono::seconds(2));
  }
  // Handlers must not outlive `running`.
  for (const auto& [pid, idx] : running) children_.erase(pid);
}

void WatchLoop::teardown() {
  in_teardown_ = true;
  rank_tracker_->stop();
  allowance_timer_.cancel();
  const auto t0 = Clock::now();
  const bool stack_ended = !triggered_ || trigger_.kind == TriggerKind::kNone ||
                           (stack_launcher_.exitEndsRun() && launcher_finished_);
  // When every process of the run was gone (teardown.duration_ms ends there).
  int64_t gone_ns = 0;
  if (stack_ended && !runEmpty()) {
    // What is already on its way out is not left behind: a launcher's helpers
    // (multiprocessing's resource tracker, say) exit when its pipes close, a
    // few milliseconds after it. Only what is still there after a moment is.
    // Ranks orphaned by a launcher that was itself a rank (Lightning's rank
    // 0) get the grace period to die of their own errors, as they do once
    // their peer is gone (Lightning's exception path takes about a second);
    // one still running after it was left behind.
    const auto allowance = orphaned_.empty()
                               ? std::min<std::chrono::nanoseconds>(seconds(opts_.grace_s), std::chrono::milliseconds(1000))
                               : std::chrono::nanoseconds(seconds(opts_.grace_s));
    runUntil([&] { return runEmpty(); }, allowance);
    if (runEmpty()) gone_ns = launch::realtimeNs();
  }
  auto live = runMembers();
  if (live.empty()) {
    // Already gone: at the last exit seen (the launcher's own, torchrun's
    // after it ended its workers), or now if none was.
    if (!gone_ns) gone_ns = last_exit_ns_ ? std::min(last_exit_ns_, launch::realtimeNs()) : launch::realtimeNs();
    // Nothing to end; still collect the exit statuses of ranks not yet reaped.
    runUntil([&] { return allRanksReaped(); }, std::chrono::seconds(2));
  } else {
    teardown_.started_ns = launch::realtimeNs();
    // What the run's processes hold is noted before any of them is signalled
    // to exit, while the SIGUSR1 dumps are being written.
    auto noteHeld = [&] { leaks_.note(live); };
    if (stack_ended) {
      noteHeld();
      // The stack finished (or its launcher exited) and left these behind.
      for (pid_t p : live) {
        addSurvivor(p, orphaned_.count(p) ? "orphaned: its launcher, itself rank 0, ended and left it running"
                                          : "left running after the stack ended");
      }
    } else {
      requestStackDumps(noteHeld);
    }
    // A launcher that stops its own job gets the SIGTERM first, and a while
    // to pass it on to ranks only it can reach.
    if (stack_launcher_.stopOrder() == launch::StopOrder::kLauncherFirst && launcher_ && !launcher_finished_) {
      sendSignal(launcher_->pid, SIGTERM);
      ::kill(launcher_->pid, SIGCONT);
      teardown_.report.escalation = Escalation::kSigterm;
      timeline(std::nullopt, "SIGTERM to the launcher (pid " + std::to_string(launcher_->pid) + ") first", TimelineKind::kSignal);
      runUntil([&] { return runEmpty() || interrupts_ > 1; }, seconds(stack_launcher_.launcherGraceS()));
    }
    // The ladder (terminate.h) on this loop: its waits keep reaping and
    // reading events, and a second Ctrl-C cuts the grace short.
    Ladder ladder;
    ladder.members = [&] { return runMembers(); };
    ladder.send = [&](pid_t p, int sig) { sendSignal(p, sig); };
    ladder.wait = [&](const std::function<bool()>& done, Clock::duration max) { runUntil(done, max); };
    ladder.cut_grace = [&] { return interrupts_ > 1; };
    ladder.on_survivor = [&](pid_t p) { addSurvivor(p, "still running after the grace period"); };
    ladder.kill_rest = [&] {
      for (auto& r : ranks_) r->sigkilled_by_teardown = r->sigkilled_by_teardown || !r->finished;
      containment_.killAll();
    };
    ladder.on_step = [&](Escalation e, const std::vector<pid_t>& pids) {
      timeline(std::nullopt, escalationSignal(e) + " to " + std::to_string(pids.size()) + " process(es)",
               TimelineKind::kSignal);
    };
    const TerminateResult ended = terminateOrKill(ladder, seconds(opts_.grace_s), std::chrono::seconds(2));
    if (ended.escalation != Escalation::kNone) teardown_.report.escalation = ended.escalation;
    runUntil([&] { return allRanksReaped(); }, std::chrono::seconds(2));
    gone_ns = launch::realtimeNs();
  }
  // Verify.
  reapChildren();
  const size_t leaks_before = teardown_.report.leaks.size();
  settleResidue();
  std::vector<std::string> job_leaks(teardown_.report.leaks.begin() + static_cast<std::ptrdiff_t>(leaks_before),
                                     teardown_.report.leaks.end());
  auto remaining = runMembers();
  for (pid_t p : remaining) addSurvivor(p, "could not be killed");
  // A process reads as gone once its leader has exited; its other threads
  // (Gloo's, a DataLoader's) may take tens of milliseconds more, and its
  // sockets close with the last one: the leak check waits for them.
  if (remaining.empty()) runUntil([&] { return leaks_.notedGone(); }, std::chrono::seconds(2));
  teardown_.report.leaks = leaks_.leaks(remaining);
  if (const int removed = leaks_.removeLeftShm(); removed > 0) {
    timeline(std::nullopt, "removed " + std::to_string(removed) + " /dev/shm file(s) the run left behind",
             TimelineKind::kTeardown);
  }
  teardown_.report.leaks.insert(teardown_.report.leaks.end(), job_leaks.begin(), job_leaks.end());
  for (pid_t p : remaining) teardown_.report.leaks.push_back("process:" + std::to_string(p) + " still running");
  for (auto& left : stack_launcher_.finish(opts_.launch)) teardown_.report.leaks.push_back(std::move(left));
  for (const auto& r : ranks_) {
    if (r->our_child && !r->finished) teardown_.report.leaks.push_back("zombie:" + std::to_string(r->pid));
  }
  teardown_.report.clean = teardown_.report.survivors.empty() && teardown_.report.leaks.empty();
  // From the first failure to every process gone, whoever ended them (a
  // launcher that tore its job down itself took that long too); without a
  // failure, the teardown's own time.
  const bool failure = triggered_ && trigger_.kind != TriggerKind::kNone;
  if (failure) {
    teardown_.report.duration_ms = std::max<int64_t>(0, gone_ns - trigger_.t_ns) / 1000000;
  } else {
    teardown_.report.duration_ms =
        teardown_.started_ns ? std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() : 0;
  }
  const bool signalled = std::any_of(teardown_.signals.begin(), teardown_.signals.end(), [](const SignalSent& s) {
    return s.signal == signalName(SIGTERM) || s.signal == signalName(SIGKILL);
  });
  teardown_.report.by = signalled                                            ? TeardownBy::kFaultline
                        : failure && launcher_record_ && launcher_finished_ ? TeardownBy::kLauncher
                                                                             : TeardownBy::kNone;
  if (teardown_.started_ns) {
    timeline(std::nullopt, std::string("teardown ") + (teardown_.report.clean ? "clean" : "not clean") + " in " +
                               std::to_string(teardown_.report.duration_ms) + " ms",
             TimelineKind::kTeardown);
  }
  for (pid_t p : adopted_) timeline(std::nullopt, "reaped orphan pid " + std::to_string(p), TimelineKind::kTeardown);
}

SupervisedRun WatchLoop::result() const {
  SupervisedRun out;
  auto& rec = out.record;
  rec.start_ns = start_ns_;
  rec.end_ns = launch::realtimeNs();
  rec.launcher = rank_tracker_->startsRanks() ? "builtin" : "external";
  rec.command = opts_.launch.command;
  rec.containment = containmentName(containment_.kind());
  int world = world_size_hint_;
  for (const auto& r : ranks_) {
    SupervisedRank k;
    k.rank = r->rank;
    k.pid = r->pid;
    k.start_ns = r->start_ns;
    k.exit_ns = r->exit_ns;
    if (r->exit_known) {
      k.exit_code = r->outcome.exitCode();
      if (auto s = r->outcome.signal()) k.signal = signalName(*s);
    }
    // A rank that died of a SIGKILL the teardown never sent (a scripted
    // kill, the OOM killer) in the moment between its SIGTERM and its exit
    // ended on its own: reaping order is no evidence.
    const bool foreign_kill = r->outcome.signal() == SIGKILL && !r->sigkilled_by_teardown;
    k.killed_by_teardown = r->signalled_by_teardown && r->finished && !foreign_kill;
    k.node = r->node;
    rec.ranks.push_back(k);
    world = std::max(world, r->rank + 1);
  }
  std::sort(rec.ranks.begin(), rec.ranks.end(),
            [](const SupervisedRank& a, const SupervisedRank& b) { return a.rank < b.rank || (a.rank == b.rank && a.start_ns < b.start_ns); });
  rec.world_size = world;
  rec.launcher_process = launcher_record_;
  rec.trigger = trigger_;
  if (!triggered_) rec.trigger.t_ns = 0;
  if (trigger_.kind == TriggerKind::kNone && launcher_record_ && rec.trigger.detail.empty()) {
    rec.trigger.detail = "launcher ended";
  }
  rec.teardown = teardown_;
  rec.process_exits = process_exits_;
  out.timeline = timeline_;
  out.notes = notes_;
  out.interrupted = interrupted_;
  return out;
}

}  // namespace faultline::supervise
