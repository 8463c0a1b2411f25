// Scenario x stack -> the command line to launch.
#include "harness/launch/stack_plan.h"

#include <algorithm>
#include <filesystem>

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

bool isPython(const std::string& program) {
  const std::string name = fs::path(program).filename().string();
  return name.rfind("python", 0) == 0;
}

// Arguments that name files relative to the scenario tree become absolute, so
// a suite runs the same from any working directory.
std::vector<std::string> resolvePaths(std::vector<std::string> args, const std::string& base_dir) {
  for (auto& a : args) {
    if (a.empty() || a[0] == '-' || a[0] == '/' || a.find('/') == std::string::npos) continue;
    const fs::path candidate = fs::path(base_dir) / a;
    if (!fs::exists(a) && fs::exists(candidate)) a = fs::absolute(candidate).lexically_normal().string();
  }
  return args;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::vector<std::string> faultArgs(const scenario::Scenario& s) {
  if (!s.fault || s.fault->kind.empty()) return {};
  std::vector<std::string> out = {"--fault", s.fault->kind, "--fault-rank",
                                  s.fault->rank ? std::to_string(*s.fault->rank) : "all", "--fault-step",
                                  std::to_string(s.fault->step)};
  if (!s.fault->arg.empty()) out.insert(out.end(), {"--fault-arg", s.fault->arg});
  return out;
}

StackPlan planStack(const scenario::Scenario& s, const std::string& stack_in, const Tools& tools,
                    const std::string& out_dir, int master_port, const std::string& base_dir) {
  StackPlan plan;
  plan.stack = stack_in.empty() ? s.stack.launcher : stack_in;
  const std::string& stack = plan.stack;
  const auto& allowed = s.stack.stacks.empty() ? std::vector<std::string>{s.stack.launcher} : s.stack.stacks;
  if (std::find(allowed.begin(), allowed.end(), stack) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    plan.unsupported = "scenario '" + s.name + "' applies to the stacks " + list + ", not " + stack;
    return plan;
  }
  const bool reference = s.stack.trainer == "reference";
  // The trainer command as a rank runs it.
  std::vector<std::string> trainer =
      reference ? concat(concat({tools.trainer}, s.stack.args), faultArgs(s))
                : concat(resolvePaths(s.stack.command, base_dir), s.stack.args);
  if (!reference && !trainer.empty() && isPython(trainer[0])) trainer[0] = tools.python;
  const std::string world = std::to_string(s.stack.world_size);
  const std::string port = std::to_string(master_port);
  LaunchOptions& l = plan.launch;
  if (s.fault && !s.fault->inject.empty()) l.env["FAULTLINE_INJECT"] = s.fault->inject;
  l.instruments = tools.instruments;

  if (stack == "builtin") {
    l.kind = LauncherKind::kBuiltin;
    l.nproc = s.stack.world_size;
    l.command = trainer;
  } else if (stack == "torchrun") {
    l.kind = LauncherKind::kExternal;
    // Debian's torchrun 1.13 on Python 3.11 crashes in option parsing with its
    // default --redirects/--tee (and with 0 or 3); 2/2 works and keeps per-rank
    // stderr logs, which are rank evidence.
    std::vector<std::string> flags = s.stack.launcher_args.value_or(
        std::vector<std::string>{"--redirects", "2", "--tee", "2", "--log_dir", out_dir + "/launcher/logs"});
    std::vector<std::string> cmd = {tools.torchrun, "--nproc_per_node=" + world, "--master_port=" + port};
    cmd = concat(cmd, flags);
    if (!trainer.empty() && isPython(trainer[0])) {
      trainer.erase(trainer.begin());  // torchrun runs the script with its own interpreter
    } else {
      cmd.push_back("--no_python");
    }
    l.command = concat(cmd, trainer);
  } else if (stack == "launch") {
    if (reference || trainer.empty() || !isPython(trainer[0])) {
      plan.unsupported = "torch.distributed.launch runs Python trainers; this scenario's trainer is not one";
      return plan;
    }
    l.kind = LauncherKind::kExternal;
    std::vector<std::string> cmd = {tools.python, "-m", "torch.distributed.launch", "--use_env",
                                    "--nproc_per_node=" + world, "--master_port=" + port};
    cmd = concat(cmd, s.stack.launcher_args.value_or(std::vector<std::string>{}));
    l.command = concat(cmd, std::vector<std::string>(trainer.begin() + 1, trainer.end()));
  } else if (stack == "spawn" || stack == "external") {
    if (reference) {
      plan.unsupported = "the " + stack + " stack runs a command that launches itself; the reference trainer needs a launcher";
      return plan;
    }
    l.kind = LauncherKind::kExternal;
    l.command = trainer;
  }
  return plan;
}

}  // namespace faultline::launch
