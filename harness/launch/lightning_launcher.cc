// The lightning stack: PyTorch Lightning's own launcher, which is the user's
// script. `python train.py` with Trainer(strategy="ddp", devices=N) is rank 0
// and starts the script again for ranks 1..N-1 with LOCAL_RANK, NODE_RANK and
// WORLD_SIZE but no RANK (lightning/fabric/strategies/launchers/
// subprocess_script.py): the launcher process is a rank
// (RankDiscovery::kLauncherRankZero). When a child exits non-zero, Lightning's
// child-process observer (polling every 5 s) SIGKILLs the other children and
// rank 0 itself; when rank 0 raises, it SIGKILLs its children and exits
// (trainer/call.py, _interrupt). That is the teardown under test. A plain
// torch.distributed script runs as the function lightning_script.py's Fabric
// launches, under the same launcher and observer.
#include "harness/launch/observed_launcher.h"
#include "harness/launch/script_runner.h"

namespace faultline::launch {
namespace {

class LightningLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "lightning"; }
  RankDiscovery rankDiscovery() const override { return RankDiscovery::kLauncherRankZero; }

  // A Lightning trainer of the scenario's own ([stack.command_on] lightning)
  // runs with --devices N (its own flag, as Lightning's examples and
  // LightningCLI's --trainer.devices take it); a plain trainer script runs as
  // the launched function of lightning_script.py's Fabric, with the same
  // flag. Either way the port is faultline's: Lightning takes MASTER_PORT
  // from the environment, and picks a free one itself only without it
  // (racing other runs).
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer) {
      return tl::unexpected(Unsupported{"Lightning's launcher reruns a Python script for each rank; this scenario's trainer is not a Python program"});
    }
    if (!in.scenario->stack.instrument) {
      return tl::unexpected(Unsupported{"Lightning's ranks 1..N-1 carry no RANK: uninstrumented, faultline cannot tell its ranks apart"});
    }
    // A scenario of several nodes: the script on each node with
    // --num_nodes (its node and node n1's address from node_driver.cc), as
    // Fabric(num_nodes=M) runs on a cluster.
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    std::vector<std::string> devices = {"--devices", std::to_string(shape->per_node)};
    PlannedStart p{in.trainer, 1, {}};
    if (hasOwnTrainer(in, name())) {
      if (shape->nodes > 1) {
        return tl::unexpected(Unsupported{"the scenario's own Lightning trainer takes --devices; it names no node flags"});
      }
      p.command.insert(p.command.end(), devices.begin(), devices.end());
    } else {
      if (shape->nodes > 1) devices.push_back("--num_nodes=" + std::to_string(shape->nodes));
      auto script = scriptRunnerCommand(in, "lightning_script.py", devices, name());
      if (!script) return tl::unexpected(script.error());
      p.command = std::move(*script);
    }
    p.nodes = shape->nodes;
    p.env["MASTER_ADDR"] = "127.0.0.1";
    p.env["MASTER_PORT"] = std::to_string(in.master_port);
    return p;
  }

  NodePlace nodePlace() const override { return {"--num_nodes=", "--node_rank", "--master_addr"}; }

  // A one-rank DDP job: Fabric's launch() joins a process group of one.
  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    auto it = torch->frameworks.find("lightning");
    StackOffer o{torch->python + " (lightning " + (it == torch->frameworks.end() ? "?" : it->second) + ")", "", {}, ""};
    o.check = {torch->python, "-c",
               "import lightning as L, torch.distributed as d\n"
               "f = L.Fabric(accelerator='cpu', devices=1, strategy='ddp')\n"
               "f.launch()\n"
               "assert d.is_initialized() and d.get_world_size() == 1\n"};
    o.check_what = "a one-rank Lightning Fabric DDP job";
    return o;
  }
};

}  // namespace

const Launcher& lightningLauncher() {
  static const LightningLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
