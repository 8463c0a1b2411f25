// Node and network faults, struck by the supervisor on every process of a
// node (docs/MULTINODE.md, "Node and network faults"): the processes of node
// NAME are those whose environment carries this run's FAULTLINE_RUN_ID and
// FAULTLINE_NODE=NAME; a node's link is the host side of its veth.
#include "harness/supervise/node_faults.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "harness/launch/clock.h"
#include "harness/launch/netns.h"
#include "harness/launch/rank_env.h"
#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {

namespace asio = boost::asio;
namespace {

bool ofNode(pid_t p, const std::string& run_id, const std::string& node) {
  return environVar(p, "FAULTLINE_NODE") == node && environVar(p, launch::kRunIdVar) == run_id;
}

// The node's launcher agent: its topmost processes without a RANK that are
// not faultline's own node agent (`faultline agent`), i.e. its torchrun.
std::vector<pid_t> agentsOf(const std::vector<pid_t>& procs) {
  std::vector<pid_t> candidates;
  for (pid_t p : procs) {
    if (environVar(p, "RANK")) continue;
    const std::string cmd = cmdline(p);
    if (cmd.find("faultline") != std::string::npos && cmd.find(" agent ") != std::string::npos) continue;
    candidates.push_back(p);
  }
  std::vector<pid_t> top;
  for (pid_t p : candidates) {
    auto st = readStat(p);
    if (!st || std::find(candidates.begin(), candidates.end(), st->ppid) == candidates.end()) top.push_back(p);
  }
  return top;
}

}  // namespace

NodeFaults::NodeFaults(asio::io_context& io, const RunLayout& layout, std::string run_id, FaultDelivery& faults,
                       Hooks hooks)
    : io_(io), layout_(layout), run_id_(std::move(run_id)), faults_(faults), hooks_(std::move(hooks)), rendezvous_timer_(io) {}

NodeFaults::~NodeFaults() { stop(); }

void NodeFaults::stop() { rendezvous_timer_.cancel(); }

std::vector<pid_t> NodeFaults::nodeProcesses(const std::string& node) const {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  for (pid_t p : listPids()) {
    if (p != self && ofNode(p, run_id_, node)) out.push_back(p);
  }
  return out;
}

std::string NodeFaults::nodeLink(const std::string& node) const {
  const int k = std::atoi(node.c_str() + 1);
  const auto net = launch::planNetwork(run_id_, std::max(k, 1));
  return net.nodes.back().host_if;
}

void NodeFaults::record(const Strike& s, const std::vector<pid_t>& pids, const std::string& detail) {
  nlohmann::json ev = {{"t_ns", launch::realtimeNs()}, {"node", s.node},  {"event", "fault"},   {"kind", s.kind},
                       {"point", s.point},              {"rule", s.rule}, {"source", "supervisor"}, {"processes", pids}};
  if (s.rank >= 0) ev["rank"] = s.rank;
  if (!detail.empty()) ev["detail"] = detail;
  const std::string dir = layout_.nodeDir(s.node);  // beside the node agents' events
  (void)launch::makeDirs(dir);
  const std::string line = ev.dump() + "\n";
  if (int fd = os::sys().open(layout_.nodeSupervisorEvents(s.node).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      fd >= 0) {
    if (os::sys().write(fd, line.data(), line.size()) < 0) hooks_.note("fault event for node " + s.node + " not written");
    os::sys().close(fd);
  }
  hooks_.timeline(s.rank >= 0 ? std::optional<int>(s.rank) : std::nullopt,
           "fault " + s.kind + " on node " + s.node + " struck by the supervisor at " + s.point +
               (detail.empty() ? "" : ": " + detail),
           TimelineKind::kFault);
}

void NodeFaults::strike(const Strike& s) {
  using probe::FaultKind;
  const auto kind = probe::faultKindFromName(s.kind).value_or(FaultKind::kNone);
  std::vector<pid_t> procs = nodeProcesses(s.node);
  std::string detail;
  switch (kind) {
    case FaultKind::kNodeLoss:
      // Every process at once; a second look catches what forked meanwhile.
      for (pid_t p : procs) ::kill(p, SIGKILL);
      for (pid_t p : nodeProcesses(s.node)) {
        if (std::find(procs.begin(), procs.end(), p) == procs.end()) procs.push_back(p), ::kill(p, SIGKILL);
      }
      detail = "SIGKILL to " + std::to_string(procs.size()) + " process(es)";
      break;
    case FaultKind::kAgentKill:
      procs = agentsOf(procs);
      for (pid_t p : procs) ::kill(p, SIGKILL);
      detail = "SIGKILL to the node's launcher agent";
      break;
    case FaultKind::kPartition: {
      const std::string link = nodeLink(s.node);
      procs.clear();
      if (auto r = launch::setLinkUp(link, false); !r) {
        hooks_.note("partition of " + s.node + ": " + r.error().str());
        detail = "failed: " + r.error().message;
        break;
      }
      detail = "link " + link + " down";
      if (!s.arg.empty()) {
        const double back = std::strtod(s.arg.c_str(), nullptr);
        detail += ", up again after " + s.arg + " s";
        auto timer = std::make_unique<asio::steady_timer>(io_);
        timer->expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(back)));
        timer->async_wait([this, link, node = s.node](const boost::system::error_code& ec) {
          if (ec) return;
          if (auto r = launch::setLinkUp(link, true); !r) hooks_.note("partition of " + node + " ended: " + r.error().str());
          hooks_.timeline(std::nullopt, "link " + link + " of node " + node + " up again", TimelineKind::kFault);
        });
        node_timers_.push_back(std::move(timer));
      }
      break;
    }
    case FaultKind::kSlowLink: {
      const std::string link = nodeLink(s.node);
      const std::string rate = s.arg.empty() ? "200kbit" : s.arg;
      procs.clear();
      if (auto r = launch::rateLimitLink(link, rate); !r) {
        hooks_.note("slow_link of " + s.node + ": " + r.error().str());
        detail = "failed: " + r.error().message;
      } else {
        detail = "link " + link + " limited to " + rate;
      }
      break;
    }
    case FaultKind::kSlowNode: {
      const int duty = s.arg.empty() ? 80 : std::atoi(s.arg.c_str());
      detail = "stopped " + std::to_string(duty) + "% of every 500 ms";
      slowCycle(s.node, duty, true);
      break;
    }
    default:
      return;
  }
  record(s, procs, detail);
}

// SIGSTOP for duty% of a 500 ms period, SIGCONT for the rest, until the teardown.
void NodeFaults::slowCycle(const std::string& node, int duty, bool stop) {
  if (hooks_.ended()) {
    for (pid_t p : nodeProcesses(node)) ::kill(p, SIGCONT);
    return;
  }
  for (pid_t p : nodeProcesses(node)) ::kill(p, stop ? SIGSTOP : SIGCONT);
  const int ms = stop ? 5 * duty : 5 * (100 - duty);
  auto timer = std::make_unique<asio::steady_timer>(io_);
  timer->expires_after(std::chrono::milliseconds(ms));
  timer->async_wait([this, node, duty, stop](const boost::system::error_code& ec) {
    if (ec) return;
    slowCycle(node, duty, !stop);
  });
  node_timers_.push_back(std::move(timer));
  // Timers that have fired are dropped now and then (a long run cycles many).
  if (node_timers_.size() > 64) {
    std::erase_if(node_timers_, [](const auto& t) { return t->expiry() < asio::steady_timer::clock_type::now(); });
  }
}

// agent_kill at "rendezvous": every 50 ms, the node's agent as soon as it
// runs, while no rank of that node exists yet.
void NodeFaults::watchRendezvous() {
  if (faults_.awaitingRendezvous().empty()) return;
  rendezvous_timer_.expires_after(std::chrono::milliseconds(50));
  rendezvous_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || hooks_.ended()) return;
    const auto launcher = hooks_.launcher_pid();
    std::vector<pid_t> tree = launcher ? descendantsOf(*launcher) : std::vector<pid_t>{};
    for (const std::string& node : faults_.awaitingRendezvous()) {
      std::vector<pid_t> procs;
      bool has_rank = false;
      for (pid_t p : tree) {
        if (!ofNode(p, run_id_, node)) continue;
        procs.push_back(p);
        has_rank = has_rank || environVar(p, "RANK").has_value();
      }
      if (procs.empty() || has_rank) continue;
      // Wait until the exec into the node's launcher is done (the first
      // process is `ip netns exec` / `env` for a moment, then the agent).
      const auto agents = agentsOf(procs);
      const bool launched = !agents.empty() && std::none_of(agents.begin(), agents.end(), [](pid_t p) {
        const std::string c = cmdline(p);
        return c.empty() || c.find(" netns exec ") != std::string::npos || c.rfind("/usr/bin/env ", 0) == 0;
      });
      if (!launched) continue;
      if (auto s = faults_.atRendezvous(node)) strike(*s);
    }
    watchRendezvous();
  });
}

}  // namespace faultline::supervise
