// The spawn stack: torch.multiprocessing.spawn, observed black-box like any
// launcher (the shim gives each child FAULTLINE_RANK, since spawn sets no RANK).
//
// A scenario written for spawn (`launcher = "spawn"`) runs its own program,
// which calls spawn itself. Any other Python trainer is a script each rank
// runs; spawn runs a function, so the stack runs the script as the spawned
// function through spawn_runner.py (the robust-script pattern: torchrun's
// environment in each child, try/finally, destroy_process_group, join=True).
#include <filesystem>

#include "harness/launch/observed_launcher.h"

namespace faultline::launch {
namespace {

// The trainer's interpreter options ("-u", "-X dev") stay the interpreter's;
// what follows is the script or `-m MODULE`, then its arguments.
tl::expected<std::vector<std::string>, Unsupported> runnerCommand(const PlanInput& in) {
  const std::vector<std::string>& t = in.trainer;
  const std::string runner = in.launch_scripts_dir + "/spawn_runner.py";
  std::error_code ec;
  if (in.launch_scripts_dir.empty() || !std::filesystem::exists(runner, ec)) {
    return tl::unexpected(Unsupported{"the spawn runner (spawn_runner.py) was not found beside faultline; "
                                      "set FAULTLINE_LAUNCH_SCRIPTS to its directory"});
  }
  std::vector<std::string> cmd = {t[0]};
  size_t i = 1;
  for (; i < t.size() && t[i].size() > 1 && t[i][0] == '-' && t[i] != "-m"; ++i) {
    if (t[i] == "-c") {
      return tl::unexpected(Unsupported{"the trainer is `python -c` code; the spawn stack runs a script or a module as each rank"});
    }
    cmd.push_back(t[i]);
    if ((t[i] == "-X" || t[i] == "-W") && i + 1 < t.size()) cmd.push_back(t[++i]);
  }
  if (i >= t.size()) return tl::unexpected(Unsupported{"the trainer names no script for the spawn stack to run"});
  cmd.insert(cmd.end(), {runner, "--nprocs", std::to_string(in.scenario->stack.world_size), "--port",
                         std::to_string(in.master_port)});
  cmd.insert(cmd.end(), t.begin() + static_cast<std::ptrdiff_t>(i), t.end());
  return cmd;
}

class SpawnLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "spawn"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (in.reference_trainer) {
      return tl::unexpected(Unsupported{"spawn runs a Python function in each child; the reference trainer is a C++ program"});
    }
    if (!in.scenario->stack.instrument) {
      return tl::unexpected(Unsupported{"spawn's children carry no RANK: uninstrumented, faultline cannot tell its ranks apart"});
    }
    if (in.scenario->stack.launcher == name()) return PlannedStart{in.trainer, 1};
    if (!in.python_trainer) {
      return tl::unexpected(Unsupported{"spawn runs Python functions; this scenario's trainer is not a Python program"});
    }
    auto cmd = runnerCommand(in);
    if (!cmd) return tl::unexpected(cmd.error());
    return PlannedStart{*cmd, 1};
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
