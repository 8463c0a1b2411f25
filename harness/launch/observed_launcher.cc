// A launcher process observed black-box: started once, ranks found later by the supervisor.
#include "harness/launch/observed_launcher.h"

#include "harness/launch/clock.h"

namespace faultline::launch {

Result<Started> ObservedLauncher::startCommand(const LaunchOptions& opts, const RunLayout& layout,
                                               const Placement& placement) {
  if (opts.command.empty()) return fail(ErrorCode::kBadUsage, "no command given");
  // The launcher carries the instruments so that every process it starts inherits them.
  const Environment base = withInstruments(currentEnvironment(), opts.instruments);
  auto exe = resolveExecutable(opts.command[0], base.count("PATH") ? base.at("PATH") : "/usr/bin:/bin");
  if (!exe) return tl::unexpected(exe.error());
  if (auto r = createRunDirs(layout, 0); !r) return tl::unexpected(r.error());
  if (auto r = createLauncherDir(layout); !r) return tl::unexpected(r.error());
  SpawnSpec spec;
  spec.executable = *exe;
  spec.argv = opts.command;
  spec.env = toEnvStrings(launcherEnvironment(base, layout, opts.run_id));
  applyEnv(spec.env, opts.env);
  spec.stdout_path = layout.launcherStdout();
  spec.stderr_path = layout.launcherStderr();
  const int64_t t = realtimeNs();
  auto pid = spawnProcess(spec, placement);
  if (!pid) return tl::unexpected(pid.error());
  Started out;
  out.launcher = LaunchedProcess{std::nullopt, *pid, t};
  return out;
}

LauncherLog ObservedLauncher::ownLog(const LaunchOptions&, const RunLayout& layout) const {
  return {layout.launcherStdout(), layout.launcherStderr(), "", "plain"};
}

std::string flagValue(const std::vector<std::string>& command, const std::string& flag) {
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] == flag && i + 1 < command.size()) return command[i + 1];
    if (command[i].rfind(flag + "=", 0) == 0) return command[i].substr(flag.size() + 1);
  }
  return "";
}

}  // namespace faultline::launch
