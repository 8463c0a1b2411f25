// The launch stage's interface: one Launcher per stack (builtin, external,
// torchrun, torch.distributed.launch, torch.multiprocessing.spawn). A launcher
// plans a scenario on its stack (the command line, or why it cannot run
// there), starts a run's processes, and tells the supervisor how its ranks are
// found, how its job is stopped and where its own log is. The supervisor asks
// these questions instead of branching on a kind.
//
// Adding a stack: a class in a file of its own and one line in
// launcher_registry.cc (its name also in model/stack_name.cc, which the
// scenario files read; a test checks that the two lists agree).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/run_layout.h"
#include "harness/launch/torch_installs.h"
#include "harness/model/error.h"
#include "harness/model/stack_name.h"
#include "harness/scenario/scenario.h"

namespace faultline::launch {

// What to start: the plan of a scenario, or `faultline exec`'s command line.
struct LaunchOptions {
  std::string launcher = "builtin";  // a Launcher's name (launcherNamed)
  std::vector<std::string> command;  // COMMAND [ARGS...]: the trainer (builtin) or the launcher's own command line
  int nproc = 1;                     // builtin only
  // builtin only: the attempt start() starts (0: the first; k: the k-th
  // restart, its output in OUT/ranks/R/attempt_K) and how many restarts the
  // run may make, the ranks' TORCHELASTIC_RESTART_COUNT and _MAX_RESTARTS.
  int attempt = 0;
  int max_restarts = 0;
  std::string run_id;                // unique per run, exported as FAULTLINE_RUN_ID
  Instruments instruments;           // in every rank's (builtin) or the launcher's (external) environment
  // Extra environment for every process of the run: each rank (builtin), or
  // the launcher, whose children inherit it (external). E.g. FAULTLINE_INJECT.
  Environment env;
  // How many nodes the command runs on: > 1, one process of it per node, each
  // node a network namespace of this machine (node_driver.cc).
  int nodes = 1;
  // Multi-node stacks whose nodes do not all run the same number of ranks: the
  // ranks of each node, n1 first (node_layout.h); empty: the same on each.
  std::vector<int> node_procs;
  // The launcher runs the job in a network namespace of its own (accelerate
  // at a c10d rendezvous, whose port is the same for every job): a plan's
  // choice, never `faultline exec`'s, whose command may need the network.
  bool own_network = false;
};

// Sets each variable of `extra` in a "KEY=VALUE" list, replacing any earlier value.
inline void applyEnv(std::vector<std::string>& env, const Environment& extra) {
  for (const auto& [key, value] : extra) {
    std::erase_if(env, [&](const std::string& kv) {
      return kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=';
    });
    env.push_back(key + "=" + value);
  }
}

struct LaunchedProcess {
  std::optional<int> rank;  // null for a launcher process
  pid_t pid = 0;
  int64_t start_ns = 0;     // CLOCK_REALTIME
};

// What start() started. A launcher that fails part-way returns what it did
// start with `error` set, so that the supervisor tears that down; an error
// with nothing started is the Result's error instead.
struct Started {
  std::vector<LaunchedProcess> ranks;      // started directly, pid known (RankDiscovery::kStarted)
  std::optional<LaunchedProcess> launcher;  // the launcher's own process, whose exit the supervisor collects
  std::optional<Error> error;
};

// How the supervisor learns which process is which rank.
enum class RankDiscovery {
  kStarted,      // start() returns every rank: faultline started them itself
  kDescendants,  // descendants of the launcher process, by the RANK in their environment
                 // (the topmost process carrying a RANK is the rank)
  kRunProcesses,  // any process on this host carrying the run's FAULTLINE_RUN_ID and a RANK (the
                  // topmost such), wherever it was started: Slurm's slurmstepd starts the ranks, not
                  // the launcher process; the node agents' rank_start events say the same from every
                  // node (docs/MULTINODE.md)
  kLauncherRankZero,  // the launcher's own process is rank 0 (a Lightning script; across nodes each node's
                      // script is its node's first rank); the other ranks are its descendants carrying
                      // RANK, or LOCAL_RANK (and NODE_RANK 0) without it
};

// How the supervisor stops a job that has to be stopped.
enum class StopOrder {
  kWholeTree,      // SIGTERM to every process of the run at once, SIGKILL after the grace period
  kLauncherFirst,  // SIGTERM to the launcher process alone; the rest after `launcher_grace_s`
                   // (a launcher that forwards the stop to ranks it alone can reach)
};

// After a rank fails, who ends the job.
enum class OnRankFailure {
  kSupervisorStops,   // the supervisor tears the job down at once (it started the ranks)
  kLauncherStops,     // the launcher is the stack under test: it gets an allowance to end its job itself
};

// What a launcher writes about its own job, and where.
struct LauncherLog {
  std::string stdout_path;  // its own output; "" when it has no process of its own
  std::string stderr_path;
  std::string log_dir;      // torchelastic's --log_dir (per-rank logs, error files); "" none
  // How to read it: "torchelastic" (the agent's "Root Cause" block and error
  // files), "srun", "deepspeed" (launch.py's log lines), "plain" (output
  // only), "" none. The diagnosis reads every format's lines in any output.
  std::string format;
};

// Why a scenario does not apply to a stack (a value, not an error: the
// scenario is reported unsupported).
struct Unsupported {
  std::string reason;
};

// What planning gives a launcher to build its command line from.
struct PlanInput {
  const scenario::Scenario* scenario = nullptr;
  // The trainer as a rank runs it: paths resolved, the reference trainer's
  // binary or the stack's torch interpreter put first.
  std::vector<std::string> trainer;
  bool reference_trainer = false;
  bool python_trainer = false;
  const TorchInstall* torch = nullptr;  // null when the stack needs none
  std::string out_dir;                  // the run directory (for --log_dir)
  int master_port = 0;
  std::string faultline_bin;  // the faultline binary (Tools::faultline_bin); "" unknown
  std::string launch_scripts_dir;  // Tools::launch_scripts_dir; "" not found
};

// The launcher's part of a plan: what to start.
struct PlannedStart {
  std::vector<std::string> command;
  int nproc = 1;
  Environment env{};  // added to the run's environment (LaunchOptions::env): what the launcher reads there
  std::vector<int> node_procs{};  // LaunchOptions::node_procs
  bool own_network = false;       // LaunchOptions::own_network
  int nodes = 1;                  // LaunchOptions::nodes
};

// A stack of this launcher as `faultline stacks` offers it.
struct StackOffer {
  std::string program;             // what it starts: the torchrun script, "python -m torch.distributed.launch", ...
  std::string problem;             // non-empty: it does not work here, and why (known without running anything)
  std::vector<std::string> check;  // a command whose success shows that it works here; empty: none
  std::string check_what;          // what the check is, for its failure: "a one-rank torchrun job"
};

class Launcher {
 public:
  virtual ~Launcher() = default;

  // The stack's name without a torch series: "torchrun".
  virtual std::string name() const = 0;

  // --- planning (pure: no processes) ---
  // Its row of the launcher table (model/stack_name.h), found by name(); a
  // launcher outside the table (a test's own) has every trait false.
  const LauncherTraits& traits() const;
  // Whether the stack runs at a torch version even with a trainer that needs
  // none (torchrun is torch's own launcher; external runs whatever it is given).
  bool needsTorch() const { return traits().needs_torch; }
  // How it meets `[stack] nodes`: a scenario with nodes > 1 is unsupported
  // on a one-node stack, and one of one node is spread on a stack that spreads.
  NodeSpan nodeSpan() const { return traits().nodes; }
  // The command line for a scenario, or why the scenario cannot run here.
  virtual tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const = 0;

  // The stack at one torch install (null for a stack without a version:
  // external); `scratch` is where a check's job may write its logs.
  virtual StackOffer offer(const TorchInstall* torch, const std::string& scratch) const = 0;

  // --- running ---
  virtual RankDiscovery rankDiscovery() const = 0;
  virtual OnRankFailure onRankFailure() const = 0;
  virtual StopOrder stopOrder() const { return StopOrder::kWholeTree; }
  virtual double launcherGraceS() const { return 0; }  // kLauncherFirst only
  // How much longer than the scenario's grace the launcher's own processes
  // (not ranks) may take to exit after the teardown's SIGTERM, once every
  // rank is gone: a launcher that finalizes a whole torch on exit. 0: none.
  virtual double launcherExitS() const { return 0; }
  // Whether the launcher process's exit ends the run (the supervisor stops
  // watching and collects what is left). Otherwise the run ends when every
  // rank has.
  bool exitEndsRun() const { return rankDiscovery() != RankDiscovery::kStarted; }
  // How many ranks start() will start, so that their directories are watched
  // before they run; 0 when the launcher starts them itself.
  virtual int ranksKnownUpFront(const LaunchOptions& opts) const = 0;
  // Starts the run's processes, placed in their containment, output into the
  // run directory. Errors: kBadUsage (no such command), kIo, kSystem.
  virtual Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const = 0;
  // After the teardown: removes what start() made beside processes (the
  // network namespaces of torchrun-multinode) and says what is still left
  // (teardown leaks); empty when nothing is.
  virtual std::vector<std::string> finish(const LaunchOptions&) const { return {}; }
  // Where its own log is, for a run started with `opts`.
  virtual LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const = 0;

  // --- a job held by a workload manager (Slurm) ---
  // Ends what of the run's job the engine still holds, after the launcher
  // process was stopped (scancel); the commands it ran, for the timeline.
  virtual std::vector<std::string> cancelJob(const RunLayout&) const { return {}; }
  // What of the run's job the engine still runs or queues ("slurm job 12:
  // COMPLETING"); empty: nothing. Part of the teardown proof.
  virtual std::vector<std::string> residue(const RunLayout&) const { return {}; }
};

// The launcher of that name (a stack name without its @series); null if none.
const Launcher* launcherNamed(const std::string& name);
// Every launcher, in the order of stackLaunchers().
const std::vector<const Launcher*>& allLaunchers();

}  // namespace faultline::launch
