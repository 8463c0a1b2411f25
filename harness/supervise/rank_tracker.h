// How the supervisor finds a run's ranks among its processes: one class per
// way a launcher leaves them (launch::RankDiscovery), chosen by the launcher.
//
//   StartedRanks     the ranks are faultline's own children (builtin); what
//                    they fork is followed only to record its exits.
//   DescendantRanks  the ranks are the launcher's descendants that carry a
//                    RANK (torchrun, launch, spawn, external): found by the
//                    proc connector's exec events, else a 100 ms rescan.
//   RunProcessRanks  the ranks are the run's processes anywhere on the host,
//                    by their FAULTLINE_RUN_ID (Slurm's tasks, the multi-node
//                    agents' ranks, whose rank_start events are read too).
//   LauncherRankZero the launcher's own process is rank 0 (a Lightning
//                    script), its other ranks are descendants carrying
//                    LOCAL_RANK and NODE_RANK but no RANK.
//
// Every tracker that finds ranks also takes a rank's own word for it: the
// shim's `start` event names the process (torch.multiprocessing.spawn's
// children and Lightning's rank 0 carry no rank in their environment).
//
// A tracker answers which processes are which ranks, which processes are the
// run's, and when each ends; the watch loop keeps time and events and asks
// it. Internal to fl::supervise.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "harness/launch/launcher.h"
#include "harness/launch/run_layout.h"
#include "harness/model/supervisor_record.h"
#include "harness/supervise/containment.h"
#include "harness/supervise/proc_events.h"
#include "harness/supervise/rank_state.h"

namespace faultline::supervise {

class RankTracker {
 public:
  // What a tracker tells the watch loop, and asks of it.
  class Sink {
   public:
    virtual ~Sink() = default;
    virtual RankState* rankByPid(pid_t pid) = 0;
    virtual bool hasLiveRank(int rank) const = 0;
    // A rank found (one faultline did not start): the loop records it.
    virtual RankState& rankFound(int rank, pid_t pid, std::optional<std::string> node) = 0;
    // A found rank's end, seen by its pidfd; no outcome when its launcher reaped it first.
    virtual void rankEnded(RankState& r, std::optional<ProcessOutcome> outcome, int64_t t_ns) = 0;
    // A process of the run ended (a rank, a DataLoader worker, the launcher), seen by the proc connector.
    virtual void processEnded(ProcessExit e, const ProcessOutcome& outcome) = 0;
    virtual void worldSizeSeen(int world_size) = 0;
    virtual void note(std::string what) = 0;
  };

  struct Context {
    boost::asio::io_context& io;
    const Containment& containment;
    const RunLayout& layout;
    std::string run_id;
    bool allow_proc_connector = true;
    Sink& sink;
  };

  // The tracker for LAUNCHER's way of leaving its ranks.
  static std::unique_ptr<RankTracker> forLauncher(const launch::Launcher& launcher, const Context& ctx);

  explicit RankTracker(const Context& ctx);
  virtual ~RankTracker() = default;
  RankTracker(const RankTracker&) = delete;
  RankTracker& operator=(const RankTracker&) = delete;

  // Whether ranks are found while the run goes on (their directories under
  // OUT/ranks/ appear then, and are watched for).
  virtual bool findsRanks() const = 0;
  // Whether the ranks are faultline's own children (supervisor.json's
  // `launcher`: "builtin", else "external").
  virtual bool startsRanks() const = 0;
  // Before the launch: opens what follows the run's processes.
  virtual void open() = 0;
  // After the launch: the ranks faultline started, and the launcher.
  virtual void launched(const std::vector<pid_t>& ranks, std::optional<pid_t> launcher);
  // The run's live processes: what the teardown ends and then proves gone.
  virtual std::vector<pid_t> members() const;
  // A rank's own report (the shim's `start` event): process `pid` is rank
  // `rank`. Trackers that find ranks take it where their own reading of the
  // process tree has not named that process or that rank.
  virtual void reported(int /*rank*/, pid_t /*pid*/) {}
  // No more looking for ranks (the teardown has begun).
  void stop();

 protected:
  // The proc connector's fork and exit handlers every tracker shares: the
  // run's processes followed, and their ends told to the sink.
  ProcEvents::Handlers runProcessHandlers();
  // A process of the run ended: its record, with what was noted of it at exec.
  ProcessExit exitRecord(pid_t pid, int wait_status, int64_t t_ns);

  Context ctx_;
  std::unique_ptr<ProcEvents> proc_events_;
  std::set<pid_t> run_pids_;                 // live processes known to be the run's
  std::map<pid_t, std::string> cmdlines_;    // read at exec
  std::map<pid_t, pid_t> parents_;           // each run process's parent, at fork (else at exec)
  std::optional<pid_t> launcher_pid_;
  boost::asio::steady_timer scan_timer_;
  bool stopped_ = false;
};

class StartedRanks final : public RankTracker {
 public:
  using RankTracker::RankTracker;
  bool findsRanks() const override { return false; }
  bool startsRanks() const override { return true; }
  void open() override;
  void launched(const std::vector<pid_t>& ranks, std::optional<pid_t> launcher) override;
};

class DescendantRanks : public RankTracker {
 public:
  using RankTracker::RankTracker;
  bool findsRanks() const override { return true; }
  bool startsRanks() const override { return false; }
  void open() override;
  void launched(const std::vector<pid_t>& ranks, std::optional<pid_t> launcher) override;
  void reported(int rank, pid_t pid) override;

 protected:
  // Looks at every process not yet looked at; a rank found is recorded.
  virtual void scan();
  // The rank a process of the run says it is by its environment (RANK); none
  // for a process that is no rank by it (or is its rank's helper).
  virtual std::optional<int> rankOf(pid_t pid) const;
  // Records rank `rank` at `pid` and follows its end.
  virtual void found(int rank, pid_t pid);
  // Whether `pid` is a live process of the run (members()).
  bool isMember(pid_t pid) const;
  // A process that exec'd: whether it is the run's, beyond the launcher's tree.
  virtual bool joinsAtExec(pid_t) const { return false; }
  // Whether the rescan goes on with the proc connector open.
  virtual bool rescans() const { return !proc_events_; }
  void classify(pid_t pid);

  std::set<pid_t> classified_;  // pids already looked at for RANK
  std::set<RankState*> unwatched_;  // ranks without a pidfd or the proc connector: the rescan looks for their end
  std::map<pid_t, std::string> agent_nodes_;  // rank pid -> node, from the agents' rank_start

 private:
  void armScan();
  void watchEnd(RankState& r);
};

class LauncherRankZero final : public DescendantRanks {
 public:
  using DescendantRanks::DescendantRanks;

 private:
  std::optional<int> rankOf(pid_t pid) const override;
  void found(int rank, pid_t pid) override;
};

class RunProcessRanks final : public DescendantRanks {
 public:
  using DescendantRanks::DescendantRanks;
  std::vector<pid_t> members() const override;

 private:
  void scan() override;
  bool joinsAtExec(pid_t pid) const override;
  bool rescans() const override { return true; }
  bool carriesRunId(pid_t pid) const;
  void readAgentEvents();

  std::set<pid_t> foreign_;                      // pids seen without this run's id (re-read at exec)
  std::map<std::string, size_t> agent_offsets_;  // agent events file -> bytes read
};

}  // namespace faultline::supervise
