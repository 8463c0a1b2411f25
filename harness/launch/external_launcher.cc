// The external launcher: COMMAND once; its ranks are found later by the supervisor.
#include "harness/launch/launcher.h"

#include "harness/launch/clock.h"

namespace faultline::launch {

Result<LaunchedProcess> launchExternal(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) {
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
  return LaunchedProcess{std::nullopt, *pid, t};
}

}  // namespace faultline::launch
