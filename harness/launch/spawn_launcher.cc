// The spawn stack: torch.multiprocessing.spawn, observed black-box like any
// launcher (the shim gives each child FAULTLINE_RANK, since spawn sets no RANK).
//
// A scenario written for spawn (`launcher = "spawn"`) runs its own program,
// which calls spawn itself. Any other Python trainer is a script each rank
// runs; spawn runs a function, so the stack runs the script as the spawned
// function through spawn_runner.py (the robust-script pattern: torchrun's
// environment in each child, try/finally, destroy_process_group, join=True).
// A scenario of several nodes runs the runner once per node (--nnodes,
// --node_rank, --master_addr: node_driver.cc), as users spread a spawn
// program over a cluster: the same processes on each node.
#include "harness/launch/observed_launcher.h"
#include "harness/launch/script_runner.h"

namespace faultline::launch {
namespace {

class SpawnLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "spawn"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.scenario->stack.instrument) {
      return tl::unexpected(Unsupported{"spawn's children carry no RANK: uninstrumented, faultline cannot tell its ranks apart"});
    }
    if (in.scenario->stack.launcher == name()) {
      // The scenario's own spawn program: one process, as written.
      if (in.scenario->stack.nodes > 1) {
        return tl::unexpected(Unsupported{"the scenario's own spawn program runs on one node; it names no node flags"});
      }
      return PlannedStart{in.trainer, 1};
    }
    if (!in.python_trainer) {
      return tl::unexpected(Unsupported{"spawn runs Python functions; this scenario's trainer is not a Python program"});
    }
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    std::vector<std::string> flags = {"--nprocs", std::to_string(shape->per_node), "--port", std::to_string(in.master_port)};
    if (shape->nodes > 1) flags.push_back("--nnodes=" + std::to_string(shape->nodes));
    auto cmd = scriptRunnerCommand(in, "spawn_runner.py", flags, name());
    if (!cmd) return tl::unexpected(cmd.error());
    return PlannedStart{*cmd, 1, {}, {}, false, shape->nodes};
  }
  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    return {torch->python + " (torch.multiprocessing.spawn)", "",
            {torch->python, "-c", "import torch.multiprocessing as m, torch.distributed as d; m.spawn; assert d.is_available()"},
            "import torch.multiprocessing"};
  }
};

}  // namespace

const Launcher& spawnLauncher() {
  static const SpawnLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
