// What every launcher with a process of its own shares (external, torchrun,
// torch.distributed.launch, spawn): its command runs once, contained with its
// whole tree, its output into OUT/launcher/; the ranks are its descendants
// that carry RANK (CONTRACT.md section 2.2), and after a rank fails it gets
// time to end its own job.
#pragma once

#include "harness/launch/launcher.h"

namespace faultline::launch {

class ObservedLauncher : public Launcher {
 public:
  RankDiscovery rankDiscovery() const override { return RankDiscovery::kDescendants; }
  OnRankFailure onRankFailure() const override { return OnRankFailure::kLauncherStops; }
  int ranksKnownUpFront(const LaunchOptions&) const override { return 0; }
  Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const override;
  // Its output, format "plain".
  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override;
};

// The value of `flag` in a command line ("--log_dir X" or "--log_dir=X"); "" absent.
std::string flagValue(const std::vector<std::string>& command, const std::string& flag);

}  // namespace faultline::launch
