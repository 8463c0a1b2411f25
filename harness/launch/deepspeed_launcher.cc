// The deepspeed stack: DeepSpeed's `deepspeed` command on one node. Its
// runner (deepspeed/launcher/runner.py) starts `python -m
// deepspeed.launcher.launch` and waits for it; launch.py starts one process
// per rank with RANK, LOCAL_RANK and WORLD_SIZE set and `--local_rank=N`
// appended to the script's arguments, polls them once a second, and when
// one exits non-zero SIGTERMs every other (SIGKILL after 30 s) and exits
// with its code. Its last word, "[cmd] exits with return code = C", prints
// the command of the *last* rank it started, whichever failed. On a machine
// without GPUs DeepSpeed takes its CPU accelerator and --num_gpus is the
// number of processes.
#include <filesystem>

#include "harness/launch/observed_launcher.h"

namespace faultline::launch {
namespace {

std::string deepspeedProgram(const TorchInstall& torch) {
  return (std::filesystem::path(torch.python).parent_path() / "deepspeed").string();
}

std::vector<std::string> launchFlags(const TorchInstall& torch, int nproc, int port) {
  return {deepspeedProgram(torch), "--num_gpus", std::to_string(nproc), "--master_port", std::to_string(port)};
}

class DeepSpeedLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "deepspeed"; }

  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer || in.trainer.size() < 2) {
      return tl::unexpected(Unsupported{"deepspeed runs a Python script; this scenario's trainer is not one"});
    }
    PlannedStart p{launchFlags(*in.torch, in.scenario->stack.world_size, in.master_port), 1, {}};
    p.command.insert(p.command.end(), in.trainer.begin() + 1, in.trainer.end());
    return p;
  }

  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    auto it = torch->frameworks.find("deepspeed");
    StackOffer o{deepspeedProgram(*torch) + " (deepspeed " + (it == torch->frameworks.end() ? "?" : it->second) + ")",
                 "", {}, ""};
    auto port = findFreePort();
    o.check = launchFlags(*torch, 2, port ? *port : 29500);
    o.check.insert(o.check.end(), {"--no_python", "--no_local_rank", "/bin/true"});
    o.check_what = "a two-process deepspeed launch of /bin/true";
    return o;
  }

  // Stopped as a terminal's Ctrl-C stops it: every process at once. The
  // runner has no handler on one node and dies of the signal; launch.py
  // passes it to the ranks and waits for them; each rank dies of it.
  // (SIGTERM to the runner alone would leave launch.py and the ranks behind.)
  StopOrder stopOrder() const override { return StopOrder::kWholeTree; }

  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override {
    LauncherLog log = ObservedLauncher::ownLog(opts, layout);
    log.format = "deepspeed";
    return log;
  }
};

}  // namespace

const Launcher& deepspeedLauncher() {
  static const DeepSpeedLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
