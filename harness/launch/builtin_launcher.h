// The builtin launcher: faultline starts N ranks itself, with torchrun's
// worker environment (CONTRACT.md section 2.1), each rank's output straight
// into OUT/ranks/R/ (no pipes). A run that may restart ([stack]
// max_restarts) is restarted by the supervisor, as torchelastic's agent
// restarts torchrun's: start() starts one attempt (LaunchOptions::attempt).
#pragma once

#include "harness/launch/launcher.h"

namespace faultline::launch {

class BuiltinLauncher final : public Launcher {
 public:
  std::string name() const override { return "builtin"; }
  tl::expected<PlannedStart, Unsupported> plan(const PlanInput& in) const override;
  StackOffer offer(const TorchInstall* torch, const std::string& scratch) const override;
  RankDiscovery rankDiscovery() const override { return RankDiscovery::kStarted; }
  OnRankFailure onRankFailure() const override { return OnRankFailure::kSupervisorStops; }
  int ranksKnownUpFront(const LaunchOptions& opts) const override { return opts.nproc; }
  // Ranks 0..nproc-1 back to back; if rank k cannot be started, the ranks
  // before it are returned with `error` set.
  Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const override;
  LauncherLog ownLog(const LaunchOptions&, const RunLayout&) const override { return {}; }
};

}  // namespace faultline::launch
