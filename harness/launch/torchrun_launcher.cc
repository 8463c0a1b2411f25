// The torchrun stack: torch's elastic launcher, beside the stack's interpreter.
// A scenario of several nodes runs one agent per node (--nnodes, --node_rank,
// --master_addr: node_driver.cc), the command line torchrun-multinode gives
// it; a scenario of one node stays on one.
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {
namespace {

class TorchrunLauncher final : public ElasticLauncher {
 public:
  std::string name() const override { return "torchrun"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    auto cmd = torchrunCommand(in, shape->flags);
    if (!cmd) return tl::unexpected(cmd.error());
    return PlannedStart{*cmd, 1, {}, shape->node_procs, false, shape->nodes};
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
