#include "harness/launch/script_runner.h"

#include <filesystem>

namespace faultline::launch {

bool hasOwnTrainer(const PlanInput& in, const std::string& stack) {
  return in.scenario->stack.launcher == stack || in.scenario->stack.command_on.count(stack) > 0;
}

namespace {

// The runner's path in `scripts_dir`, or why there is none.
tl::expected<std::string, Unsupported> runnerPath(const std::string& scripts_dir, const std::string& runner,
                                                  const std::string& what) {
  const std::string path = scripts_dir + "/" + runner;
  std::error_code ec;
  if (scripts_dir.empty() || !std::filesystem::exists(path, ec)) {
    return tl::unexpected(Unsupported{"the " + what + " runner (" + runner + ") was not found beside faultline; "
                                      "set FAULTLINE_LAUNCH_SCRIPTS to its directory"});
  }
  return path;
}

}  // namespace

tl::expected<std::vector<std::string>, Unsupported> referenceTrainerScript(const std::vector<std::string>& trainer,
                                                                            const std::string& python,
                                                                            const std::string& scripts_dir) {
  auto runner = runnerPath(scripts_dir, "reference_trainer.py", "reference trainer's");
  if (!runner) return tl::unexpected(runner.error());
  std::error_code ec;
  const std::filesystem::path program = std::filesystem::weakly_canonical(trainer.at(0), ec);
  const std::filesystem::path library = program.parent_path() / ("lib" + program.filename().string() + ".so");
  if (ec || !std::filesystem::exists(library, ec)) {
    return tl::unexpected(Unsupported{"the reference trainer's library (" + library.filename().string() +
                                      ") was not built beside " + trainer.at(0) +
                                      "; a Python rank calls the trainer there"});
  }
  std::vector<std::string> cmd = {python, *runner, library.string()};
  cmd.insert(cmd.end(), trainer.begin() + 1, trainer.end());
  return cmd;
}

tl::expected<std::vector<std::string>, Unsupported> scriptRunnerCommand(const PlanInput& in, const std::string& runner,
                                                                         const std::vector<std::string>& runner_args,
                                                                         const std::string& stack) {
  const std::vector<std::string>& t = in.trainer;
  auto path = runnerPath(in.launch_scripts_dir, runner, stack);
  if (!path) return tl::unexpected(path.error());
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
  cmd.push_back(*path);
  cmd.insert(cmd.end(), runner_args.begin(), runner_args.end());
  cmd.insert(cmd.end(), t.begin() + static_cast<std::ptrdiff_t>(i), t.end());
  return cmd;
}

}  // namespace faultline::launch
