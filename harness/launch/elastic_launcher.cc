// torchelastic's flags and log, shared by torchrun and torch.distributed.launch.
#include "harness/launch/elastic_launcher.h"

namespace faultline::launch {

std::vector<std::string> elasticLogFlags(const std::string& out_dir) {
  return {"--redirects", "2", "--tee", "2", "--log_dir", out_dir + "/launcher/logs"};
}

LauncherLog ElasticLauncher::ownLog(const LaunchOptions& opts, const RunLayout& layout) const {
  LauncherLog log = ObservedLauncher::ownLog(opts, layout);
  log.log_dir = flagValue(opts.command, "--log_dir");
  if (log.log_dir.empty()) log.log_dir = flagValue(opts.command, "--log-dir");
  log.format = "torchelastic";
  return log;
}

}  // namespace faultline::launch
