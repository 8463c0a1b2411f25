// The launch stack: `python -m torch.distributed.launch --use_env`, the
// launcher torch deprecated in 2.0 (gone from newer releases). It runs Python
// trainers, and the reference trainer with --no_python; a scenario of several
// nodes with one launch agent per node (--nnodes, --node_rank, --master_addr:
// torchelastic's options, which launch parses on 1.13 and 2.x alike).
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {
namespace {

class DistributedLaunchLauncher final : public ElasticLauncher {
 public:
  std::string name() const override { return "launch"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer && !in.reference_trainer) {
      return tl::unexpected(Unsupported{"torch.distributed.launch runs Python trainers and programs of the torch it "
                                        "ships with (--no_python); this scenario's trainer is neither"});
    }
    const TorchInstall& torch = *in.torch;
    if (!torch.has_launch) return tl::unexpected(Unsupported{"torch " + torch.version + " no longer ships torch.distributed.launch"});
    const scenario::Scenario& s = *in.scenario;
    // A scenario of several nodes: --nnodes, one agent per node (node_driver.cc).
    auto shape = nodeShape(s.stack);
    if (!shape) return tl::unexpected(shape.error());
    std::vector<std::string> cmd = {torch.python, "-m", "torch.distributed.launch", "--use_env"};
    cmd.insert(cmd.end(), shape->flags.begin(), shape->flags.end());
    for (const auto& f : rendezvousFlags(s.stack, in.master_port)) cmd.push_back(f);
    for (const auto& f : restartFlags(s.stack)) cmd.push_back(f);
    // launch parses torchrun's options (1.13's launch crashes on the same defaults).
    for (const auto& f : s.stack.launcher_args.value_or(elasticLogFlags(in.out_dir))) cmd.push_back(f);
    // A Python trainer runs under launch's own interpreter (its first word goes);
    // the reference trainer is a program of its own (--no_python).
    if (in.reference_trainer) {
      cmd.push_back("--no_python");
      cmd.insert(cmd.end(), in.trainer.begin(), in.trainer.end());
    } else {
      cmd.insert(cmd.end(), in.trainer.begin() + 1, in.trainer.end());
    }
    return PlannedStart{cmd, 1, {}, shape->node_procs, false, shape->nodes};
  }
  StackOffer offer(const TorchInstall* torch, const std::string& scratch) const override {
    if (!torch) return {};
    StackOffer o{torch->python + " -m torch.distributed.launch", "", {}, ""};
    if (!torch->has_launch) {
      o.problem = "torch " + torch->version + " no longer ships torch.distributed.launch";
      return o;
    }
    o.check = oneRankJob({torch->python, "-m", "torch.distributed.launch", "--use_env"}, scratch + "/launch@" + torch->series);
    o.check_what = "a one-rank torch.distributed.launch job";
    return o;
  }
};

}  // namespace

const Launcher& distributedLaunchLauncher() {
  static const DistributedLaunchLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
