// Scenario x stack -> what to start, or why the scenario cannot apply to that
// stack. What every stack shares (the stack name, the torch it runs, the
// scenario's `stacks` and `torch` bounds, the trainer command) is decided
// here; the command line is the stack's Launcher's (Launcher::plan). Pure: no
// processes here.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/launch/elastic_launcher.h"
#include "harness/launch/launcher.h"
#include "harness/launch/torch_installs.h"
#include "harness/model/report.h"
#include "harness/scenario/scenario.h"

namespace faultline::launch {

struct Tools {
  std::vector<TorchInstall> torches;  // this machine's torch installs, newest first (discoverTorch)
  std::string trainer_override;       // set (FAULTLINE_TRAINER): this reference trainer for every torch version
  Instruments instruments;            // given to every stack's processes
  int gpus = 0;                       // NVIDIA GPUs on this machine (countGpus)
  std::set<std::string> helpers;      // the stack dumpers found here (findHelperTools)
  std::string faultline_bin;          // this faultline binary (multi-node stacks run `faultline agent` on each node)
  std::string launch_scripts_dir;     // the launch stage's own Python programs (spawn_runner.py); "" not found
};

// The NVIDIA GPUs this machine has: its /dev/nvidiaN device files.
int countGpus(const std::string& dev_dir = "/dev");

struct StackPlan {
  std::string stack;              // the stack as resolved, for the report: "torchrun@2.13", "builtin", ...
  std::string torch;              // the torch version it runs ("2.13.0+cpu"); "" none
  LaunchOptions launch;           // what to start
  // Faults the supervisor strikes from outside the ranks ([fault] by = "supervisor").
  std::vector<probe::FaultSpec> outside_faults;
  // Every fault the scenario asks for, whoever strikes it (supervisor.json's `faults`).
  std::vector<RequestedFault> requested_faults;
  std::optional<std::string> unsupported;  // set: do not run, report unsupported with this reason
  // A one-node scenario on a stack that spans nodes runs over kSpreadNodes
  // (its ranks laid out as node_layout.h says; the report's `nodes` lists
  // them), and is judged by these too: the root cause names the node of the
  // rank the scenario expects (nodeExpectations).
  std::vector<scenario::Expect> implied_expect;
};

// The nodes a one-node scenario is spread over on a multi-node stack.
inline constexpr int kSpreadNodes = 2;

// For each `root_cause.rank = R` among `expect`: `root_cause.node = nK`, the
// node holding rank R when node k runs `per_node[k-1]` consecutive ranks
// (node_layout.h). None where `expect` already names the root cause's node.
std::vector<scenario::Expect> nodeExpectations(const std::vector<scenario::Expect>& expect, const std::vector<int>& per_node);

// A fault a run asks for, struck by `layer`, as supervisor.json records it.
RequestedFault requestedFault(const probe::FaultSpec& spec, probe::FaultLayer layer);

// `stack` empty: the scenario's own launcher. A stack without a version
// ("torchrun") takes the newest torch installed; the stack's torch gives the
// interpreter of Python trainers and the reference trainer binary. `out_dir` is where torchrun's
// --log_dir goes (OUT/launcher/logs); `master_port` is used by launchers that
// need one chosen up front. Relative paths in the command are resolved
// against `base_dir` (the directory the scenario paths are relative to).
StackPlan planStack(const scenario::Scenario& s, const std::string& stack, const Tools& tools,
                    const std::string& out_dir, int master_port, const std::string& base_dir);

// The reference trainer's arguments for the scenario's fault (--fault ...).
std::vector<std::string> faultArgs(const scenario::Scenario& s);

}  // namespace faultline::launch
