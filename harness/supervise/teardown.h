// The end of a run: stack dumps of stuck ranks, the launcher's own stop where
// it has one, the ladder (terminate.h), then the proof that nothing of the run
// is left (survivors, leaks, the workload manager's residue). It runs on the
// watch loop's event loop, so exits and events are still read while it
// waits; what it needs of the loop is its Host. Its value is the run's
// TeardownRecord. Internal to fl::supervise.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness/launch/launcher.h"
#include "harness/launch/run_layout.h"
#include "harness/model/supervisor_record.h"
#include "harness/supervise/containment.h"
#include "harness/supervise/leak_check.h"
#include "harness/supervise/rank_state.h"
#include "harness/supervise/seconds.h"
#include "harness/supervise/supervisor.h"

namespace faultline::supervise {

class Teardown {
 public:
  // What the teardown asks of the watch loop.
  class Host {
   public:
    virtual ~Host() = default;
    // Runs the event loop (reaping, events) until `done` holds or `max` has passed.
    virtual void runUntil(const std::function<bool()>& done, Clock::duration max) = 0;
    // The run's live processes (what the ladder ends and the proof checks).
    virtual std::vector<pid_t> runMembers() const = 0;
    virtual RankState* rankByPid(pid_t pid) = 0;
    // Reaps what has ended of faultline's own children now.
    virtual void reapChildren() = 0;
    // Calls `on_exit` with the wait status when child `pid` (a stack dumper) is reaped.
    virtual void watchChild(pid_t pid, std::function<void(int)> on_exit) = 0;
    virtual void forgetChild(pid_t pid) = 0;
    // The launcher process while it runs; none once it ended, or without one.
    virtual std::optional<pid_t> liveLauncher() const = 0;
    // There was a launcher process, and it has ended.
    virtual bool launcherEnded() const = 0;
    // Every rank reaped, and the launcher too where there is one.
    virtual bool allReaped() const = 0;
    // The latest exit seen of any process of the run (0: none).
    virtual int64_t lastExitNs() const = 0;
    // A rank a launcher that was itself a rank left running when it ended.
    virtual bool orphaned(pid_t pid) const = 0;
    virtual bool anyOrphaned() const = 0;
    // How many SIGINT/SIGTERM the harness got: a second cuts the grace short.
    virtual int interrupts() const = 0;
    virtual void timeline(std::optional<int> rank, std::string what, TimelineKind kind) = 0;
    virtual void note(std::string what) = 0;
  };

  struct Context {
    const SuperviseOptions& opts;
    const launch::Launcher& launcher;  // the stack: how it is stopped, what it leaves
    const RunLayout& layout;
    Containment& containment;
    const std::vector<std::unique_ptr<RankState>>& ranks;
    LeakCheck& leaks;
    Host& host;
  };

  // Why the run ends, as the watch loop saw it.
  struct Ending {
    // The stack ended of itself (or its launcher exited): what is left is
    // left behind, and no rank is dumped.
    bool stack_ended = false;
    // The first failure (a rank's, a hang, the deadline, an interrupt); none
    // for a run that ended clean.
    std::optional<Trigger> failure;
    // A shutdown hang's stuck ranks: past their work, stuck in C++ where a
    // Python dump shows only the line that called it (a destructor at
    // exit). Their native threads are dumped too.
    std::vector<int> stuck_on_exit;
  };

  explicit Teardown(const Context& ctx) : ctx_(ctx) {}
  Teardown(const Teardown&) = delete;
  Teardown& operator=(const Teardown&) = delete;

  // The whole teardown, once; the record is complete when it returns.
  void run(const Ending& ending);
  const TeardownRecord& record() const { return record_; }

 private:
  // SIGTERM/SIGKILL (and SIGUSR1) recorded, the ranks marked.
  void sendSignal(pid_t pid, int sig);
  void addSurvivor(pid_t pid, const std::string& why);
  // SIGUSR1 to ranks that catch it, `meanwhile` while they write, torch's
  // Flight Recorder, then native dumps of stuck ranks (hang, deadline):
  // stack_dumps.cc.
  void requestStackDumps(const Ending& ending, const std::function<void()>& meanwhile);
  std::vector<RankState*> requestSigusr1Dumps();
  void requestFlightRecorder();
  void requestNativeDumps(const std::vector<RankState*>& dumped_by_usr1, const std::vector<int>& stuck_on_exit);
  // Ends every process of the run; returns when every one was gone.
  int64_t endProcesses(const Ending& ending, const std::vector<pid_t>& live);
  // SIGKILL to the stopped ones among live, beside a launcher's SIGTERM: a
  // stopped process cannot take the launcher's stop, and runs no code again.
  void endStopped(const std::vector<pid_t>& live);
  // The proof: survivors, leaks, the workload manager's residue.
  void verify();
  // What of the job the workload manager still holds, ended and waited for.
  std::vector<std::string> settleResidue();
  void sign(const Ending& ending, int64_t gone_ns, Clock::time_point t0);

  Context ctx_;
  TeardownRecord record_;
};

}  // namespace faultline::supervise
