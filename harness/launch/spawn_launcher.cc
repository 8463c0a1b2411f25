// The spawn stack: a Python program that starts its ranks with
// torch.multiprocessing.spawn (the shim gives each child FAULTLINE_RANK, since
// spawn sets no RANK), observed black-box like any launcher.
#include "harness/launch/observed_launcher.h"

namespace faultline::launch {
namespace {

class SpawnLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "spawn"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (in.reference_trainer) {
      return tl::unexpected(Unsupported{"the spawn stack runs a command that launches itself; the reference trainer needs a launcher"});
    }
    return PlannedStart{in.trainer, 1};
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
