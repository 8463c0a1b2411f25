// torchelastic's flags and log, shared by torchrun and torch.distributed.launch.
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {

std::string elasticLogDir(const std::string& out_dir) { return out_dir + "/launcher/logs"; }

std::vector<std::string> elasticLogFlags(const std::string& out_dir) {
  return {"--redirects", "2", "--tee", "2", "--log_dir", elasticLogDir(out_dir)};
}

std::vector<std::string> restartFlags(const scenario::Stack& stack) {
  // The spelling both torch 1.13's torchrun and torch.distributed.launch take.
  if (stack.max_restarts <= 0) return {};
  return {"--max_restarts=" + std::to_string(stack.max_restarts)};
}

std::vector<std::string> rendezvousFlags(const scenario::Stack& stack, int port) {
  if (stack.rendezvous == "c10d") return {"--rdzv_backend=c10d", "--rdzv_endpoint=127.0.0.1:" + std::to_string(port)};
  return {"--master_port=" + std::to_string(port)};
}

tl::expected<std::vector<std::string>, Unsupported> torchrunCommand(const PlanInput& in,
                                                                    const std::vector<std::string>& shape) {
  const TorchInstall& torch = *in.torch;
  if (torch.torchrun.empty()) {
    return tl::unexpected(Unsupported{"torch " + torch.version + " at " + torch.python + " has no torchrun beside it"});
  }
  std::vector<std::string> cmd = {torch.torchrun};
  cmd.insert(cmd.end(), shape.begin(), shape.end());
  for (const auto& f : rendezvousFlags(in.scenario->stack, in.master_port)) cmd.push_back(f);
  for (const auto& f : restartFlags(in.scenario->stack)) cmd.push_back(f);
  for (const auto& f : in.scenario->stack.launcher_args.value_or(elasticLogFlags(in.out_dir))) cmd.push_back(f);
  auto trainer = in.trainer;
  if (in.python_trainer) {
    trainer.erase(trainer.begin());  // torchrun runs the script with its own interpreter
  } else {
    cmd.push_back("--no_python");
  }
  cmd.insert(cmd.end(), trainer.begin(), trainer.end());
  return cmd;
}

std::vector<std::string> oneRankJob(std::vector<std::string> launcher, const std::string& logs) {
  auto port = findFreePort();
  launcher.insert(launcher.end(), {"--nproc_per_node=1", "--master_port=" + std::to_string(port ? *port : 29500)});
  for (auto& f : elasticLogFlags(logs)) launcher.push_back(f);
  launcher.insert(launcher.end(), {"--no_python", "/bin/true"});
  return launcher;
}

LauncherLog ElasticLauncher::ownLog(const LaunchOptions& opts, const RunLayout& layout) const {
  LauncherLog log = ObservedLauncher::ownLog(opts, layout);
  log.log_dir = flagValue(opts.command, "--log_dir");
  if (log.log_dir.empty()) log.log_dir = flagValue(opts.command, "--log-dir");
  log.format = "torchelastic";
  return log;
}

}  // namespace faultline::launch
