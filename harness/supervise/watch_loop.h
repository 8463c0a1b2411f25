// The supervisor's event loop (one thread, Boost.Asio): child exits by SIGCHLD
// and pidfd, progress by inotify on the run's files, hang and deadline timers,
// SIGINT/SIGTERM to the harness; then the teardown ladder on the same loop.
// Internal to fl::supervise; the public entry point is supervisor.h.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "harness/launch/launcher.h"
#include "harness/launch/run_layout.h"
#include "harness/model/outcome.h"
#include "harness/supervise/containment.h"
#include "harness/supervise/fault_delivery.h"
#include "harness/supervise/leak_check.h"
#include "harness/supervise/node_faults.h"
#include "harness/supervise/progress.h"
#include "harness/supervise/rank_state.h"
#include "harness/supervise/rank_tracker.h"
#include "harness/supervise/seconds.h"
#include "harness/supervise/supervisor.h"
#include "harness/supervise/teardown.h"

namespace faultline::supervise {

namespace asio = boost::asio;

class WatchLoop : private RankTracker::Sink, private Teardown::Host {
 public:
  WatchLoop(const SuperviseOptions& opts, const RunLayout& layout, Containment& containment);
  ~WatchLoop();

  // Spawns the stack; kBadUsage/kIo/kSystem when nothing could start.
  Result<void> start();
  // Runs until the stack ends, fails (builtin), hangs, hits the deadline or
  // the harness is interrupted.
  void runMainPhase();
  // The end of the run (teardown.h): stack dumps, SIGTERM, SIGKILL after
  // grace, verify.
  void teardown();
  SupervisedRun result() const;

 private:
  enum class WatchKind { kRankDir, kRanksRoot, kLauncherDir, kCgroupEvents };
  struct Watch {
    WatchKind kind;
    int rank = -1;
  };

  // Event sources.
  void armSignals();
  void onSignal(int sig);
  void reapChildren() override;
  void armInotify();
  void addWatch(const std::string& path, WatchKind kind, int rank);
  void onInotify(size_t bytes);
  // Without inotify (watch_loop.cc): the path read every kFilePollMs instead.
  static constexpr int kFilePollMs = 50;
  void pollInstead(const std::string& path, Watch w);
  void armFilePoll();
  void onFilePoll();
  void readEvents(int rank);
  void armHangTimer(Clock::time_point at);
  bool failedAtStartup(const RankState& r, int64_t t_ns) const;
  static constexpr double kStartupGraceS = 2.0;  // builtin: the longest the other ranks of a start-up failure get
  static constexpr int kStartupPollMs = 100;     // ... looked at this often: the wait ends once none is busy starting
  void onStartupPoll();
  // Samples what /proc says of RANKS (their process trees) into WATCH.
  void sampleActivity(ActivityWatch& watch, const std::vector<int>& ranks, int64_t now_ns);
  void onHangTimer();
  // Adaptive detection (adaptive_hang.h): a poll while some rank waits in a
  // collective; /proc is read only once a wait nears its threshold.
  void armAdaptiveTimer();
  void onAdaptiveTimer();
  void noteStraggler();
  std::vector<int> stoppedRanks() const;
  // Scripted faults from outside (fault_delivery.h): strike what is due, and
  // wake for the next time point.
  void deliverFaults();
  void armFaultTimer();
  bool ranksStillStarting();
  // The launcher may restart the ranks and the first failure has happened:
  // the ranks now running are a restarted attempt, still watched for hangs.
  bool restartedAttempt() const;
  // Restarts of faultline's own launcher (a launcher whose ranks the
  // supervisor started and stops: builtin), as torchelastic's agent restarts
  // torchrun's workers: a rank's failure ends the attempt (every live rank
  // SIGTERMed, SIGKILLed after the grace), then every rank starts again, up
  // to max_restarts times.
  bool restartsRanks() const;
  launch::LaunchOptions attemptOptions(int attempt) const;
  void onFailureWhileRestarting(const RankState& r, int64_t t_ns);
  void endAttempt();
  void startNextAttempt();
  // Uninstrumented ranks: the live ranks whose CPU time has not advanced
  // since the probe taken kIdleConfirm ago (watch_loop.cc).
  std::vector<int> idleRanks();
  void shownLife(int rank);
  void eventsSeen(int rank, bool progress_event);
  static bool pastStartup(const RankState& r);
  void outputSeen(int rank, const std::string& stream);
  // The run's live processes, as the rank tracker knows them, and every rank
  // known to be running.
  std::vector<pid_t> runMembers() const override;

  // What the rank tracker reports (RankTracker::Sink), and the teardown asks
  // (Teardown::Host).
  RankState* rankByPid(pid_t pid) override;
  bool hasLiveRank(int rank) const override;
  RankState& rankFound(int rank, pid_t pid, std::optional<std::string> node) override;
  void rankEnded(RankState& r, std::optional<ProcessOutcome> outcome, int64_t t_ns) override { onRankExit(r, outcome, t_ns); }
  void processEnded(ProcessExit e, const ProcessOutcome& outcome) override;
  void worldSizeSeen(int world_size) override { world_size_hint_ = std::max(world_size_hint_, world_size); }
  void note(std::string what) override { notes_.push_back(std::move(what)); }
  void runUntil(const std::function<bool()>& done, Clock::duration max) override;
  void watchChild(pid_t pid, std::function<void(int)> on_exit) override { children_[pid] = std::move(on_exit); }
  void forgetChild(pid_t pid) override { children_.erase(pid); }
  std::optional<pid_t> liveLauncher() const override;
  bool launcherEnded() const override { return launcher_record_ && launcher_finished_; }
  bool allReaped() const override;
  int64_t lastExitNs() const override { return last_exit_ns_; }
  bool orphaned(pid_t pid) const override { return orphaned_.count(pid) > 0; }
  bool anyOrphaned() const override { return !orphaned_.empty(); }
  int interrupts() const override { return interrupts_; }

  // Facts.
  RankState& addRank(int rank, pid_t pid, int64_t start_ns, bool our_child);
  // The ranks start() returned, of `attempt` (0: the first), added and said;
  // their pids, for the rank tracker.
  std::vector<pid_t> addStartedRanks(const launch::Started& launched, int attempt);
  void onRankExit(RankState& r, std::optional<ProcessOutcome> outcome, int64_t t_ns);
  void onLauncherExit(ProcessOutcome outcome, int64_t t_ns);
  void setTrigger(TriggerKind kind, std::optional<int> rank, std::string detail);
  void progress(bool from_events);
  void timeline(std::optional<int> rank, std::string what, TimelineKind kind = TimelineKind::kNote) override;

  const SuperviseOptions& opts_;
  const launch::Launcher& stack_launcher_;  // what starts and stops the run (opts_.launcher)
  const RunLayout& layout_;
  Containment& containment_;

  asio::io_context io_;
  asio::signal_set signals_;
  asio::posix::stream_descriptor inotify_;
  alignas(8) std::array<char, 64 * 1024> inotify_buf_{};
  asio::steady_timer hang_timer_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer allowance_timer_;
  asio::steady_timer startup_timer_;  // a start-up failure's peers, looked at while they may be on their way to it
  asio::steady_timer fault_timer_;
  asio::steady_timer adaptive_timer_;
  asio::steady_timer attempt_timer_;  // an attempt being ended: SIGKILL after the grace
  ActivityWatch activity_;
  ActivityWatch startup_activity_;  // the peers of a start-up failure
  std::pair<std::string, int64_t> activity_key_;  // the wait (op, seq) activity_ is sampling for
  // A wait past its threshold whose missing ranks were busy: reported as
  // stragglers once it ends (or when the run ends).
  std::optional<LongWait> straggling_;
  std::vector<int> straggler_ranks_;
  FaultDelivery faults_;
  NodeFaults node_faults_;  // the strikes on a node or its link (node_faults.h)
  std::map<int, Watch> watches_;                       // inotify wd -> what
  struct PolledPath {
    Watch watch;
    std::map<std::string, std::uintmax_t> sizes;  // the files under it, as last read
  };
  std::map<std::string, PolledPath> polled_;  // paths inotify refused, read on file_poll_timer_
  asio::steady_timer file_poll_timer_;
  std::map<pid_t, std::function<void(int)>> children_;  // our children, by pid: wait status handler

  std::vector<std::unique_ptr<RankState>> ranks_;
  std::unique_ptr<RankTracker> rank_tracker_;  // which processes are the run's, and which are ranks
  std::map<int, EventsFollower> followers_;  // rank -> its events.jsonl
  CollectiveTracker tracker_;
  std::vector<ProcessExit> process_exits_;
  int world_size_hint_ = 0;
  int64_t last_exit_ns_ = 0;  // the latest exit seen of any process of the run

  std::optional<launch::LaunchedProcess> launcher_;
  std::optional<LauncherProcess> launcher_record_;
  bool launcher_finished_ = false;

  int64_t start_ns_ = 0;
  Clock::time_point start_mono_;
  Clock::time_point last_event_progress_;
  Clock::time_point last_output_progress_;
  // Uninstrumented hang check: CPU time of each live rank's tree when the
  // silence reached the hang timeout; compared kIdleConfirm later.
  std::optional<std::map<pid_t, uint64_t>> idle_probe_;
  bool busy_noted_ = false;
  std::vector<int> stuck_on_exit_;  // a shutdown hang's stuck ranks (Teardown::Ending)
  Trigger trigger_;
  bool triggered_ = false;
  bool stop_main_ = false;
  bool interrupted_ = false;
  int interrupts_ = 0;
  bool in_teardown_ = false;
  int restarts_ = 0;             // the attempts restartsRanks() started after the first
  bool attempt_ending_ = false;  // its ranks stopped for the next attempt

  LeakCheck leaks_;
  Teardown teardown_;  // after ranks_ and leaks_, which it reads
  std::set<int> held_noted_;  // ranks whose resources were noted at their first step_end
  // pid -> the thread that does the rank's work, where a `start` named one
  // (Ray Train's training thread): its activity, not the whole process's,
  // says whether the rank is idle.
  std::map<pid_t, pid_t> work_threads_;
  std::vector<TimelineEntry> timeline_;
  std::vector<std::string> notes_;
  std::vector<pid_t> adopted_;  // orphans reaped by the harness (daemons whose parent died)
  // Ranks left running when a launcher that was itself a rank (Lightning's
  // rank 0) ended abnormally, with nothing already ending them: nobody will
  // stop them but their own errors (the teardown gives them its grace).
  std::set<pid_t> orphaned_;
};

}  // namespace faultline::supervise
