// The torchrun-multinode stack: one torchrun agent per node, each node a
// network namespace of this machine (node_driver.cc starts them), meeting at
// node n1's address: a static rendezvous, or c10d ([stack] rendezvous) with
// n1's agent hosting the store (docs/MULTINODE.md, "torchrun across
// namespaces"). A scenario written for one node runs spread over two
// (stack_plan.cc).
#include "harness/launch/elastic_launcher.h"
#include "harness/launch/netns.h"

namespace faultline::launch {
namespace {

class TorchrunMultinodeLauncher final : public ElasticLauncher {
 public:
  std::string name() const override { return "torchrun-multinode"; }

  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (auto why = networkProblem(); !why.empty()) return tl::unexpected(Unsupported{why});
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    auto cmd = torchrunCommand(in, shape->flags);
    if (!cmd) return tl::unexpected(cmd.error());
    return PlannedStart{*cmd, 1, {}, shape->node_procs, false, shape->nodes};
  }

  StackOffer offer(const TorchInstall* torch, const std::string& scratch) const override {
    if (!torch) return {};
    if (torch->torchrun.empty()) return {torch->torchrun, "no torchrun beside " + torch->python, {}, ""};
    if (auto why = networkProblem(); !why.empty()) return {torch->torchrun, why, {}, ""};
    return {torch->torchrun, "", oneRankJob({torch->torchrun}, scratch + "/torchrun-multinode@" + torch->series),
            "a one-rank torchrun job"};
  }
};

}  // namespace

const Launcher& torchrunMultinodeLauncher() {
  static const TorchrunMultinodeLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
