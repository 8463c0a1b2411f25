// The torchrun stack: torch's elastic launcher, beside the stack's interpreter.
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {
namespace {

class TorchrunLauncher final : public ElasticLauncher {
 public:
  std::string name() const override { return "torchrun"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    const TorchInstall& torch = *in.torch;
    if (torch.torchrun.empty()) {
      return tl::unexpected(Unsupported{"torch " + torch.version + " at " + torch.python + " has no torchrun beside it"});
    }
    const scenario::Scenario& s = *in.scenario;
    std::vector<std::string> cmd = {torch.torchrun, "--nproc_per_node=" + std::to_string(s.stack.world_size),
                                    "--master_port=" + std::to_string(in.master_port)};
    appendTorchrunTrainer(cmd, in);
    return PlannedStart{cmd, 1};
  }
  StackOffer offer(const TorchInstall* torch, const std::string& scratch) const override {
    if (!torch) return {};
    if (torch->torchrun.empty()) return {torch->torchrun, "no torchrun beside " + torch->python, {}, ""};
    return {torch->torchrun, "", oneRankJob({torch->torchrun}, scratch + "/torchrun@" + torch->series), "a one-rank torchrun job"};
  }
};

}  // namespace

const Launcher& torchrunLauncher() {
  static const TorchrunLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
