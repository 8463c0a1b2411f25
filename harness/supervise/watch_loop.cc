// Main phase of supervision: start the stack, then react to exits, progress,
// timers and signals until the run must end.
#include "harness/supervise/watch_loop.h"

#include <signal.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "harness/launch/clock.h"
#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {
namespace {

// The rank a directory under OUT/ranks/ is named for ("3"); none for any other name.
std::optional<int> rankDirNumber(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::atoi(name.c_str());
}

std::string outcomeText(const ProcessOutcome& o) {
  if (auto c = o.exitCode()) return "exited with code " + std::to_string(*c);
  if (auto s = o.signal()) return std::string("killed by ") + signalName(*s) + (o.coreDumped() ? " (core dumped)" : "");
  return o.str();
}

}  // namespace

WatchLoop::WatchLoop(const SuperviseOptions& opts, const RunLayout& layout, Containment& containment)
    : opts_(opts),
      stack_launcher_(*opts.launcher),
      layout_(layout),
      containment_(containment),
      signals_(io_),
      inotify_(io_),
      hang_timer_(io_),
      deadline_timer_(io_),
      allowance_timer_(io_),
      startup_timer_(io_),
      fault_timer_(io_),
      adaptive_timer_(io_),
      attempt_timer_(io_),
      faults_(opts.outside_faults),
      node_faults_(io_, layout, opts.launch.run_id, faults_,
                   {[this](std::optional<int> rank, std::string what, TimelineKind kind) { timeline(rank, std::move(what), kind); },
                    [this](std::string what) { note(std::move(what)); }, [this] { return in_teardown_ || stop_main_; },
                    [this] { return launcher_ ? std::optional<pid_t>(launcher_->pid) : std::nullopt; }}),
      file_poll_timer_(io_),
      rank_tracker_(RankTracker::forLauncher(*opts.launcher, {io_, containment, layout, opts.launch.run_id,
                                                              opts.allow_proc_connector, *this})),
      teardown_({opts, *opts.launcher, layout, containment, ranks_, leaks_, *this}) {
  // SIGCHLD is handled before the first spawn, so no exit can be missed.
  signals_.add(SIGCHLD);
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  // A handler never runs for a blocked signal, and a parent (a suite, a CI
  // runner) may hand us a mask with SIGCHLD blocked: exits would go unseen.
  sigset_t watched;
  sigemptyset(&watched);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM}) sigaddset(&watched, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &watched, nullptr);
  armSignals();
  // A guardian that dies early is reaped like any child.
  if (containment_.guardianPid() > 0) {
    children_[containment_.guardianPid()] = [this](int) { note("guardian exited before the run ended"); };
  }
}

WatchLoop::~WatchLoop() {
  boost::system::error_code ec;
  signals_.cancel(ec);
  signals_.clear(ec);
}

void WatchLoop::timeline(std::optional<int> rank, std::string what, TimelineKind kind) {
  const double t_ms = std::chrono::duration<double, std::milli>(Clock::now() - start_mono_).count();
  timeline_.push_back({t_ms, rank, std::move(what), kind});
}

Result<void> WatchLoop::start() {
  start_ns_ = launch::realtimeNs();
  start_mono_ = Clock::now();
  last_event_progress_ = last_output_progress_ = start_mono_;
  armInotify();
  const auto placement = containment_.placement();
  // Everything the ranks and the launcher write is watched before they start.
  const int known = stack_launcher_.ranksKnownUpFront(opts_.launch);
  if (auto r = launch::createRunDirs(layout_, known); !r) return r;
  for (int rank = 0; rank < known; ++rank) addWatch(layout_.rankDir(rank), WatchKind::kRankDir, rank);
  if (rank_tracker_->findsRanks()) addWatch(layout_.ranksDir(), WatchKind::kRanksRoot, -1);
  const launch::LauncherLog own_log = stack_launcher_.ownLog(opts_.launch, layout_);
  if (!own_log.stdout_path.empty()) {
    const std::string dir = std::filesystem::path(own_log.stdout_path).parent_path().string();
    if (auto r = launch::makeDirs(dir); !r) return r;
    addWatch(dir, WatchKind::kLauncherDir, -1);
  }
  rank_tracker_->open();
  auto launched = stack_launcher_.start(attemptOptions(0), layout_, placement);
  if (!launched) return tl::unexpected(launched.error());
  const std::vector<pid_t> started = addStartedRanks(*launched, 0);
  world_size_hint_ = known;
  if (launched->launcher) {
    launcher_ = *launched->launcher;
    launcher_record_ = LauncherProcess{launcher_->pid, std::nullopt, std::nullopt, std::nullopt};
    children_[launcher_->pid] = [this](int status) {
      onLauncherExit(ProcessOutcome::fromWaitStatus(status), launch::realtimeNs());
    };
    timeline(std::nullopt, "launcher started (pid " + std::to_string(launcher_->pid) + ")", TimelineKind::kStart);
  }
  if (launched->error) {
    note(launched->error->str());
    setTrigger(TriggerKind::kNone, std::nullopt, "launch failed: " + launched->error->str());
    stop_main_ = true;
  }
  rank_tracker_->launched(started, launcher_ ? std::optional<pid_t>(launcher_->pid) : std::nullopt);
  if (!containment_.eventsPath().empty()) addWatch(containment_.eventsPath(), WatchKind::kCgroupEvents, -1);
  if (opts_.deadline_s > 0) {
    deadline_timer_.expires_after(seconds(opts_.deadline_s));
    deadline_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      setTrigger(TriggerKind::kDeadline, std::nullopt,
                 "deadline of " + secondsText(opts_.deadline_s) + " s reached");
      stop_main_ = true;
    });
  }
  if (opts_.hang_timeout_s > 0) armHangTimer(start_mono_ + seconds(opts_.hang_timeout_s));
  if (opts_.adaptive.factor > 0) armAdaptiveTimer();
  armFaultTimer();
  node_faults_.watchRendezvous();
  // Exits that happened during the spawn loop raised SIGCHLD already; reap them now.
  reapChildren();
  return {};
}

void WatchLoop::runMainPhase() {
  io_.restart();
  while (!stop_main_) {
    if (io_.run_one() == 0) break;  // no work left: cannot happen while signals_ waits
  }
  hang_timer_.cancel();
  adaptive_timer_.cancel();
  node_faults_.stop();
  deadline_timer_.cancel();
  allowance_timer_.cancel();
  startup_timer_.cancel();
  attempt_timer_.cancel();
  noteStraggler();
}

// --- signals and children --------------------------------------------------

void WatchLoop::armSignals() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    onSignal(sig);
    armSignals();
  });
}

void WatchLoop::onSignal(int sig) {
  if (sig == SIGCHLD) {
    reapChildren();
    return;
  }
  ++interrupts_;
  if (interrupts_ == 1) {
    interrupted_ = true;
    timeline(std::nullopt, std::string("harness received ") + signalName(sig), TimelineKind::kSignal);
    setTrigger(TriggerKind::kInterrupt, std::nullopt, std::string("harness received ") + signalName(sig));
    stop_main_ = true;
  } else {
    timeline(std::nullopt, std::string("harness received ") + signalName(sig) + " again: skipping to SIGKILL", TimelineKind::kSignal);
  }
}

void WatchLoop::reapChildren() {
  while (true) {
    int status = 0;
    pid_t pid = os::sys().waitpid(-1, &status, WNOHANG);
    // EINTR is no reason to stop: a child not reaped now would wait for the
    // next SIGCHLD, which may never come.
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) break;
    const int64_t t = launch::realtimeNs();
    if (auto it = children_.find(pid); it != children_.end()) {
      auto handler = std::move(it->second);
      children_.erase(it);
      handler(status);
      continue;
    }
    if (RankState* r = rankByPid(pid)) {
      onRankExit(*r, ProcessOutcome::fromWaitStatus(status), t);
      continue;
    }
    // A daemonised grandchild whose parent died was reparented to us (subreaper).
    adopted_.push_back(pid);
  }
}

RankState* WatchLoop::rankByPid(pid_t pid) {
  for (auto& r : ranks_) {
    if (r->pid == pid) return r.get();
  }
  return nullptr;
}

std::vector<pid_t> WatchLoop::runMembers() const {
  std::vector<pid_t> out = rank_tracker_->members();
  // A rank known to be running is one whatever /proc could list: a harness
  // out of descriptors lists no process at all, and would end none.
  for (const auto& r : ranks_) {
    if (!r->finished && std::find(out.begin(), out.end(), r->pid) == out.end() && isAlive(r->pid)) out.push_back(r->pid);
  }
  return out;
}

bool WatchLoop::hasLiveRank(int rank) const {
  return std::any_of(ranks_.begin(), ranks_.end(), [&](const auto& r) { return r->rank == rank && !r->finished; });
}

RankState& WatchLoop::rankFound(int rank, pid_t pid, std::optional<std::string> node) {
  RankState& r = addRank(rank, pid, launch::realtimeNs(), false);
  r.node = std::move(node);
  timeline(rank, "found (pid " + std::to_string(pid) + (r.node ? " on " + *r.node : "") + ")", TimelineKind::kStart);
  return r;
}

void WatchLoop::processEnded(ProcessExit e, const ProcessOutcome& outcome) {
  RankState* r = rankByPid(e.pid);
  if (r && r->our_child) return;  // its waitpid says how it ended
  last_exit_ns_ = std::max(last_exit_ns_, e.t_ns);
  if (r && !r->finished) {
    e.rank = r->rank;
    onRankExit(*r, outcome, e.t_ns);
  }
  if (!launcher_ || e.pid != launcher_->pid) process_exits_.push_back(std::move(e));
}

std::vector<pid_t> WatchLoop::addStartedRanks(const launch::Started& launched, int attempt) {
  std::vector<pid_t> pids;
  for (const auto& p : launched.ranks) {
    addRank(*p.rank, p.pid, p.start_ns, true);
    pids.push_back(p.pid);
    timeline(p.rank,
             "started (pid " + std::to_string(p.pid) + (attempt > 0 ? ", attempt " + std::to_string(attempt) : "") + ")",
             TimelineKind::kStart);
    // A restart's output is in a directory of its own (RunLayout::rankAttemptDir).
    if (attempt > 0) addWatch(layout_.rankAttemptDir(*p.rank, attempt), WatchKind::kRankDir, *p.rank);
  }
  return pids;
}

RankState& WatchLoop::addRank(int rank, pid_t pid, int64_t start_ns, bool our_child) {
  auto r = std::make_unique<RankState>();
  r->rank = rank;
  r->pid = pid;
  r->start_ns = start_ns;
  r->our_child = our_child;
  ranks_.push_back(std::move(r));
  return *ranks_.back();
}

// Past start-up: a process group, a step or a collective in its events; for
// a rank that writes no events (uninstrumented), any output.
bool WatchLoop::pastStartup(const RankState& r) {
  return r.past_startup_event || (!r.wrote_events && r.shown_life);
}

// A rank that failed within moments of its start, before getting past its
// start-up, while another rank has not got past its own either: the others
// are most likely on their way to the same failure (a missing script, a bad
// argument, an import error). The shim's own first lines are no progress:
// every rank writes them before the script runs.
bool WatchLoop::failedAtStartup(const RankState& r, int64_t t_ns) const {
  constexpr int64_t kStartupWindowNs = 5'000'000'000;
  if (t_ns - r.start_ns > kStartupWindowNs || r.past_startup_event) return false;
  for (const auto& k : ranks_) {
    if (k.get() != &r && !k->finished && !pastStartup(*k)) return true;
  }
  return false;
}

void WatchLoop::onRankExit(RankState& r, std::optional<ProcessOutcome> outcome, int64_t t_ns) {
  if (r.finished) return;
  r.finished = true;
  r.exit_ns = t_ns;
  last_exit_ns_ = std::max(last_exit_ns_, t_ns);
  if (outcome) {
    r.outcome = *outcome;
    r.exit_known = true;
  }
  if (r.pidfd) {
    boost::system::error_code ec;
    r.pidfd->close(ec);
    r.pidfd.reset();
  }
  progress(true);
  timeline(r.rank, r.exit_known ? outcomeText(r.outcome) : "exited (status collected by its launcher)", TimelineKind::kExit);
  // Read what the rank wrote last, so the tracker is current before any verdict.
  readEvents(r.rank);
  const bool failed = r.exit_known && !r.outcome.success() && !r.work_done;
  if (r.work_done && !r.outcome.success()) timeline(r.rank, "its work was done (work_end): ended by its launcher, no failure");
  if (failed && !in_teardown_ && restartsRanks()) {
    onFailureWhileRestarting(r, t_ns);
  } else if (failed && !triggered_ && !in_teardown_) {
    setTrigger(TriggerKind::kRankFailure, r.rank, "rank " + std::to_string(r.rank) + " " + outcomeText(r.outcome));
    trigger_.t_ns = t_ns;
    if (stack_launcher_.onRankFailure() == launch::OnRankFailure::kSupervisorStops) {
      if (failedAtStartup(r, t_ns)) {
        // A start-up failure (a missing script, a bad argument, an import
        // error) is usually every rank's: stopping the others before they
        // got as far would hide that. They get a moment to fail the same
        // way; the run stops as soon as every rank has ended.
        // Only those still busy starting (importing, reading) are on their
        // way there: once every other rank is past its start-up or idle, the
        // wait ends (onStartupPoll).
        timeline(r.rank, "rank " + std::to_string(r.rank) + " failed at start-up; the other ranks get up to " +
                             secondsText(kStartupGraceS) + " s to get as far before the teardown, while they are busy starting");
        allowance_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kStartupGraceS)));
        allowance_timer_.async_wait([this](const boost::system::error_code& ec) {
          if (!ec) stop_main_ = true;
        });
        startup_activity_.reset();
        onStartupPoll();
      } else {
        stop_main_ = true;
      }
    } else if (opts_.max_restarts > 0) {
      timeline(std::nullopt, "the launcher may restart the ranks (max_restarts " + std::to_string(opts_.max_restarts) +
                                 "): the run goes on until it ends");
    } else {
      // The external launcher is the stack under test: give it time to end its job itself.
      allowance_timer_.expires_after(seconds(opts_.launcher_allowance_s));
      allowance_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (ec) return;
        timeline(std::nullopt, "launcher did not end the job within " + secondsText(opts_.launcher_allowance_s) +
                                   " s of the first failure");
        stop_main_ = true;
      });
    }
  }
  if (!stack_launcher_.exitEndsRun()) {
    bool all = true;
    for (const auto& k : ranks_) all = all && k->finished;
    if (all && attempt_ending_ && !stop_main_ && !in_teardown_) {
      startNextAttempt();
    } else if (all) {
      stop_main_ = true;
    }
  }
}

// --- restarts of faultline's own launcher ---------------------------------------

bool WatchLoop::restartsRanks() const {
  return opts_.max_restarts > 0 && stack_launcher_.onRankFailure() == launch::OnRankFailure::kSupervisorStops;
}

launch::LaunchOptions WatchLoop::attemptOptions(int attempt) const {
  launch::LaunchOptions o = opts_.launch;
  o.attempt = attempt;
  o.max_restarts = opts_.max_restarts;
  // A run the launcher may restart, whichever launcher: every step's
  // parameter fingerprint, so that a restart's starting parameters name the
  // step it resumed from (recovery.cc).
  if (opts_.max_restarts > 0) o.env["FAULTLINE_FINGERPRINT_EVERY_STEP"] = "1";
  return o;
}

// A rank of the running attempt failed: the first failure is the run's
// trigger (its root cause), whichever attempt later ones are of. With a
// restart left the attempt ends and the next starts; without, the run ends.
void WatchLoop::onFailureWhileRestarting(const RankState& r, int64_t t_ns) {
  if (!triggered_) {
    setTrigger(TriggerKind::kRankFailure, r.rank, "rank " + std::to_string(r.rank) + " " + outcomeText(r.outcome));
    trigger_.t_ns = t_ns;
  }
  if (attempt_ending_ || stop_main_) return;  // a peer of a failure already ending its attempt
  if (restarts_ >= opts_.max_restarts) {
    timeline(r.rank, "no restart left (max_restarts " + std::to_string(opts_.max_restarts) + "): the run ends");
    stop_main_ = true;
    return;
  }
  endAttempt();
}

// As torchelastic's agent stops its workers for a restart: SIGTERM to every
// live rank, SIGKILL to those left after the grace. The ranks' own children
// (DataLoader workers) go with their parent, as under torchrun.
void WatchLoop::endAttempt() {
  attempt_ending_ = true;
  std::vector<pid_t> live;
  for (const auto& k : ranks_) {
    if (!k->finished) live.push_back(k->pid);
  }
  timeline(std::nullopt, "faultline's launcher ends attempt " + std::to_string(restarts_) + " for a restart (" +
                             std::to_string(restarts_ + 1) + " of " + std::to_string(opts_.max_restarts) + ")" +
                             (live.empty() ? std::string() : ": SIGTERM to " + std::to_string(live.size()) + " live rank(s)"));
  for (pid_t p : live) {
    os::sys().kill(p, SIGTERM);
    ::kill(p, SIGCONT);  // a stopped rank holds SIGTERM pending until it runs again
  }
  if (live.empty()) {
    startNextAttempt();
    return;
  }
  attempt_timer_.expires_after(seconds(opts_.grace_s));
  attempt_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !attempt_ending_) return;
    for (const auto& k : ranks_) {
      if (k->finished) continue;
      timeline(k->rank, "still running " + secondsText(opts_.grace_s) + " s after SIGTERM: SIGKILL before the restart");
      os::sys().kill(k->pid, SIGKILL);
    }
  });
}

void WatchLoop::startNextAttempt() {
  attempt_ending_ = false;
  attempt_timer_.cancel();
  ++restarts_;
  timeline(std::nullopt, "faultline's launcher restarts the ranks: attempt " + std::to_string(restarts_) +
                             " (TORCHELASTIC_RESTART_COUNT=" + std::to_string(restarts_) + ")",
           TimelineKind::kStart);
  const launch::LaunchOptions next = attemptOptions(restarts_);
  auto launched = stack_launcher_.start(next, layout_, containment_.placement());
  if (!launched) {
    note("restart " + std::to_string(restarts_) + " failed to start: " + launched.error().str());
    stop_main_ = true;
    return;
  }
  rank_tracker_->launched(addStartedRanks(*launched, restarts_), std::nullopt);
  if (launched->error) {
    note("restart " + std::to_string(restarts_) + ": " + launched->error->str());
    stop_main_ = true;
  }
  // Exits during the spawn raised SIGCHLD already: reaped once this handler is done.
  asio::post(io_, [this] { reapChildren(); });
}

void WatchLoop::onLauncherExit(ProcessOutcome outcome, int64_t t_ns) {
  launcher_finished_ = true;
  last_exit_ns_ = std::max(last_exit_ns_, t_ns);
  if (launcher_record_) {
    launcher_record_->exit_code = outcome.exitCode();
    if (auto s = outcome.signal()) launcher_record_->signal = signalName(*s);
    launcher_record_->exit_ns = t_ns;
  }
  progress(true);
  timeline(std::nullopt, "launcher " + outcomeText(outcome), TimelineKind::kExit);
  // A launcher that was a rank and ended abnormally (killed, or exited
  // non-zero) without ending the ranks it started orphaned them: noted now,
  // before they die of their own errors a moment later.
  if (launcher_ && rankByPid(launcher_->pid) && !in_teardown_ && (outcome.signal() || outcome.exitCode().value_or(0) != 0)) {
    for (auto& r : ranks_) {
      if (r->pid != launcher_->pid && !r->finished && !doomed(r->pid)) orphaned_.insert(r->pid);
    }
  }
  // Ranks the launcher reaped before we saw them end; the launcher itself
  // where it was a rank (LauncherRankZero).
  for (auto& r : ranks_) {
    if (r->finished || isAlive(r->pid)) continue;
    onRankExit(*r, launcher_ && r->pid == launcher_->pid ? std::optional<ProcessOutcome>(outcome) : std::nullopt, t_ns);
  }
  if (!in_teardown_) stop_main_ = true;
}

void WatchLoop::setTrigger(TriggerKind kind, std::optional<int> rank, std::string detail) {
  if (triggered_) {
    // A restarted attempt that hangs: the run's trigger stays its first
    // failure (the root cause); this one ends the run, and is said.
    if (kind == TriggerKind::kHang && restartedAttempt()) {
      timeline(rank, kRestartedAttemptHung + detail, TimelineKind::kTrigger);
      note(kRestartedAttemptHung + detail);
    }
    return;
  }
  triggered_ = true;
  trigger_.kind = kind;
  trigger_.t_ns = launch::realtimeNs();
  trigger_.rank = rank;
  trigger_.detail = std::move(detail);
  if (kind != TriggerKind::kNone) timeline(rank, "first trigger: " + triggerKindName(kind) + ": " + trigger_.detail, TimelineKind::kTrigger);
}

// --- progress ----------------------------------------------------------------

void WatchLoop::progress(bool from_events) {
  const auto now = Clock::now();
  last_output_progress_ = now;
  if (from_events) last_event_progress_ = now;
}

void WatchLoop::armInotify() {
  int fd = os::sys().inotifyInit(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    note(std::string("inotify_init1 failed: ") + std::strerror(errno) + "; the run's files are read every " +
         std::to_string(kFilePollMs) + " ms instead");
    return;
  }
  inotify_.assign(fd);
  inotify_.async_read_some(asio::buffer(inotify_buf_), [this](const boost::system::error_code& ec, size_t n) {
    if (ec) return;
    onInotify(n);
  });
}

void WatchLoop::addWatch(const std::string& path, WatchKind kind, int rank) {
  if (kind == WatchKind::kRankDir) followers_.try_emplace(rank, layout_.rankEvents(rank));
  uint32_t mask = IN_MODIFY;
  if (kind == WatchKind::kRanksRoot) mask = IN_CREATE | IN_ONLYDIR;
  if (kind == WatchKind::kRankDir) mask = IN_MODIFY | IN_CREATE;
  const int wd = inotify_.is_open() ? os::sys().inotifyAddWatch(inotify_.native_handle(), path.c_str(), mask) : -1;
  if (wd >= 0) {
    watches_[wd] = Watch{kind, rank};
  } else {
    if (inotify_.is_open()) {
      note("inotify_add_watch failed on " + path + ": " + std::strerror(errno) + "; read every " +
           std::to_string(kFilePollMs) + " ms instead");
    }
    pollInstead(path, Watch{kind, rank});
  }
  if (kind == WatchKind::kRankDir) readEvents(rank);  // lines written before the watch existed
}

// --- the run's files without inotify ------------------------------------------
//
// inotify refused (inotify_init1 out of descriptors, a watch past
// max_user_watches): the same files are read on a timer instead, so that no
// event, exit or sign of progress is lost; only its latency grows.

void WatchLoop::pollInstead(const std::string& path, Watch w) {
  const bool first = polled_.empty();
  polled_[path] = PolledPath{w, {}};
  if (first) armFilePoll();
}

void WatchLoop::armFilePoll() {
  file_poll_timer_.expires_after(std::chrono::milliseconds(kFilePollMs));
  file_poll_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    onFilePoll();
    armFilePoll();
  });
}

void WatchLoop::onFilePoll() {
  // A file that grew since the last poll (stdout, stderr, a launcher's log).
  auto grew = [](PolledPath& p, const std::string& file) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(file, ec);
    if (ec) return false;
    auto& last = p.sizes[file];
    const bool more = n > last;
    last = n;
    return more;
  };
  std::vector<std::pair<std::string, int>> new_dirs;
  for (auto& [path, p] : polled_) {
    switch (p.watch.kind) {
      case WatchKind::kRankDir:
        readEvents(p.watch.rank);
        for (const char* stream : {"stdout", "stderr"}) {
          if (grew(p, path + "/" + stream)) {
            outputSeen(p.watch.rank, stream);
            progress(false);
          }
        }
        break;
      case WatchKind::kRanksRoot: {
        std::error_code ec;
        for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
          const auto rank = rankDirNumber(entry.path().filename().string());
          if (rank && !followers_.count(*rank)) new_dirs.emplace_back(entry.path().string(), *rank);
        }
        break;
      }
      case WatchKind::kLauncherDir: {
        std::error_code ec;
        bool any = false;
        for (const auto& entry : std::filesystem::directory_iterator(path, ec)) any = grew(p, entry.path().string()) || any;
        if (any) progress(false);
        break;
      }
      case WatchKind::kCgroupEvents:
        break;  // this timer's wake-ups are what makes the teardown's waits re-check
    }
  }
  for (const auto& [path, rank] : new_dirs) addWatch(path, WatchKind::kRankDir, rank);
}

void WatchLoop::onInotify(size_t bytes) {
  size_t off = 0;
  std::vector<std::pair<std::string, int>> new_dirs;
  while (off + sizeof(inotify_event) <= bytes) {
    auto* e = reinterpret_cast<const inotify_event*>(inotify_buf_.data() + off);
    off += sizeof(inotify_event) + e->len;
    auto it = watches_.find(e->wd);
    if (it == watches_.end()) continue;
    const Watch w = it->second;
    const std::string name = e->len ? std::string(e->name) : "";
    switch (w.kind) {
      case WatchKind::kRankDir:
        if (name == "events.jsonl") {
          readEvents(w.rank);
        } else if (name == "stdout" || name == "stderr") {
          if (e->mask & IN_MODIFY) outputSeen(w.rank, name);
          progress(false);
        }
        break;
      case WatchKind::kRanksRoot:
        if (const auto rank = rankDirNumber(name); (e->mask & IN_ISDIR) && rank) {
          new_dirs.emplace_back(layout_.ranksDir() + "/" + name, *rank);
        }
        break;
      case WatchKind::kLauncherDir:
        progress(false);
        break;
      case WatchKind::kCgroupEvents:
        break;  // the waits in teardown re-check emptiness after every handler
    }
  }
  for (const auto& [path, rank] : new_dirs) {
    if (!followers_.count(rank)) addWatch(path, WatchKind::kRankDir, rank);
  }
  inotify_.async_read_some(asio::buffer(inotify_buf_), [this](const boost::system::error_code& ec, size_t n) {
    if (ec) return;
    onInotify(n);
  });
}

void WatchLoop::readEvents(int rank) {
  auto it = followers_.find(rank);
  if (it == followers_.end()) return;
  bool any_event = false, progress_event = false;
  size_t n = it->second.readNew([&](std::string_view line) {
    const LineFields f = tracker_.onLine(rank, line);
    // The shim's `start` says which process is this rank (spawn's and
    // Lightning's ranks carry no RANK for the tracker to read).
    if (f.ev == "start" && f.pid && f.rank >= 0) {
      rank_tracker_->reported(f.rank, static_cast<pid_t>(*f.pid));
      if (f.tid) work_threads_[static_cast<pid_t>(*f.pid)] = static_cast<pid_t>(*f.tid);
    }
    // What a rank holds once it trains (its first step done) must be gone
    // when the run is, clean or not: DeepSpeed's CPU all-reduce maps a
    // /dev/shm file per rank that no exit removes.
    if (f.ev == "step_end" && f.pid && f.rank >= 0 && held_noted_.insert(f.rank).second) {
      leaks_.note({static_cast<pid_t>(*f.pid)});
    }
    if (f.ev == "work_end" && f.pid) {
      if (RankState* r = rankByPid(static_cast<pid_t>(*f.pid))) r->work_done = true;
    }
    if (!faults_.empty() &&
        faults_.onEvent(f.rank, f.ev, f.step, f.seq, std::chrono::duration<double>(Clock::now() - start_mono_).count())) {
      armFaultTimer();
    }
    any_event = any_event || !f.ev.empty();
    progress_event = progress_event || (!f.ev.empty() && f.ev != "start" && f.ev != "instrument");
  });
  if (any_event) eventsSeen(rank, progress_event);
  if (n > 0) {
    shownLife(rank);
    progress(true);
    deliverFaults();
  }
}

void WatchLoop::deliverFaults() {
  if (faults_.empty() || in_teardown_ || stop_main_) return;
  std::set<int> running;
  for (const auto& r : ranks_) {
    if (!r->finished) running.insert(r->rank);
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_mono_).count();
  for (const Strike& s : faults_.due(elapsed, running)) {
    if (!s.node.empty()) {
      node_faults_.strike(s);
      continue;
    }
    RankState* target = nullptr;
    for (auto& r : ranks_) {
      if (r->rank == s.rank && !r->finished) target = r.get();
    }
    if (!target) continue;
    // The truth goes into the rank's own events first, beside what the stack does about it.
    nlohmann::json ev = {{"t", launch::realtimeNs()}, {"rank", s.rank}, {"pid", target->pid}, {"ev", "fault"},
                         {"kind", s.kind},   {"step", s.step ? nlohmann::json(*s.step) : nlohmann::json(nullptr)},
                         {"point", s.point}, {"source", "supervisor"}, {"rule", s.rule}};
    const std::string line = ev.dump() + "\n";
    // A time fault may strike a rank the moment it is found, before its shim
    // made its directory.
    (void)launch::makeDirs(layout_.rankDir(s.rank));
    if (int fd = os::sys().open(layout_.rankEvents(s.rank).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        fd >= 0) {
      if (os::sys().write(fd, line.data(), line.size()) < 0) {
        note("fault event for rank " + std::to_string(s.rank) + " not written");
      }
      os::sys().close(fd);
    } else {
      note("fault event for rank " + std::to_string(s.rank) + " not written: " + std::strerror(errno));
    }
    std::vector<pid_t> targets = {target->pid};
    if (s.whole_group) {
      // A freeze: the rank and every process under it (DataLoader workers, its own children).
      for (pid_t p : descendantsOf(target->pid)) targets.push_back(p);
    }
    for (pid_t p : targets) ::kill(p, s.signal);
    timeline(s.rank, "fault " + s.kind + " struck by the supervisor at " + s.point, TimelineKind::kFault);
  }
}

void WatchLoop::armFaultTimer() {
  const auto next = faults_.nextTime();
  if (!next) return;
  fault_timer_.expires_at(start_mono_ + seconds(*next));
  fault_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    deliverFaults();
    // A time fault also strikes ranks that appear later (external launchers).
    const auto again = faults_.nextTime();
    if (again && !stop_main_) {
      fault_timer_.expires_after(std::chrono::milliseconds(100));
      fault_timer_.async_wait([this](const boost::system::error_code& e) {
        if (!e) armFaultTimer();
      });
    }
  });
}

// Ranks the kernel has stopped (SIGSTOP, a freeze, a debugger): they cannot
// make progress whatever they were doing, in a traced collective or not.
std::vector<int> WatchLoop::stoppedRanks() const {
  std::vector<int> out;
  for (const auto& r : ranks_) {
    if (r->finished) continue;
    if (auto st = readStat(r->pid); st && (st->state == 'T' || st->state == 't')) out.push_back(r->rank);
  }
  return out;
}

// The harness creates and truncates the files itself, which inotify reports
// as well: only bytes in them are a sign of life.
void WatchLoop::outputSeen(int rank, const std::string& stream) {
  bool pending = false;
  for (const auto& r : ranks_) pending = pending || (r->rank == rank && !r->finished && !r->shown_life);
  if (!pending) return;
  struct stat st{};
  const std::string path = stream == "stdout" ? layout_.rankStdout(rank) : layout_.rankStderr(rank);
  if (::stat(path.c_str(), &st) == 0 && st.st_size > 0) shownLife(rank);
}

// Events read from the rank's file, once per read: progress_event when one
// of them is past the shim's own first lines ("start", "instrument").
void WatchLoop::eventsSeen(int rank, bool progress_event) {
  for (auto& r : ranks_) {
    if (r->rank != rank) continue;
    r->wrote_events = true;
    r->past_startup_event = r->past_startup_event || progress_event;
  }
}

void WatchLoop::shownLife(int rank) {
  for (auto& r : ranks_) {
    if (r->rank == rank && !r->finished) r->shown_life = true;
  }
}

// A rank that has written nothing yet (no output, no event) while its
// processes keep using CPU is still starting: importing torch or loading
// LibTorch takes seconds, many more on a loaded machine or with many ranks per
// core. That is no hang. Once a rank has shown life the usual rules apply; a
// rank that never does is bounded by --deadline. A silent rank that has
// stopped using CPU (blocked before its first output) is not exempt: the hang
// is then reported one hang timeout later than otherwise. "Using CPU" is at
// least two clock ticks (20 ms) since the last look: a blocked process's
// idle threads (a watchdog waking now and then) can add one.
bool WatchLoop::ranksStillStarting() {
  std::vector<pid_t> silent;
  for (const auto& r : ranks_) {
    if (!r->finished && !r->shown_life) silent.push_back(r->pid);
  }
  if (silent.empty()) return false;
  const auto ticks = treeCpuTicks(silent);
  bool starting = false;
  for (auto& r : ranks_) {
    if (r->finished || r->shown_life) continue;
    auto it = ticks.find(r->pid);
    if (it == ticks.end()) continue;
    if (it->second < r->cpu_ticks + 2) {
      // Blocked while silent: waiting for something, so past its start-up.
      // (A rank under torchrun never shows output of its own here: its
      // output goes to torchrun's logs.)
      if (r->cpu_ticks > 0) r->seen_idle = true;
      r->cpu_ticks = it->second;
      continue;
    }
    r->cpu_ticks = it->second;
    if (r->seen_idle) continue;
    starting = true;
    if (!r->starting_noted) {
      r->starting_noted = true;
      timeline(r->rank, "no output yet, still using CPU: starting, not hung (hang timer extended)");
    }
  }
  return starting;
}

namespace {
// How long the CPU time of a silent, uninstrumented rank must stand still for
// it to be blocked rather than computing: 50 clock ticks, where an idle
// thread's wake-up costs one.
constexpr auto kIdleConfirm = std::chrono::milliseconds(500);
}  // namespace

std::vector<int> WatchLoop::idleRanks() {
  std::vector<pid_t> pids;
  for (const auto& r : ranks_) {
    if (!r->finished) pids.push_back(r->pid);
  }
  const auto now = treeCpuTicks(pids);
  std::vector<int> idle;
  for (const auto& r : ranks_) {
    if (r->finished) continue;
    auto before = idle_probe_->find(r->pid);
    auto after = now.find(r->pid);
    if (before == idle_probe_->end() || after == now.end()) continue;
    if (after->second < before->second + 2) idle.push_back(r->rank);
  }
  std::sort(idle.begin(), idle.end());
  return idle;
}

void WatchLoop::armHangTimer(Clock::time_point at) {
  hang_timer_.expires_at(at);
  hang_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onHangTimer();
  });
}

void WatchLoop::onHangTimer() {
  if (stop_main_) return;
  const auto limit = seconds(opts_.hang_timeout_s);
  const auto now = Clock::now();
  // Instrumented runs progress by events; uninstrumented ones by output or exits.
  const bool instrumented = tracker_.instrumented();
  const auto last = instrumented ? last_event_progress_ : last_output_progress_;
  if (now - last < limit) {
    idle_probe_.reset();
    armHangTimer(last + limit);
    return;
  }
  // A rank still alive, silent, a whole hang timeout after a peer finished
  // cleanly is stuck on its way out (a shutdown hang), collective or not.
  std::vector<int> finished, stuck;
  for (const auto& r : ranks_) {
    if (r->finished && r->exit_known && r->outcome.success()) {
      finished.push_back(r->rank);
    } else if (!r->finished) {
      stuck.push_back(r->rank);
    }
  }
  const bool shutdown_hang = !finished.empty() && !stuck.empty();
  // Every live rank destroyed its process group and has been silent a whole
  // hang timeout, with no peer finished to compare with (torch 1.13's Gloo
  // teardown deadlock can take every rank). A rank may still work after its
  // group is gone (write results, evaluate alone): only a rank whose CPU time
  // stands still is stuck, as for uninstrumented ranks below.
  const bool past_their_groups = instrumented && finished.empty() && !stuck.empty() &&
                                 std::all_of(stuck.begin(), stuck.end(), [&](int r) { return tracker_.destroyed(r); });
  if (const auto stopped = stoppedRanks(); !stopped.empty()) {
    setTrigger(TriggerKind::kHang, stopped.front(),
               "rank(s) " + probe::rankList(stopped) + " stopped (process state T: SIGSTOP, a freeze or a debugger) and no progress for " +
                   std::to_string(static_cast<int64_t>(opts_.hang_timeout_s * 1000)) + " ms");
    stop_main_ = true;
    return;
  }
  // External mode before any rank exists (torchrun still importing torch):
  // the launcher's own silence is no hang of ranks; the deadline bounds it.
  // With a rank whose collectives the shim could not trace, nobody being in
  // a traced one does not mean the ranks are computing: silence is a hang.
  // A restarted attempt whose every live rank sits in init_process_group a
  // whole hang timeout (torch 2.13's Gloo mesh of a restart can wait for a
  // peer address of the attempt before) waits as ranks in a collective do.
  const bool restart_rendezvous = restartedAttempt() && !tracker_.inRendezvous().empty() &&
                                  std::all_of(ranks_.begin(), ranks_.end(), [&](const auto& r) {
                                    return r->finished || tracker_.inRendezvous().count(r->rank) > 0;
                                  });
  // Between the attempts of a launcher that restarts, no rank is alive: what
  // the last ones were in is over, and the new ones are still starting (Ray
  // Train's new worker group takes 10 s and more on a loaded machine). No
  // hang; the deadline bounds it.
  const bool between_attempts = restartedAttempt() && std::all_of(ranks_.begin(), ranks_.end(), [](const auto& r) {
                                  return r->finished;
                                });
  if (ranks_.empty() || between_attempts ||
      (instrumented && !tracker_.anyInCollective() && !tracker_.anyUntraced() && !shutdown_hang && !restart_rendezvous &&
       !past_their_groups)) {
    armHangTimer(now + limit);
    return;
  }
  if (ranksStillStarting()) {
    idle_probe_.reset();
    armHangTimer(now + limit);
    return;
  }
  // Uninstrumented ranks that print nothing may be computing: silence is a
  // hang only where some rank is blocked, its CPU time standing still (a
  // rank waiting in a collective, or the laggard waiting on something else).
  // Every rank busy is no hang: the deadline bounds it.
  std::vector<int> idle;
  if ((!instrumented && !shutdown_hang) || past_their_groups) {
    if (!idle_probe_) {
      std::vector<pid_t> pids;
      for (const auto& r : ranks_) {
        if (!r->finished) pids.push_back(r->pid);
      }
      idle_probe_ = treeCpuTicks(pids);
      armHangTimer(now + kIdleConfirm);
      return;
    }
    idle = idleRanks();
    idle_probe_.reset();
    if (idle.empty()) {
      if (!busy_noted_) {
        busy_noted_ = true;
        timeline(std::nullopt, "no output for " + secondsText(opts_.hang_timeout_s) +
                                   " s, but every rank is using CPU: computing, not hung");
      }
      armHangTimer(now + limit);
      return;
    }
  }
  const std::string secs = std::to_string(static_cast<int64_t>(opts_.hang_timeout_s * 1000)) + " ms";
  auto list = [](const std::vector<int>& ranks) {
    std::string out;
    for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
    return out;
  };
  const std::string blocked =
      "rank(s) " + probe::rankList(idle) + " blocked (no CPU time for " + std::to_string(kIdleConfirm.count()) + " ms)";
  std::string detail = shutdown_hang ? "rank(s) " + list(stuck) + " still running " + secs + " after rank(s) " +
                                           list(finished) + " exited cleanly, with no progress"
                       : past_their_groups
                           ? "rank(s) " + list(stuck) + " destroyed their process group and never exited: no event for " +
                                 secs + ", and " + blocked
                       : instrumented ? "no progress event for " + secs + "; " + tracker_.describe()
                                      : "no output and no exit from any rank for " + secs + "; " + blocked;
  std::optional<int> rank;
  if (shutdown_hang || past_their_groups) stuck_on_exit_ = stuck;
  setTrigger(TriggerKind::kHang, rank, detail);
  stop_main_ = true;
}

// --- adaptive hang detection ---------------------------------------------------

namespace {
// How often the loop looks at the open collectives: the latency added to an
// adaptive call, against 20 wake-ups a second of a loop that reads no file
// until a wait nears its threshold.
constexpr auto kAdaptivePoll = std::chrono::milliseconds(50);
}  // namespace

void WatchLoop::armAdaptiveTimer() {
  adaptive_timer_.expires_after(kAdaptivePoll);
  adaptive_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onAdaptiveTimer();
  });
}

bool WatchLoop::restartedAttempt() const {
  return opts_.max_restarts > 0 && triggered_ && trigger_.kind == TriggerKind::kRankFailure;
}

void WatchLoop::onAdaptiveTimer() {
  // After the first failure only a launcher that restarts has ranks left to watch.
  if (stop_main_ || (triggered_ && !restartedAttempt())) return;
  std::set<int> live;
  for (const auto& r : ranks_) {
    if (!r->finished) live.insert(r->rank);
  }
  const int64_t now = launch::realtimeNs();
  // Every rank of the world must be known: a missing rank could be one not started yet.
  std::optional<LongWait> w;
  if (static_cast<int>(live.size()) >= world_size_hint_) w = longestWait(tracker_, live, now, opts_.adaptive);
  if (straggling_ && (!w || w->op != straggling_->op || w->seq != straggling_->seq)) noteStraggler();
  if (!w || w->waited_ns < w->watchFromNs()) {
    activity_.reset();
    armAdaptiveTimer();
    return;
  }
  // Idleness is judged per wait: a rank busy or idle in the last one says nothing of this one.
  if (activity_key_ != std::make_pair(w->op, w->seq)) {
    activity_.reset();
    activity_key_ = {w->op, w->seq};
  }
  sampleActivity(activity_, w->missing, now);
  const WaitVerdict v = judgeWait(*w, activity_, now);
  if (v.hang) {
    std::vector<int> stopped;
    for (int r : w->missing) {
      if (activity_.stopped(r)) stopped.push_back(r);
    }
    setTrigger(TriggerKind::kHang, w->missing.size() == 1 ? std::optional<int>(w->missing.front()) : std::nullopt,
               "adaptive: " + describeHang(*w, v, opts_.adaptive, stopped));
    straggling_.reset();
    stop_main_ = true;
    return;
  }
  if (!v.busy.empty()) {
    if (!straggling_) timeline(std::nullopt, "adaptive: " + describeStraggler(*w, v.busy) + " (so far)");
    straggling_ = w;
    straggler_ranks_ = v.busy;
  }
  armAdaptiveTimer();
}

// A long wait whose missing ranks were busy ended (or the run did): say how
// long it lasted, so that a slow rank shows up as the straggler it was.
void WatchLoop::noteStraggler() {
  if (!straggling_) return;
  LongWait w = *straggling_;
  straggling_.reset();
  // It ended since the last poll (or is ending with the run): at most one poll late.
  w.waited_ns = std::max(w.waited_ns, launch::realtimeNs() - w.since_ns);
  timeline(straggler_ranks_.size() == 1 ? std::optional<int>(straggler_ranks_.front()) : std::nullopt,
           "adaptive: " + describeStraggler(w, straggler_ranks_));
}

// --- activity, read from /proc ------------------------------------------------

void WatchLoop::sampleActivity(ActivityWatch& watch, const std::vector<int>& ranks, int64_t now_ns) {
  std::map<int, const RankState*> sampled;
  for (const auto& r : ranks_) {
    if (!r->finished && std::find(ranks.begin(), ranks.end(), r->rank) != ranks.end()) sampled[r->rank] = r.get();
  }
  // A rank whose work is one thread of a process busy with others (Ray's
  // core worker): that thread and the rank's child processes. The others:
  // the whole process tree. Every root's tree in one pass over /proc.
  std::map<int, Activity> activity;
  std::vector<pid_t> roots;
  std::set<pid_t> by_thread;
  for (const auto& [rank, r] : sampled) {
    roots.push_back(r->pid);
    auto w = work_threads_.find(r->pid);
    const auto t = w == work_threads_.end() ? std::nullopt : readThreadActivity(r->pid, w->second);
    if (!t) continue;
    activity[rank] = Activity{t->cpu_ticks, t->io_chars, t->state};
    by_thread.insert(r->pid);
  }
  const auto ticks = treeCpuTicks(roots, by_thread);
  for (const auto& [rank, r] : sampled) {
    Activity& a = activity[rank];
    if (auto t = ticks.find(r->pid); t != ticks.end()) a.cpu_ticks += t->second;
    if (!by_thread.count(r->pid)) {
      a.io_chars = readIoChars(r->pid).value_or(0);
      if (auto st = readStat(r->pid)) a.state = st->state;
    }
    watch.sample(rank, a, now_ns);
  }
}

void WatchLoop::onStartupPoll() {
  if (stop_main_ || in_teardown_) return;
  std::vector<int> starting;
  for (const auto& r : ranks_) {
    if (!r->finished && !pastStartup(*r)) starting.push_back(r->rank);
  }
  const int64_t now = launch::realtimeNs();
  sampleActivity(startup_activity_, starting, now);
  // Idle for two polls in a row (not one quiet moment), or stopped: waiting
  // for something, not racing to the same error.
  const int64_t idle_for = 2 * kStartupPollMs * 1'000'000LL;
  const bool all_settled = std::all_of(starting.begin(), starting.end(), [&](int rank) {
    return startup_activity_.stopped(rank) || startup_activity_.idleNs(rank, now) >= idle_for;
  });
  if (all_settled) {
    timeline(std::nullopt, starting.empty() ? std::string("every other rank is past its start-up: no wait")
                                            : (starting.size() == 1 ? "rank " : "ranks ") + probe::rankList(starting) +
                                                  " idle (no CPU, no I/O) while starting: not on their way to the same "
                                                  "failure, no wait");
    allowance_timer_.cancel();
    stop_main_ = true;
    return;
  }
  startup_timer_.expires_after(std::chrono::milliseconds(kStartupPollMs));
  startup_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) onStartupPoll();
  });
}

// --- the end --------------------------------------------------------------------

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

std::optional<pid_t> WatchLoop::liveLauncher() const {
  if (!launcher_ || launcher_finished_) return std::nullopt;
  return launcher_->pid;
}

bool WatchLoop::allReaped() const {
  for (const auto& r : ranks_) {
    if (!r->finished) return false;
  }
  return !launcher_ || launcher_finished_;
}

void WatchLoop::teardown() {
  in_teardown_ = true;
  rank_tracker_->stop();
  allowance_timer_.cancel();
  Teardown::Ending ending;
  ending.stack_ended = !triggered_ || trigger_.kind == TriggerKind::kNone ||
                       (stack_launcher_.exitEndsRun() && launcher_finished_);
  if (triggered_ && trigger_.kind != TriggerKind::kNone) ending.failure = trigger_;
  ending.stuck_on_exit = stuck_on_exit_;
  teardown_.run(ending);
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
  // A launcher that restarts its ranks starts each anew: the k-th process of a rank is its attempt k.
  for (size_t i = 1; i < rec.ranks.size(); ++i) {
    if (rec.ranks[i].rank == rec.ranks[i - 1].rank) rec.ranks[i].attempt = rec.ranks[i - 1].attempt + 1;
  }
  rec.world_size = world;
  rec.max_restarts = opts_.max_restarts;
  rec.launcher_process = launcher_record_;
  rec.trigger = trigger_;
  if (!triggered_) rec.trigger.t_ns = 0;
  if (trigger_.kind == TriggerKind::kNone && launcher_record_ && rec.trigger.detail.empty()) {
    rec.trigger.detail = "launcher ended";
  }
  rec.teardown = teardown_.record();
  rec.process_exits = process_exits_;
  out.timeline = timeline_;
  out.notes = notes_;
  out.interrupted = interrupted_;
  return out;
}

}  // namespace faultline::supervise
