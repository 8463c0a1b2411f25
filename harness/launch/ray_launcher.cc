// The ray stack: Ray Train's TorchTrainer on a local Ray cluster of its own.
// The launcher process is ray_runner.py, which does what a Ray user does on
// one machine: `ray start --head --block`, the driver script with
// RAY_ADDRESS set (its TorchTrainer.fit() runs the training function in a
// worker group of Ray actors: the ranks), then the cluster stopped. The
// actors are the raylet's children, so every rank is a descendant of the
// launcher process; they carry no RANK when they start (Ray Train sets it in
// os.environ later), and the shim names each where Ray Train's
// init_process_group(rank=R) makes it rank R. A rank that fails is Ray's to
// handle: its controller kills the worker group and either starts a new one
// (FailureConfig(max_failures=N): a restart) or raises TrainingFailedError
// from fit(), a WorkerGroupError whose "[Rank N Error Snippet]" is its blame.
// A plain torch.distributed script runs as the training function of
// ray_script.py's driver, which gives it torchrun's environment.
#include <filesystem>

#include "harness/launch/observed_launcher.h"
#include "harness/launch/script_runner.h"

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

// The cluster's temporary directory: Ray's sockets live under it, and a
// socket path has at most 107 bytes, so it is short and named by the run's
// port (unique among the runs of this host while they run).
std::string tempDirFor(int port) { return "/tmp/faultline-ray-" + std::to_string(port); }

class RayLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "ray"; }

  // A Ray Train driver of the scenario's own ([stack.command_on] ray) runs
  // with the flags Ray Train's examples take: --num-workers N
  // (ScalingConfig), and --max-failures K (FailureConfig) where the scenario
  // allows restarts. A plain trainer script runs as the training function of
  // ray_script.py's TorchTrainer, with the same two.
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer || in.trainer.size() < 2) {
      return tl::unexpected(Unsupported{"Ray Train runs Python functions; this scenario's trainer is not a Python program"});
    }
    if (!in.scenario->stack.instrument) {
      return tl::unexpected(Unsupported{"Ray's workers carry no RANK when they start: uninstrumented, faultline cannot tell its ranks apart"});
    }
    const std::string runner = in.launch_scripts_dir + "/ray_runner.py";
    std::error_code ec;
    if (in.launch_scripts_dir.empty() || !fs::exists(runner, ec)) {
      return tl::unexpected(Unsupported{"the ray runner (ray_runner.py) was not found beside faultline; "
                                        "set FAULTLINE_LAUNCH_SCRIPTS to its directory"});
    }
    std::vector<std::string> flags = {"--num-workers", std::to_string(in.scenario->stack.world_size)};
    if (in.scenario->stack.max_restarts > 0) {
      flags.insert(flags.end(), {"--max-failures", std::to_string(in.scenario->stack.max_restarts)});
    }
    std::vector<std::string> driver = in.trainer;
    if (hasOwnTrainer(in, name())) {
      driver.insert(driver.end(), flags.begin(), flags.end());
    } else {
      auto script = scriptRunnerCommand(in, "ray_script.py", flags, name());
      if (!script) return tl::unexpected(script.error());
      driver = std::move(*script);
    }
    PlannedStart p{{in.trainer[0], runner, "--port", std::to_string(in.master_port), "--num-cpus",
                    std::to_string(in.scenario->stack.world_size), "--temp-dir", tempDirFor(in.master_port),
                    "--logs-to", in.out_dir + "/launcher/ray"},
                   1,
                   {}};
    p.command.insert(p.command.end(), driver.begin(), driver.end());
    return p;
  }

  // Ray Train imports: starting a cluster to check would take seconds.
  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    auto it = torch->frameworks.find("ray");
    const std::string ray = (fs::path(torch->python).parent_path() / "ray").string();
    StackOffer o{ray + " (ray " + (it == torch->frameworks.end() ? "?" : it->second) + ", Ray Train's TorchTrainer)",
                 "", {}, ""};
    o.check = {torch->python, "-c", "import ray.train.torch, torch.distributed as d; assert d.is_gloo_available()"};
    o.check_what = "import ray.train.torch";
    return o;
  }

  // Stopped as a user stops it (Ctrl-C, a scheduler's SIGTERM): the signal
  // to the runner, which passes it to the driver and stops the cluster (its
  // processes SIGTERMed, then SIGKILLed); the rest after the grace.
  StopOrder stopOrder() const override { return StopOrder::kLauncherFirst; }
  double launcherGraceS() const override { return 15; }

  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override {
    LauncherLog log = ObservedLauncher::ownLog(opts, layout);
    log.format = "ray";
    return log;
  }

  // What the cluster left beside processes (the teardown proves every one of
  // them gone, and their ports closed with them): its temporary directory,
  // removed here.
  std::vector<std::string> finish(const LaunchOptions& opts) const override {
    const std::string dir = flagValue(opts.command, "--temp-dir");
    std::error_code ec;
    if (dir.empty() || !fs::exists(dir, ec)) return {};
    fs::remove_all(dir, ec);
    return {"ray temp dir " + dir + " left (removed)"};
  }
};

}  // namespace

const Launcher& rayLauncher() {
  static const RayLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
