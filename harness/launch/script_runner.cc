#include "harness/launch/script_runner.h"

#include <filesystem>

namespace faultline::launch {

bool hasOwnTrainer(const PlanInput& in, const std::string& stack) {
  return in.scenario->stack.launcher == stack || in.scenario->stack.command_on.count(stack) > 0;
}

tl::expected<std::vector<std::string>, Unsupported> scriptRunnerCommand(const PlanInput& in, const std::string& runner,
                                                                         const std::vector<std::string>& runner_args,
                                                                         const std::string& stack) {
  const std::vector<std::string>& t = in.trainer;
  const std::string path = in.launch_scripts_dir + "/" + runner;
  std::error_code ec;
  if (in.launch_scripts_dir.empty() || !std::filesystem::exists(path, ec)) {
    return tl::unexpected(Unsupported{"the " + stack + " runner (" + runner + ") was not found beside faultline; "
                                      "set FAULTLINE_LAUNCH_SCRIPTS to its directory"});
  }
  std::vector<std::string> cmd = {t[0]};
  size_t i = 1;
  for (; i < t.size() && t[i].size() > 1 && t[i][0] == '-' && t[i] != "-m"; ++i) {
    if (t[i] == "-c") {
      return tl::unexpected(Unsupported{"the trainer is `python -c` code; the " + stack +
                                        " stack runs a script or a module as each rank"});
    }
    cmd.push_back(t[i]);
    if ((t[i] == "-X" || t[i] == "-W") && i + 1 < t.size()) cmd.push_back(t[++i]);
  }
  if (i >= t.size()) return tl::unexpected(Unsupported{"the trainer names no script for the " + stack + " stack to run"});
  cmd.push_back(path);
  cmd.insert(cmd.end(), runner_args.begin(), runner_args.end());
  cmd.insert(cmd.end(), t.begin() + static_cast<std::ptrdiff_t>(i), t.end());
  return cmd;
}

}  // namespace faultline::launch
