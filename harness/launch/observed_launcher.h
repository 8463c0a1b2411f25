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
  // The command, once. A command of several nodes (LaunchOptions::nodes > 1):
  // one process of it per node, each node a network namespace of this
  // machine, under one driver process (node_driver.cc).
  Result<Started> start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const override;
  // Removes the nodes' network namespaces, where it had nodes; what is still left.
  std::vector<std::string> finish(const LaunchOptions& opts) const override;
  // Its output, format "plain".
  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override;

  // How node K of several is told its place: its rank (0-based) and node
  // n1's address, each `FLAG=VALUE`, inserted before the first argument that
  // starts with `before` (torchelastic's: `--node_rank=1 --master_addr=A`
  // before `--nnodes=2`).
  struct NodePlace {
    std::string before = "--nnodes=";
    std::string rank_flag = "--node_rank";
    std::string addr_flag = "--master_addr";
  };
  virtual NodePlace nodePlace() const { return {}; }

 protected:
  // The command alone, whatever LaunchOptions::nodes says.
  static Result<Started> startCommand(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement);
};

// How a launcher's command spans a scenario's nodes: --nnodes=N (nodes > 1
// only) and --nproc_per_node (the first node's), the ranks of each node where
// they differ (LaunchOptions::node_procs; start() gives each node its own), or
// why it cannot: a world that does not fill its nodes, or a machine without
// network namespaces for them. torchelastic's flags, which the spawn stack's
// runner takes too. start() gives node K its place before --nnodes=N.
struct NodeShape {
  int nodes = 1;
  // The first node's ranks: every node's in a scenario of several nodes (its
  // file must have world_size = nodes x ranks per node); only a scenario of
  // one node spread over two (kSpreads) has nodes that differ (node_procs).
  int per_node = 1;
  std::vector<std::string> flags;
  std::vector<int> node_procs;
};
tl::expected<NodeShape, Unsupported> nodeShape(const scenario::Stack& stack);

// The value of `flag` in a command line ("--log_dir X" or "--log_dir=X"); "" absent.
std::string flagValue(const std::vector<std::string>& command, const std::string& flag);

}  // namespace faultline::launch
