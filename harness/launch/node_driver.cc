// A launcher's command across nodes: torchelastic's agents (torchrun,
// torchrun-multinode, torch.distributed.launch) and the spawn stack's runner,
// one per node, each node a network namespace of this machine (netns.h),
// meeting at node n1's address: a static rendezvous (--node_rank,
// --master_addr), or c10d ([stack] rendezvous) with n1's agent hosting the
// store (docs/MULTINODE.md, "torchrun across namespaces").
//
// The launcher process is one small driver (bash) that faultline starts: it
// starts every node's process (`ip netns exec NS env FAULTLINE_NODE=nK
// GLOO_SOCKET_IFNAME=IF faultline agent --node nK --link IF -- LAUNCHER
// --node_rank K-1 --master_addr ADDR --nnodes N ...`), waits for all of them
// and exits with the first non-zero status (0 when all succeeded). So every
// rank stays a descendant of the launcher process, found by RANK (or the
// shim's start event) as under one launcher, and the containment and
// teardown of one node work unchanged.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "harness/launch/observed_launcher.h"
#include "harness/launch/netns.h"
#include "harness/model/atomic_file.h"
#include "harness/model/node_layout.h"

namespace faultline::launch {
namespace {

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string selfExe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "faultline" : p.string();
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Node k's command line (0-based): the launcher's own, placed and named. The
// node's flags come before the launcher's --nnodes (`torchrun --node_rank=1
// --master_addr=A --nnodes=2 ...`, `spawn_runner.py --nprocs 2 --port P
// --node_rank=1 --master_addr=A --nnodes=2 train.py`).
std::vector<std::string> nodeCommand(const LaunchOptions& opts, const ObservedLauncher::NodePlace& place,
                                     const RunLayout& layout, const RunNetwork& net, int k) {
  const NodeNet& node = net.nodes[k];
  std::vector<std::string> cmd = {ipCommand(), "netns", "exec", node.netns, "/usr/bin/env",
                                  "FAULTLINE_NODE=" + node.name, "GLOO_SOCKET_IFNAME=" + node.node_if};
  // The node agent (docs/MULTINODE.md) runs the node's launcher and records it in OUT/nodes/nK/.
  cmd.insert(cmd.end(), {selfExe(), "agent", "--out", layout.outDir(), "--node", node.name, "--link", node.node_if, "--"});
  const std::vector<std::string>& t = opts.command;
  // A c10d rendezvous: every agent meets at node n1's address, where n1's
  // agent hosts the store (the address is its own, by its hosts file:
  // netns.h), and the rendezvous numbers the nodes. Static: each node is
  // told its place and n1's address.
  const bool c10d = flagValue(t, "--rdzv_backend") == "c10d";
  const bool own_nproc = static_cast<size_t>(k) < opts.node_procs.size();
  bool placed = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (c10d && startsWith(t[i], "--rdzv_endpoint=")) {
      cmd.push_back("--rdzv_endpoint=" + net.nodes.front().addr + t[i].substr(t[i].rfind(':')));
      continue;
    }
    if (own_nproc && startsWith(t[i], "--nproc_per_node=")) {
      cmd.push_back("--nproc_per_node=" + std::to_string(opts.node_procs[k]));
      continue;
    }
    // Node n1 keeps --log_dir (its local ranks are the global ones, as on
    // one node); the others log beside their node's part of the run.
    const bool log_dir = t[i] == "--log_dir" || t[i] == "--log-dir";
    if (log_dir && k > 0 && i + 1 < t.size()) {
      cmd.push_back(t[i]);
      cmd.push_back(layout.nodeLogsDir(node.name));
      ++i;
      continue;
    }
    if (!placed && startsWith(t[i], place.before)) {  // the launcher's own, not a trainer's argument of that name
      placed = true;
      if (c10d) {
        cmd.push_back("--rdzv_id=" + net.tag);
      } else {
        cmd.push_back(place.rank_flag + "=" + std::to_string(k));
        cmd.push_back(place.addr_flag + "=" + net.nodes.front().addr);
      }
    }
    cmd.push_back(t[i]);
  }
  return cmd;
}

// `forward_stop`: a stop signal to the driver goes on to every node's agent,
// which passes it to its launcher (a launcher stopped first, as a user stops
// it: StopOrder::kLauncherFirst). Otherwise the driver dies of it, as the
// teardown signals every process of the run itself.
std::string driverScript(const LaunchOptions& opts, const ObservedLauncher::NodePlace& place, const RunLayout& layout,
                         const RunNetwork& net, bool forward_stop) {
  std::string s = "pids=()\n";
  if (forward_stop) s += "trap 'kill -TERM \"${pids[@]}\" 2>/dev/null' TERM\ntrap 'kill -INT \"${pids[@]}\" 2>/dev/null' INT\n";
  for (size_t k = 0; k < net.nodes.size(); ++k) {
    std::error_code ec;
    std::filesystem::create_directories(layout.nodeDir(net.nodes[k].name), ec);
    std::string line;
    for (const auto& a : nodeCommand(opts, place, layout, net, static_cast<int>(k))) line += shellQuote(a) + " ";
    s += line + "</dev/null &\npids+=($!)\n";
  }
  // The first non-zero status of the nodes (in node order), 0 when every
  // node succeeded. `wait PID`, not `wait -n`: a non-interactive bash may
  // have reaped two nodes that ended together, and `wait -n` then answers 127.
  // A trap that ran interrupts the wait (status 128+N) of a node still
  // there: it is waited for again.
  s += "rc=0\nfor p in \"${pids[@]}\"; do\n"
       "  while :; do wait \"$p\"; s=$?; if [ \"$s\" -gt 128 ] && kill -0 \"$p\" 2>/dev/null; then continue; fi; break; done\n"
       "  if [ \"$rc\" -eq 0 ] && [ \"$s\" -ne 0 ]; then rc=$s; fi\n"
       "done\nexit \"$rc\"\n";
  return s;
}

}  // namespace

tl::expected<NodeShape, Unsupported> nodeShape(const scenario::Stack& stack) {
  const int nodes = std::max(stack.nodes, 1);
  if (nodes > 1) {
    if (auto why = networkProblem(); !why.empty()) return tl::unexpected(Unsupported{why});
  }
  if (auto why = nodeLayoutProblem(stack.world_size, nodes); !why.empty()) return tl::unexpected(Unsupported{why});
  const std::vector<int> per_node = ranksPerNode(stack.world_size, nodes);
  NodeShape shape;
  shape.nodes = nodes;
  shape.per_node = per_node.front();
  if (nodes > 1) shape.flags.push_back("--nnodes=" + std::to_string(nodes));
  shape.flags.push_back("--nproc_per_node=" + std::to_string(shape.per_node));
  if (per_node.front() != per_node.back()) shape.node_procs = per_node;
  return shape;
}

Result<Started> ObservedLauncher::start(const LaunchOptions& opts, const RunLayout& layout, const Placement& placement) const {
  if (opts.nodes <= 1) return startCommand(opts, layout, placement);
  if (opts.command.empty()) return fail(ErrorCode::kBadUsage, "no command given");
  (void)sweepStaleNetworks();
  const RunNetwork net = planNetwork(opts.run_id, opts.nodes);
  if (auto r = createNetwork(net); !r) return tl::unexpected(r.error());
  // Which namespace and link is which node (for the diagnosis and the tests' own teardown check).
  nlohmann::json j = {{"tag", net.tag}, {"bridge", net.bridge}, {"subnet", net.subnet + ".0/24"}, {"nodes", nlohmann::json::array()}};
  for (const auto& n : net.nodes) {
    j["nodes"].push_back({{"name", n.name}, {"netns", n.netns}, {"link", n.host_if}, {"ifname", n.node_if}, {"addr", n.addr}});
  }
  if (auto r = makeDirs(layout.nodesDir()); r) (void)writeFileAtomically(layout.nodesDir() + "/network.json", j.dump(2) + "\n");
  LaunchOptions driver = opts;
  driver.command = {"/bin/bash", "-c", driverScript(opts, nodePlace(), layout, net, stopOrder() == StopOrder::kLauncherFirst),
                    "faultline-nodes"};
  driver.nodes = 1;
  auto started = startCommand(driver, layout, placement);
  if (!started) (void)removeNetwork(net);
  return started;
}

std::vector<std::string> ObservedLauncher::finish(const LaunchOptions& opts) const {
  if (opts.nodes <= 1) return {};
  return tearDownNetwork(planNetwork(opts.run_id, opts.nodes));
}

}  // namespace faultline::launch
