// The torchrun stack: torch's elastic launcher, beside the stack's interpreter.
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {
namespace {

class TorchrunLauncher final : public ElasticLauncher {
 public:
  std::string name() const override { return "torchrun"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    auto cmd = torchrunCommand(in, {"--nproc_per_node=" + std::to_string(in.scenario->stack.world_size)});
    if (!cmd) return tl::unexpected(cmd.error());
    return PlannedStart{*cmd, 1};
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
