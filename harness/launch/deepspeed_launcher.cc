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
#include <algorithm>
#include <filesystem>

#include <unistd.h>

#include "harness/launch/observed_launcher.h"
#include "harness/model/atomic_file.h"

namespace faultline::launch {
namespace {

std::string deepspeedProgram(const TorchInstall& torch) {
  return (std::filesystem::path(torch.python).parent_path() / "deepspeed").string();
}

// Whether the scenario's trainer on this stack was written for DeepSpeed: a
// command of its own for deepspeed, or a scenario of deepspeed's alone.
bool writtenForDeepSpeed(const scenario::Stack& stack) {
  if (stack.command_on.count("deepspeed")) return true;
  const auto on = stack.entries();
  return std::all_of(on.begin(), on.end(), [](const std::string& e) { return e.substr(0, e.find('@')) == "deepspeed"; });
}

// The master port a deepspeed command line gives; DeepSpeed's default,
// 29500, without one.
std::string masterPort(const std::vector<std::string>& command) {
  const std::string port = flagValue(command, "--master_port");
  return port.empty() ? "29500" : port;
}

// The hostfile of a run across nodes: "nK slots=P" a line, which the runner
// reads for the nodes and their processes (it resolves no name with --no_ssh).
std::string hostfilePath(const std::string& out_dir) { return RunLayout(out_dir).launcherDir() + "/hostfile"; }

std::vector<std::string> launchFlags(const TorchInstall& torch, int nproc, int port) {
  return {deepspeedProgram(torch), "--num_gpus", std::to_string(nproc), "--master_port", std::to_string(port)};
}

std::vector<std::string> removeLeftBuffers(const std::vector<std::string>& command, const std::string& shm_dir) {
  const std::string prefix = "deepspeed_allreduce_buffer_" + std::to_string(::getuid()) + "_";
  const std::string port = "_" + masterPort(command) + "_";
  std::vector<std::string> left;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(shm_dir, ec)) {
    const std::string name = f.path().filename().string();
    const auto at = name.rfind(port);
    if (name.rfind(prefix, 0) != 0 || at == std::string::npos || at + port.size() == name.size()) continue;
    const std::string rank = name.substr(at + port.size());
    if (!std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    left.push_back("shm:" + f.path().string() + " (left behind)");
    std::filesystem::remove(f.path(), ec);
  }
  return left;
}

class DeepSpeedLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "deepspeed"; }

  // A script written for DeepSpeed (the scenario's command for this stack)
  // takes the --local_rank=N the launcher appends, as DeepSpeed's examples
  // do. Any other script was written for torchrun: it reads LOCAL_RANK from
  // the environment and its argument parser may refuse the flag, so it runs
  // as DeepSpeed's users run one, with --no_local_rank. The reference
  // trainer is a program (--no_python).
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (!in.python_trainer && !in.reference_trainer) {
      return tl::unexpected(Unsupported{"deepspeed runs a Python script or, with --no_python, a program of the torch "
                                        "it runs at; this scenario's trainer is neither"});
    }
    // A scenario of several nodes: the runner on each node, without ssh
    // (--no_ssh: it starts launch.py for its own node, --node_rank=K, and
    // node n1's --master_addr, node_driver.cc), the nodes named in a
    // hostfile of the run (OUT/launcher/hostfile, written by start()), as
    // DeepSpeed's users run it where ssh between nodes is not allowed.
    auto shape = nodeShape(in.scenario->stack);
    if (!shape) return tl::unexpected(shape.error());
    PlannedStart p{launchFlags(*in.torch, shape->per_node, in.master_port), 1, {}};
    if (shape->nodes > 1) {
      p.command.insert(p.command.begin() + 1, {"--num_nodes=" + std::to_string(shape->nodes), "--hostfile",
                                               hostfilePath(in.out_dir), "--no_ssh"});
      p.nodes = shape->nodes;
    }
    // Each rank's output in a file of its own (launch.py's
    // --enable_each_rank_log: STAMP_rankR.log, stdout and stderr together),
    // where the diagnosis reads what a rank printed before it exited
    // (argparse's error, a loader's "symbol lookup error"): on the
    // launcher's console the ranks' lines carry no rank.
    p.command.push_back("--enable_each_rank_log=" + RunLayout(in.out_dir).launcherRankLogsDir());
    if (in.reference_trainer) p.command.push_back("--no_python");
    if (!writtenForDeepSpeed(in.scenario->stack)) p.command.push_back("--no_local_rank");
    p.command.insert(p.command.end(), in.trainer.begin() + (in.reference_trainer ? 0 : 1), in.trainer.end());
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

  // DeepSpeed's CPU all-reduce names its /dev/shm buffers for the run
  // (shm.cpp: deepspeed_allreduce_buffer_UID_ADDR_PORT_RANK, PORT the
  // master port), and no exit removes them. The leak check names those a rank
  // was seen holding (at its first step); a rank that died before that left
  // its buffer unseen. Found here by its name, removed, and named.
  std::vector<std::string> finish(const LaunchOptions& opts) const override {
    std::vector<std::string> left = ObservedLauncher::finish(opts);  // its nodes' namespaces, where it had nodes
    for (auto& l : removeLeftBuffers(opts.command, "/dev/shm")) left.push_back(std::move(l));
    return left;
  }

  // Across nodes: the hostfile first (its path is in the command line), then the nodes.
  Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const override {
    if (opts.nodes > 1) {
      const std::string procs = flagValue(opts.command, "--num_gpus");
      std::string hosts;
      for (int k = 1; k <= opts.nodes; ++k) hosts += "n" + std::to_string(k) + " slots=" + procs + "\n";
      if (auto r = createLauncherDir(layout); !r) return tl::unexpected(r.error());
      if (auto r = writeFileAtomically(flagValue(opts.command, "--hostfile"), hosts); !r) return tl::unexpected(r.error());
    }
    return ObservedLauncher::start(opts, layout, placement);
  }

  NodePlace nodePlace() const override { return {"--num_nodes=", "--node_rank", "--master_addr"}; }

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
