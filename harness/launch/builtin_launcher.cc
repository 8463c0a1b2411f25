// The builtin launcher: N ranks with the torchrun environment, no pipes; an
// attempt of them at a time, where the run restarts (watch_loop.cc).
#include "harness/launch/builtin_launcher.h"

#include <optional>
#include <utility>

#include "harness/launch/clock.h"

namespace faultline::launch {

tl::expected<PlannedStart, Unsupported> BuiltinLauncher::plan(const PlanInput& in) const {
  return PlannedStart{in.trainer, in.scenario->stack.world_size};
}

StackOffer BuiltinLauncher::offer(const TorchInstall* torch, const std::string&) const {
  StackOffer o;
  if (!torch) return o;
  o.program = "faultline's launcher; Python trainers on " + torch->python;
  if (torch->trainer.empty()) {
    o.problem = "Python trainers only: no reference trainer built against torch " + torch->series +
                " (faultline-trainer-torch" + torch->series + ")";
  } else {
    o.program += "; reference trainer " + torch->trainer;
  }
  return o;
}

Result<Started> BuiltinLauncher::start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const {
  if (opts.command.empty()) return fail(ErrorCode::kBadUsage, "no command given");
  if (opts.nproc < 1) return fail(ErrorCode::kBadUsage, "--nproc must be at least 1");
  const Environment base = withInstruments(currentEnvironment(), opts.instruments);
  auto exe = resolveExecutable(opts.command[0], base.count("PATH") ? base.at("PATH") : "/usr/bin:/bin");
  if (!exe) return tl::unexpected(exe.error());
  if (auto r = createRunDirs(layout, opts.nproc); !r) return tl::unexpected(r.error());
  for (int rank = 0; rank < opts.nproc && opts.attempt > 0; ++rank) {
    if (auto r = makeDirs(layout.rankAttemptDir(rank, opts.attempt)); !r) return tl::unexpected(r.error());
  }
  auto port = findFreePort();
  if (!port) return tl::unexpected(port.error());

  Started out;
  std::vector<std::pair<PendingSpawn, int64_t>> pending;
  std::optional<Error> first_error;
  for (int rank = 0; rank < opts.nproc && !first_error; ++rank) {
    SpawnSpec spec;
    spec.executable = *exe;
    spec.argv = opts.command;
    spec.env = toEnvStrings(
        rankEnvironment(base, layout, {rank, opts.nproc, *port, opts.run_id, opts.attempt, opts.max_restarts}));
    applyEnv(spec.env, opts.env);
    spec.stdout_path = layout.rankStdout(rank, opts.attempt);
    spec.stderr_path = layout.rankStderr(rank, opts.attempt);
    const int64_t t = realtimeNs();
    auto p = startSpawn(spec, placement);
    if (!p) {
      first_error = p.error();
      first_error->message = "rank " + std::to_string(rank) + ": " + first_error->message;
      break;
    }
    pending.emplace_back(*p, t);
  }
  for (size_t rank = 0; rank < pending.size(); ++rank) {
    auto pid = finishSpawn(pending[rank].first);
    if (pid) {
      out.ranks.push_back({static_cast<int>(rank), *pid, pending[rank].second});
    } else if (!first_error) {
      first_error = pid.error();
      first_error->message = "rank " + std::to_string(rank) + ": " + first_error->message;
    }
  }
  if (first_error && out.ranks.empty()) return tl::unexpected(*first_error);
  out.error = first_error;
  return out;
}

}  // namespace faultline::launch
