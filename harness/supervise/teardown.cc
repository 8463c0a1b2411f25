// The teardown ladder: stack dumps, SIGTERM to the whole tree, SIGKILL after
// the grace period, then verify that nothing of the run is left.
#include "harness/supervise/teardown.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "harness/launch/clock.h"
#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"
#include "harness/supervise/terminate.h"

namespace faultline::supervise {
namespace {

// "SIGTERM" for the ladder's first step, "SIGKILL" for its second.
std::string escalationSignal(Escalation e) { return signalName(e == Escalation::kSigkill ? SIGKILL : SIGTERM); }

}  // namespace

void Teardown::sendSignal(pid_t pid, int sig) {
  if (os::sys().kill(pid, sig) != 0) {
    // Gone already (ESRCH) is no news; anything else (EPERM) is said: the
    // ladder's next step, or the proof, deals with the process.
    if (errno != ESRCH) ctx_.host.note("kill(" + std::to_string(pid) + ", " + signalName(sig) + ") failed: " + std::strerror(errno));
    return;
  }
  // A stopped process (SIGSTOP, a freeze) holds SIGTERM pending until it runs
  // again: continue it so that it can end within the grace, as systemd and
  // Slurm do. SIGCONT's default action on a running process is nothing.
  if (sig == SIGTERM) ::kill(pid, SIGCONT);
  std::optional<int> rank;
  if (RankState* r = ctx_.host.rankByPid(pid); r && !r->finished) {
    rank = r->rank;
    if (sig == SIGTERM || sig == SIGKILL) r->signalled_by_teardown = true;
    if (sig == SIGKILL) r->sigkilled_by_teardown = true;
  }
  record_.signals.push_back({pid, rank, signalName(sig), launch::realtimeNs()});
}

void Teardown::addSurvivor(pid_t pid, const std::string& why) {
  for (const auto& s : record_.report.survivors) {
    if (s.pid == pid) return;
  }
  std::string cmd = cmdline(pid);
  record_.report.survivors.push_back({pid, cmd});
  RankState* r = ctx_.host.rankByPid(pid);
  ctx_.host.timeline(r ? std::optional<int>(r->rank) : std::nullopt,
                     "survivor pid " + std::to_string(pid) + " (" + cmd + "): " + why, TimelineKind::kTeardown);
}

void Teardown::run(const Ending& ending) {
  Host& host = ctx_.host;
  const auto t0 = Clock::now();
  // When every process of the run was gone (teardown.duration_ms ends there).
  int64_t gone_ns = 0;
  if (ending.stack_ended && !host.runMembers().empty()) {
    // What is already on its way out is not left behind: a launcher's helpers
    // (multiprocessing's resource tracker, say) exit when its pipes close, a
    // few milliseconds after it. Only what is still there after a moment is.
    // Ranks orphaned by a launcher that was itself a rank (Lightning's rank
    // 0) get the grace period to die of their own errors, as they do once
    // their peer is gone (Lightning's exception path takes about a second);
    // one still running after it was left behind.
    const auto allowance = !host.anyOrphaned()
                               ? std::min<std::chrono::nanoseconds>(seconds(ctx_.opts.grace_s), std::chrono::milliseconds(1000))
                               : std::chrono::nanoseconds(seconds(ctx_.opts.grace_s));
    host.runUntil([&] { return host.runMembers().empty(); }, allowance);
    if (host.runMembers().empty()) gone_ns = launch::realtimeNs();
  }
  const auto live = host.runMembers();
  if (live.empty()) {
    // Already gone: at the last exit seen (the launcher's own, torchrun's
    // after it ended its workers), or now if none was.
    if (!gone_ns) gone_ns = host.lastExitNs() ? std::min(host.lastExitNs(), launch::realtimeNs()) : launch::realtimeNs();
    // Nothing to end; still collect the exit statuses of ranks not yet reaped.
    host.runUntil([&] { return host.allReaped(); }, std::chrono::seconds(2));
  } else {
    gone_ns = endProcesses(ending, live);
  }
  verify();
  sign(ending, gone_ns, t0);
}

int64_t Teardown::endProcesses(const Ending& ending, const std::vector<pid_t>& live) {
  Host& host = ctx_.host;
  record_.started_ns = launch::realtimeNs();
  // What the run's processes hold is noted before any of them is signalled
  // to exit, while the SIGUSR1 dumps are being written.
  auto noteHeld = [&] { ctx_.leaks.note(live); };
  if (ending.stack_ended) {
    noteHeld();
    // The stack finished (or its launcher exited) and left these behind.
    for (pid_t p : live) {
      addSurvivor(p, host.orphaned(p) ? "orphaned: its launcher, itself rank 0, ended and left it running"
                                      : "left running after the stack ended");
    }
  } else {
    requestStackDumps(ending, noteHeld);
  }
  // A launcher that stops its own job gets the SIGTERM first, and a while
  // to pass it on to ranks only it can reach.
  if (const auto launcher = host.liveLauncher(); launcher && ctx_.launcher.stopOrder() == launch::StopOrder::kLauncherFirst) {
    sendSignal(*launcher, SIGTERM);
    ::kill(*launcher, SIGCONT);
    endStopped(live);
    record_.report.escalation = Escalation::kSigterm;
    host.timeline(std::nullopt, "SIGTERM to the launcher (pid " + std::to_string(*launcher) + ") first", TimelineKind::kSignal);
    host.runUntil([&] { return host.runMembers().empty() || host.interrupts() > 1; }, seconds(ctx_.launcher.launcherGraceS()));
  }
  // The ladder (terminate.h) on the loop: its waits keep reaping and reading
  // events, and a second Ctrl-C cuts the grace short.
  Ladder ladder;
  ladder.members = [&] { return host.runMembers(); };
  ladder.send = [&](pid_t p, int sig) { sendSignal(p, sig); };
  // The grace, and for a launcher whose own processes take long to exit
  // (launcherExitS) more of it once only they are left: its ranks are gone.
  bool in_grace = true;
  ladder.wait = [&](const std::function<bool()>& done, Clock::duration max) {
    host.runUntil(done, max);
    const auto launcher_only = [&] {
      const auto left = host.runMembers();
      return !left.empty() && std::none_of(left.begin(), left.end(), [&](pid_t p) {
        const RankState* r = host.rankByPid(p);
        return r && !r->finished;
      });
    };
    if (in_grace && !done() && host.interrupts() <= 1 && ctx_.launcher.launcherExitS() > 0 && launcher_only()) {
      host.timeline(std::nullopt, "every rank gone; the launcher's own processes get " +
                                      std::to_string(static_cast<int>(ctx_.launcher.launcherExitS())) + " s more to exit",
                    TimelineKind::kTeardown);
      host.runUntil(done, seconds(ctx_.launcher.launcherExitS()));
    }
    in_grace = false;
  };
  ladder.cut_grace = [&] { return host.interrupts() > 1; };
  ladder.on_survivor = [&](pid_t p) { addSurvivor(p, "still running after the grace period"); };
  ladder.kill_rest = [&] {
    for (const auto& r : ctx_.ranks) r->sigkilled_by_teardown = r->sigkilled_by_teardown || !r->finished;
    ctx_.containment.killAll();
  };
  ladder.on_step = [&](Escalation e, const std::vector<pid_t>& pids) {
    host.timeline(std::nullopt, escalationSignal(e) + " to " + std::to_string(pids.size()) + " process(es)", TimelineKind::kSignal);
  };
  const TerminateResult ended = terminateOrKill(ladder, seconds(ctx_.opts.grace_s), std::chrono::seconds(2));
  if (ended.escalation != Escalation::kNone) record_.report.escalation = ended.escalation;
  host.runUntil([&] { return host.allReaped(); }, std::chrono::seconds(2));
  return launch::realtimeNs();
}

// A frozen rank (SIGSTOP: a freeze fault, a debugger) holds the SIGTERM its
// launcher passes on pending until it runs again, and torch's agent waits
// 30 s for it before its own SIGKILL: accelerate's launcher outlived its
// 10-s grace that way under load (yours-freeze). The launcher cannot end
// it, so faultline does, beside the launcher's SIGTERM: SIGTERM, then
// SIGCONT (sendSignal), so that it ends as it resumes. Continued alone it
// would run on first: a frozen rank that finished its step after the
// trigger made the diagnosis blame its peer (slurm).
void Teardown::endStopped(const std::vector<pid_t>& live) {
  int stopped = 0;
  for (pid_t p : live) {
    const auto st = readStat(p);
    if (!st || st->state != 'T') continue;
    // SIGKILL, not SIGTERM and SIGCONT: a continued rank with a SIGTERM
    // handler of its own (a Ray worker, a trainer that checkpoints on
    // preemption) went on training while its launcher stopped, and its
    // peers' exits became the root cause. A killed one runs nothing more.
    sendSignal(p, SIGKILL);
    ++stopped;
  }
  if (stopped > 0) {
    ctx_.host.timeline(std::nullopt, "SIGKILL to " + std::to_string(stopped) +
                                         " stopped process(es), which the launcher's stop cannot reach",
                       TimelineKind::kSignal);
  }
}

void Teardown::verify() {
  Host& host = ctx_.host;
  auto& report = record_.report;
  host.reapChildren();
  const std::vector<std::string> job_leaks = settleResidue();
  const auto remaining = host.runMembers();
  for (pid_t p : remaining) addSurvivor(p, "could not be killed");
  // A process reads as gone once its leader has exited; its other threads
  // (Gloo's, a DataLoader's) may take tens of milliseconds more, and its
  // sockets close with the last one: the leak check waits for them.
  if (remaining.empty()) host.runUntil([&] { return ctx_.leaks.notedGone(); }, std::chrono::seconds(2));
  report.leaks = ctx_.leaks.leaks(remaining);
  if (const int removed = ctx_.leaks.removeLeftShm(); removed > 0) {
    host.timeline(std::nullopt, "removed " + std::to_string(removed) + " /dev/shm file(s) the run left behind",
                  TimelineKind::kTeardown);
  }
  report.leaks.insert(report.leaks.end(), job_leaks.begin(), job_leaks.end());
  for (pid_t p : remaining) report.leaks.push_back("process:" + std::to_string(p) + " still running");
  for (auto& left : ctx_.launcher.finish(ctx_.opts.launch)) report.leaks.push_back(std::move(left));
  for (const auto& r : ctx_.ranks) {
    if (r->our_child && !r->finished) report.leaks.push_back("zombie:" + std::to_string(r->pid));
  }
  report.clean = report.survivors.empty() && report.leaks.empty();
}

std::vector<std::string> Teardown::settleResidue() {
  auto left = ctx_.launcher.residue(ctx_.layout);
  if (left.empty()) return {};
  // A job whose every task ended is still COMPLETING for a moment.
  const auto settle = [&](std::chrono::milliseconds bound) {
    const auto until = Clock::now() + bound;
    while (!left.empty() && Clock::now() < until) {
      ctx_.host.runUntil([] { return false; }, std::chrono::milliseconds(200));
      left = ctx_.launcher.residue(ctx_.layout);
    }
  };
  settle(std::chrono::milliseconds(3000));
  if (left.empty()) return {};
  for (const auto& what : ctx_.launcher.cancelJob(ctx_.layout)) ctx_.host.timeline(std::nullopt, what, TimelineKind::kTeardown);
  settle(std::chrono::milliseconds(static_cast<int64_t>(ctx_.opts.grace_s * 1000) + 10000));
  std::vector<std::string> leaks;
  for (const auto& what : left) {
    leaks.push_back("job:" + what);
    ctx_.host.timeline(std::nullopt, "left in the workload manager: " + what, TimelineKind::kTeardown);
  }
  return leaks;
}

void Teardown::sign(const Ending& ending, int64_t gone_ns, Clock::time_point t0) {
  auto& report = record_.report;
  // From the first failure to every process gone, whoever ended them (a
  // launcher that tore its job down itself took that long too); without a
  // failure, the teardown's own time.
  if (ending.failure) {
    report.duration_ms = std::max<int64_t>(0, gone_ns - ending.failure->t_ns) / 1000000;
  } else {
    report.duration_ms =
        record_.started_ns ? std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() : 0;
  }
  const bool signalled = std::any_of(record_.signals.begin(), record_.signals.end(), [](const SignalSent& s) {
    return s.signal == signalName(SIGTERM) || s.signal == signalName(SIGKILL);
  });
  report.by = signalled                                       ? TeardownBy::kFaultline
              : ending.failure && ctx_.host.launcherEnded() ? TeardownBy::kLauncher
                                                              : TeardownBy::kNone;
  if (record_.started_ns) {
    ctx_.host.timeline(std::nullopt, std::string("teardown ") + (report.clean ? "clean" : "not clean") + " in " +
                                         std::to_string(report.duration_ms) + " ms",
                       TimelineKind::kTeardown);
  }
}

}  // namespace faultline::supervise
