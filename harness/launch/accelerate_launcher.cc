// The accelerate stack: HuggingFace's `accelerate launch`. With
// --multi_gpu --num_processes N it runs torch.distributed.run in its own
// process (accelerate/commands/launch.py, multi_gpu_launcher), so its ranks
// carry RANK like torchrun's, and what it prints on a failure is
// torchelastic's ChildFailedError block. On CPU the flag means only "N
// processes"; its --cpu path starts one process whatever --num_processes
// says, which is no multi-rank stack.
#include <filesystem>

#include "harness/launch/elastic_launcher.h"
#include "harness/launch/netns.h"

namespace faultline::launch {
namespace {

std::string accelerateProgram(const TorchInstall& torch) {
  return (std::filesystem::path(torch.python).parent_path() / "accelerate").string();
}

// accelerate launch's flags for N processes in all on `machines` machines
// at `port`, every value it would otherwise take from a config file (or
// warn about) given. Across machines each is told its place
// (--machine_rank, --main_process_ip: node_driver.cc) before --num_machines.
std::vector<std::string> launchFlags(const TorchInstall& torch, int nproc, int port, int machines = 1) {
  return {accelerateProgram(torch), "launch", "--multi_gpu", "--num_processes", std::to_string(nproc), "--num_machines",
          std::to_string(machines), "--main_process_port", std::to_string(port), "--mixed_precision", "no",
          "--dynamo_backend", "no"};
}

// Whether `accelerate launch ...` takes its --cpu path: the flag among
// accelerate's own arguments (before the script), not the script's.
bool cpuPath(const std::vector<std::string>& command) {
  for (const std::string& arg : command) {
    if (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) return false;  // the script
    if (arg == "--cpu" || arg == "--cpu=true" || arg == "--cpu=True") return true;
  }
  return false;
}

class AccelerateLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "accelerate"; }

  // A Python script runs under accelerate's interpreter (its first word
  // goes), as `accelerate launch train.py` runs it, whether or not it uses
  // accelerate's API; the reference trainer is a program (--no_python). A
  // scenario that allows restarts passes them on (--max_restarts: its
  // in-process torchrun agent restarts every rank, as torchrun's does).
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer && !in.reference_trainer) {
      return tl::unexpected(Unsupported{"accelerate launch runs a Python script or, with --no_python, a program of the "
                                        "torch it runs at; this scenario's trainer is neither"});
    }
    const int n = in.scenario->stack.world_size;
    if (n < 2) return tl::unexpected(Unsupported{"accelerate launch --multi_gpu needs at least 2 processes"});
    // A scenario of several nodes: one accelerate launch per machine, each
    // running num_processes / num_machines of them.
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    if (shape->nodes > 1 && in.scenario->stack.rendezvous == "c10d") {
      return tl::unexpected(Unsupported{"rendezvous c10d across machines: accelerate's agents would meet at "
                                        "--main_process_ip, which faultline does not set up for it"});
    }
    PlannedStart p{launchFlags(*in.torch, n, in.master_port, shape->nodes), 1, {}};
    p.nodes = shape->nodes;
    // Each rank's output in its own file, as the torchrun stack's
    // (elasticLogFlags, less --redirects, which accelerate does not take):
    // its agent writes OUT/launcher/logs/RUN/attempt_K/R/std{out,err}.log,
    // where the diagnosis reads what a rank printed before it exited
    // (argparse's error, a launcher-level message). --tee keeps them on
    // accelerate's console too, as its users see them.
    p.command.insert(p.command.end(), {"--tee", "2", "--log_dir", elasticLogDir(in.out_dir)});
    if (in.scenario->stack.max_restarts > 0) {
      p.command.insert(p.command.end(), {"--max_restarts", std::to_string(in.scenario->stack.max_restarts)});
    }
    // A c10d rendezvous: accelerate gives a one-machine job's agent no
    // endpoint, and torch's default is localhost:29400, the same port for
    // every such job on the machine. So the run gets a network namespace of
    // its own (netns.h, one node), as a job in a container of its own has:
    // the port is its alone.
    if (in.scenario->stack.rendezvous == "c10d") {
      if (auto why = networkProblem(); !why.empty()) {
        return tl::unexpected(Unsupported{"rendezvous c10d: accelerate's agent meets at localhost:29400, which a run "
                                          "needs a network namespace of its own for, and " + why});
      }
      p.command.insert(p.command.end(), {"--rdzv_backend", "c10d"});
      p.own_network = true;
    }
    if (in.reference_trainer) {
      p.command.push_back("--no_python");
      p.command.insert(p.command.end(), in.trainer.begin(), in.trainer.end());
    } else {
      p.command.insert(p.command.end(), in.trainer.begin() + 1, in.trainer.end());
    }
    return p;
  }

  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    auto it = torch->frameworks.find("accelerate");
    StackOffer o{accelerateProgram(*torch) + " launch (accelerate " + (it == torch->frameworks.end() ? "?" : it->second) + ")",
                 "", {}, ""};
    auto port = findFreePort();
    o.check = launchFlags(*torch, 2, port ? *port : 29500);
    o.check.insert(o.check.begin() + 2, "--no_python");
    o.check.push_back("/bin/true");
    o.check_what = "a two-process accelerate launch of /bin/true";
    return o;
  }

  // `accelerate launch --cpu` runs the script once, in a single process that
  // joins no process group, whatever --num_processes says: there are no ranks
  // to find, and a run of it would end "diagnosed" with none. Said up front.
  Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const override {
    if (cpuPath(opts.command)) {
      return fail(ErrorCode::kBadUsage,
                  "accelerate launch --cpu starts one process whatever --num_processes says: no ranks to observe; "
                  "use --multi_gpu --num_processes N, which starts N processes on CPU too");
    }
    if (!opts.own_network) return ObservedLauncher::start(opts, layout, placement);
    (void)sweepStaleNetworks();
    const RunNetwork net = planNetwork(opts.run_id, 1);
    if (auto r = createNetwork(net); !r) return tl::unexpected(r.error());
    LaunchOptions inside = opts;
    inside.command.insert(inside.command.begin(), {ipCommand(), "netns", "exec", net.nodes.front().netns});
    auto started = ObservedLauncher::start(inside, layout, placement);
    if (!started) (void)removeNetwork(net);
    return started;
  }

  // The run's own network namespace, where it had one: removed, and what is left said.
  std::vector<std::string> finish(const LaunchOptions& opts) const override {
    if (!opts.own_network) return ObservedLauncher::finish(opts);  // its nodes' namespaces, where it had nodes
    return tearDownNetwork(planNetwork(opts.run_id, 1));
  }

  NodePlace nodePlace() const override { return {"--num_machines", "--machine_rank", "--main_process_ip"}; }

  // Stopped as its users stop it (Ctrl-C, a scheduler's SIGTERM): the
  // signal to accelerate's process, whose in-process torchrun agent passes it
  // on to the ranks, waits for them and exits. It is a heavy process (accelerate,
  // huggingface_hub and torch imported) and took 1.2 to 2.3 s to exit on an
  // idle 2-core machine; every process of the run at once, as for torchrun,
  // left it over a 3-s grace under load.
  StopOrder stopOrder() const override { return StopOrder::kLauncherFirst; }
  double launcherGraceS() const override { return 10; }

  // Its torchrun prints torchelastic's failure block on its own stderr.
  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override {
    LauncherLog log = ObservedLauncher::ownLog(opts, layout);
    log.format = "torchelastic";
    return log;
  }
};

}  // namespace

const Launcher& accelerateLauncher() {
  static const AccelerateLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
