// The slurm stack: one `srun` step over `[stack] nodes` nodes, each task one
// rank under `faultline agent --slurm-task` (docs/MULTINODE.md). Slurm's
// slurmstepd starts the tasks, so the ranks are found as the run's processes
// (RankDiscovery::kRunProcesses), and the job is Slurm's to end: SIGTERM to
// srun first, then scancel, and `squeue` is part of the teardown proof.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "harness/launch/clock.h"
#include "harness/launch/observed_launcher.h"
#include "harness/model/node_layout.h"

namespace faultline::launch {
namespace {

constexpr double kSlurmCommandTimeoutS = 20;

std::string partition() {
  for (const char* var : {"FAULTLINE_SLURM_PARTITION", "SLURM_PARTITION"}) {
    if (const char* v = std::getenv(var); v && *v) return v;
  }
  return "fl";
}

std::string pathVar() {
  const char* p = std::getenv("PATH");
  return p && *p ? p : "/usr/bin:/bin";
}

Result<CommandResult> runSlurmCommand(const std::string& tool, std::vector<std::string> args) {
  auto exe = resolveExecutable(tool, pathVar());
  if (!exe) return tl::unexpected(exe.error());
  args.insert(args.begin(), *exe);
  return runToCompletion(args, toEnvStrings(currentEnvironment()), kSlurmCommandTimeoutS);
}

std::string firstLine(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > 200 ? line.substr(0, 200) : line;
}

// Why no Slurm cluster can run the stack here ("" it can): asked of sinfo
// once per process, as a torch install is looked at once.
std::string clusterProblem() {
  static std::once_flag once;
  static std::string problem;
  std::call_once(once, [] {
    const std::string part = partition();
    auto r = runSlurmCommand("sinfo", {"-h", "-p", part, "-o", "%a %D"});
    if (!r) {
      problem = "no Slurm cluster: sinfo: " + r.error().str();
    } else if (!r->ok()) {
      problem = "no Slurm cluster answers (sinfo -p " + part + ": " + firstLine(r->err.empty() ? r->out : r->err) +
                "; ci/slurm-up starts one, then export SLURM_CONF)";
    } else if (r->out.rfind("up", 0) != 0) {
      problem = "Slurm partition " + part + " is not up (sinfo: '" + firstLine(r->out) + "')";
    }
  });
  return problem;
}

// The job ids the agents of this run recorded (agent_start's slurm_job).
std::set<std::string> jobIds(const RunLayout& layout) {
  std::set<std::string> ids;
  std::error_code ec;
  for (const auto& node : std::filesystem::directory_iterator(layout.nodesDir(), ec)) {
    std::error_code ec2;
    for (const auto& f : std::filesystem::directory_iterator(node.path(), ec2)) {
      if (f.path().filename().string().rfind("agent-", 0) != 0) continue;
      std::ifstream in(f.path());
      std::string line;
      if (!std::getline(in, line)) continue;  // agent_start is the first line
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("event", "") == "agent_start" && j.contains("slurm_job") && j["slurm_job"].is_string()) {
        ids.insert(j["slurm_job"].get<std::string>());
      }
    }
  }
  return ids;
}

int flagInt(const std::vector<std::string>& command, const std::string& flag) {
  const std::string v = flagValue(command, flag);
  return v.empty() ? 0 : std::atoi(v.c_str());
}

class SlurmLauncher final : public ObservedLauncher {
 public:
  std::string name() const override { return "slurm"; }
  RankDiscovery rankDiscovery() const override { return RankDiscovery::kRunProcesses; }
  StopOrder stopOrder() const override { return StopOrder::kLauncherFirst; }
  // srun passes SIGTERM to every task and waits for them (Slurm's KillWait after it).
  double launcherGraceS() const override { return 10; }
  // The task directories exist before the tasks start: srun writes each
  // task's output into its OUT/ranks/R/.
  int ranksKnownUpFront(const LaunchOptions& opts) const override {
    const int ntasks = flagInt(opts.command, "--ntasks");
    return ntasks > 0 ? ntasks : flagInt(opts.command, "--nodes") * flagInt(opts.command, "--ntasks-per-node");
  }

  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override {
    if (in.faultline_bin.empty()) return tl::unexpected(Unsupported{"the faultline binary to run as each node's agent is unknown"});
    if (auto problem = clusterProblem(); !problem.empty()) return tl::unexpected(Unsupported{problem});
    const scenario::Scenario& s = *in.scenario;
    const int nodes = s.stack.nodes;
    if (auto why = nodeLayoutProblem(s.stack.world_size, nodes); !why.empty()) return tl::unexpected(Unsupported{why});
    const std::vector<int> per_node = ranksPerNode(s.stack.world_size, nodes);
    // The same count on every node, or the whole world in srun's default block
    // distribution: consecutive tasks on a node, the first nodes one task
    // more (node_layout.h).
    const std::string tasks = per_node.front() == per_node.back()
                                  ? "--ntasks-per-node=" + std::to_string(per_node.front())
                                  : "--ntasks=" + std::to_string(s.stack.world_size);
    const std::string ranks = in.out_dir + "/ranks/%t/";
    // MASTER_ADDR: every node of this cluster is this machine; on a real
    // cluster it is the first node of the allocation (docs/MULTINODE.md).
    std::vector<std::string> cmd = {"srun",
                                    "--partition=" + partition(),
                                    "--nodes=" + std::to_string(nodes),
                                    tasks,
                                    "--kill-on-bad-exit=1",
                                    "--job-name=faultline",
                                    "--export=ALL,MASTER_ADDR=127.0.0.1,MASTER_PORT=" + std::to_string(in.master_port),
                                    "--output=" + ranks + "stdout",
                                    "--error=" + ranks + "stderr"};
    for (const auto& f : s.stack.launcher_args.value_or(std::vector<std::string>{})) cmd.push_back(f);
    cmd.insert(cmd.end(), {in.faultline_bin, "agent", "--slurm-task", "--"});
    cmd.insert(cmd.end(), in.trainer.begin(), in.trainer.end());
    return PlannedStart{cmd, 1};
  }

  StackOffer offer(const TorchInstall* torch, const std::string&) const override {
    if (!torch) return {};
    StackOffer o{"srun (Slurm partition " + partition() + ")", "", {}, ""};
    const auto srun = resolveExecutable("srun", pathVar());
    if (!srun) {
      o.problem = "no srun on PATH";
      return o;
    }
    if (auto problem = clusterProblem(); !problem.empty()) {
      o.problem = problem;
      return o;
    }
    o.check = {*srun, "--partition=" + partition(), "--nodes=1", "--ntasks=1", "/bin/true"};  // run without a PATH search
    o.check_what = "a one-task Slurm step";
    return o;
  }

  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override {
    LauncherLog log = ObservedLauncher::ownLog(opts, layout);
    log.format = "srun";
    return log;
  }

  std::vector<std::string> cancelJob(const RunLayout& layout) const override {
    std::vector<std::string> done;
    for (const auto& id : jobIds(layout)) {
      auto r = runSlurmCommand("scancel", {id});
      done.push_back("scancel " + id + (r && r->ok() ? "" : " (failed: " + (r ? firstLine(r->err) : r.error().str()) + ")"));
    }
    return done;
  }

  std::vector<std::string> residue(const RunLayout& layout) const override {
    std::vector<std::string> left;
    for (const auto& id : jobIds(layout)) {
      auto r = runSlurmCommand("squeue", {"-h", "-j", id, "-o", "%T"});
      if (!r) {
        left.push_back("slurm job " + id + ": squeue: " + r.error().str());
      } else if (r->ok() && !r->out.empty()) {
        left.push_back("slurm job " + id + ": " + firstLine(r->out));
      }
      // squeue fails for a job id the controller has forgotten: gone.
    }
    return left;
  }
};

}  // namespace

const Launcher& slurmLauncher() {
  static const SlurmLauncher kLauncher;
  return kLauncher;
}

}  // namespace faultline::launch
