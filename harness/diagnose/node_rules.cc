// A node lost or cut off, from the node agents' events, the supervisor's node
// faults and how the node's ranks ended.
#include "harness/diagnose/node_rules.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace faultline::diagnose {
namespace {

constexpr int64_t kAtOnceNs = 1'000'000'000;  // "at once": every process of the node within 1 s

// "t=4.2 s" since the run started.
std::string atText(const Analysis& a, int64_t t_ns) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "t=%.1f s", msSinceStart(a, t_ns) / 1000.0);
  return buf;
}

bool ownError(const RankInput& r) {
  return std::any_of(r.errors.begin(), r.errors.end(), [](const Evidence& e) { return !e.collateral; });
}

// Ended with nothing of its own to say: SIGKILLed, or gone with no exit known.
bool endedSilently(const RankInput& r) {
  if (r.killed_by_teardown || ownError(r)) return false;
  return (r.signal && *r.signal == "SIGKILL") || !r.exit_known;
}

// The nodes that ran ranks: a multi-node run has two or more.
std::set<std::string> rankNodes(const RunInput& in) {
  std::set<std::string> out;
  for (const auto& [r, ri] : in.ranks) {
    if (!ri.node.empty()) out.insert(ri.node);
  }
  return out;
}

struct NodeVerdict {
  std::string node;
  int64_t t_ns = 0;
  std::string why;  // "every process of it killed at once"
  std::vector<int> ranks;
};

// A primary failure on another node before T: that one started it.
bool otherFailedFirst(const Analysis& a, const std::string& node, int64_t t_ns) {
  for (const auto& [r, st] : a.states) {
    if (st.in->node == node || st.cls != FailureClass::kPrimary || !st.t_ns) continue;
    if (ownError(*st.in) && *st.t_ns < t_ns) return true;
  }
  return false;
}

// An agent of the node wrote a line more than kAtOnceNs after its last
// rank's end (it saw the rank go, it was signalled by the teardown): it
// outlived its ranks, so the node did not vanish with them, whether or not
// the agent wrote agent_exit (torch 1.13's agent on a node whose one rank a
// scripted SIGKILL ended waits there until the teardown ends it).
bool agentOutlived(const NodeInput& node, std::optional<int64_t> last_rank_end) {
  if (!last_rank_end) return false;
  return std::any_of(node.agents.begin(), node.agents.end(), [&](const AgentRecord& ag) {
    return ag.last_ns && *ag.last_ns > *last_rank_end + kAtOnceNs;
  });
}

std::optional<NodeVerdict> lostNodeOf(const Analysis& a, const std::string& name, const NodeInput* node,
                                      std::vector<int> ranks) {
  const RunInput& in = *a.in;
  NodeVerdict v;
  v.node = name;
  v.ranks = std::move(ranks);
  if (v.ranks.empty()) return std::nullopt;
  std::optional<int64_t> lo, hi;
  bool all_silent = true, all_killed = true, any_teardown = false;
  for (int r : v.ranks) {
    const RankInput& ri = in.ranks.at(r);
    all_silent = all_silent && endedSilently(ri);
    all_killed = all_killed && ri.signal && *ri.signal == "SIGKILL" && ri.exit_ns;
    any_teardown = any_teardown || ri.killed_by_teardown;
    if (ri.exit_ns) {
      lo = lo ? std::min(*lo, *ri.exit_ns) : *ri.exit_ns;
      hi = hi ? std::max(*hi, *ri.exit_ns) : *ri.exit_ns;
    }
  }
  const NodeEvent* fault = node ? node->fault("node_loss") : nullptr;
  bool other_agent_exited = false;
  for (const auto& [o, on] : in.nodes) {
    other_agent_exited = other_agent_exited || (o != name && on.anyAgent() && !on.agentGone());
    if (other_agent_exited) break;
  }
  const bool agent_gone = node && node->agentGone() && other_agent_exited && !agentOutlived(*node, hi);
  if (fault) {
    v.t_ns = fault->t_ns;
    v.why = "the supervisor's node_loss fault: every process of it killed at once";
  } else if (all_killed && v.ranks.size() >= 2 && lo && *hi - *lo <= kAtOnceNs && !any_teardown) {
    v.t_ns = *lo;
    v.why = "every process of it killed at once";
  } else if (agent_gone && all_silent) {
    // Its agent never wrote agent_exit while the others' did: the node went, agent and all.
    v.t_ns = lo.value_or(0);
    if (!lo) {
      // No exit known: its last sign of life, the agent's last line or a rank's last event.
      for (const AgentRecord& ag : node->agents) {
        if (!ag.exit_code && ag.last_ns) v.t_ns = std::max(v.t_ns, *ag.last_ns);
      }
      for (int r : v.ranks) {
        for (const Event& e : in.ranks.at(r).events.events) v.t_ns = std::max(v.t_ns, e.t);
      }
    }
    v.why = all_killed ? "every process of it killed at once, its agent too"
                       : std::string("its agent and every process of it vanished") + (lo ? "" : "; its last sign of life");
  } else {
    return std::nullopt;
  }
  if (otherFailedFirst(a, name, v.t_ns)) return std::nullopt;
  return v;
}

// Ranks of other nodes that failed: the collateral the summary counts.
std::vector<int> othersFailed(const Analysis& a, const std::string& node) {
  std::vector<int> out;
  for (const auto& [r, st] : a.states) {
    if (st.in->node != node && (st.cls == FailureClass::kCollateral || st.cls == FailureClass::kPrimary)) out.push_back(r);
  }
  return out;
}

Candidate nodeCandidate(const Analysis& a, const NodeVerdict& v, Kind kind, const std::string& head) {
  RootCause c;
  c.kind = kind;
  c.node = v.node;
  c.blame = Blame::kNode;
  c.ranks = v.ranks;
  c.missing_ranks = v.ranks;
  c.summary = head + ": its " + rankRangeText(v.ranks) + " lost";
  c.layers.push_back({"process", "node " + v.node + ": " + v.why});
  for (int r : v.ranks) {
    c.layers.push_back({"process", "rank " + std::to_string(r) + " " + exitText(a.in->ranks.at(r))});
  }
  c.layers.push_back({"error", c.summary});
  const std::vector<int> others = othersFailed(a, v.node);
  if (!others.empty()) c.layers.push_back({"error", rankRangeText(others) + " of the other nodes failed after it"});
  Candidate cand{c, std::nullopt, {}};
  cand.lost_ranks = v.ranks;
  cand.node_t_ns = v.t_ns;
  return cand;
}

}  // namespace

std::vector<int> ranksOfNode(const RunInput& in, const std::string& name) {
  std::vector<int> out;
  for (const auto& [r, ri] : in.ranks) {
    if (ri.node == name) out.push_back(r);
  }
  return out;
}

std::optional<Candidate> nodeLost(const Analysis& a) {
  const RunInput& in = *a.in;
  if (!a.any_failure && !a.trigger_hang) return std::nullopt;
  const std::set<std::string> nodes = rankNodes(in);
  if (nodes.size() < 2) return std::nullopt;
  std::map<std::string, std::vector<int>> by_node;  // one pass, not one per node
  for (const auto& [r, ri] : in.ranks) {
    if (!ri.node.empty()) by_node[ri.node].push_back(r);
  }
  std::optional<NodeVerdict> best;
  size_t lost_nodes = 0;
  for (const std::string& name : nodes) {
    const auto it = in.nodes.find(name);
    auto v = lostNodeOf(a, name, it == in.nodes.end() ? nullptr : &it->second, by_node[name]);
    if (!v) continue;
    ++lost_nodes;
    if (!best || v->t_ns < best->t_ns) best = std::move(v);
  }
  // Every node gone at once is the whole job's end (a cancel, the teardown), not one node lost.
  if (!best || lost_nodes == nodes.size()) return std::nullopt;
  return nodeCandidate(a, *best, Kind::kNodeLost,
                       "node " + best->node + " lost at " + atText(a, best->t_ns) + " (" + best->why + ")");
}

std::optional<Candidate> networkPartition(const Analysis& a) {
  const RunInput& in = *a.in;
  if (!a.any_failure && !a.trigger_hang) return std::nullopt;
  if (rankNodes(in).size() < 2) return std::nullopt;
  std::optional<NodeVerdict> best;
  for (const auto& [name, node] : in.nodes) {
    NodeVerdict v;
    v.node = name;
    v.ranks = ranksOfNode(in, name);
    const NodeEvent* fault = node.fault("partition");
    if (node.link_down_ns) {
      v.t_ns = *node.link_down_ns;
      v.why = "link " + (node.link_down_ifname.empty() ? std::string("?") : node.link_down_ifname) + " down";
      if (fault && fault->t_ns < v.t_ns) v.t_ns = fault->t_ns;
    } else if (fault) {
      v.t_ns = fault->t_ns;
      v.why = "the supervisor's partition fault cut its link";
    } else {
      continue;
    }
    if (v.ranks.empty() || otherFailedFirst(a, name, v.t_ns)) continue;
    if (!best || v.t_ns < best->t_ns) best = std::move(v);
  }
  if (!best) return std::nullopt;
  return nodeCandidate(a, *best, Kind::kNetworkPartition,
                       "node " + best->node + " unreachable from " + atText(a, best->t_ns) + " (" + best->why + ")");
}

std::optional<Candidate> nodeLauncherLost(const Analysis& a) {
  const RunInput& in = *a.in;
  if (in.nodes.size() < 2) return std::nullopt;
  // The node whose own launcher (the agent's child) was killed first, before
  // any rank of it started.
  const NodeInput* lost = nullptr;
  int64_t lost_ns = 0;
  // A launcher the teardown signalled was stopped, not lost.
  const int64_t teardown_ns = in.supervisor ? in.supervisor->teardown.started_ns : 0;
  for (const auto& [name, node] : in.nodes) {
    if (!node.ranks.empty() || !ranksOfNode(in, name).empty()) continue;
    const NodeEvent* fault = node.fault("agent_kill");
    const bool by_teardown = teardown_ns > 0 && node.child_exit_ns && *node.child_exit_ns >= teardown_ns;
    if ((!node.child_signal || by_teardown) && !fault) continue;
    const int64_t t = node.child_exit_ns.value_or(fault ? fault->t_ns : 0);
    if (!lost || t < lost_ns) {
      lost = &node;
      lost_ns = t;
    }
  }
  if (!lost) return std::nullopt;
  for (const auto& [name, node] : in.nodes) {  // another node's launcher that ended first started it
    if (&node != lost && node.child_exit_ns && *node.child_exit_ns < lost_ns) return std::nullopt;
  }
  if (otherFailedFirst(a, lost->name, lost_ns)) return std::nullopt;
  const NodeEvent* fault = lost->fault("agent_kill");
  RootCause c;
  c.kind = Kind::kLauncherError;
  c.node = lost->name;
  c.blame = Blame::kNode;
  c.signal = lost->child_signal;
  const std::string how = lost->child_signal ? "killed by " + *lost->child_signal : "killed";
  c.summary = "node " + lost->name + "'s launcher " + how + " at " + atText(a, lost_ns) +
              (fault ? " (the supervisor's agent_kill fault)" : "") + ", before any rank of it started";
  c.layers.push_back({"process", "node " + lost->name + ": its launcher " + how + ", no rank of it started"});
  // What the other nodes then said: their launcher's error, or their ranks'.
  auto then = launcherFailedFirst(a);
  // The others' launcher ended by faultline's teardown: killed by its signal,
  // or, caught and exited 128+N (accelerate's agent, stopped first through the
  // node driver), after the teardown began.
  const LauncherProcess* launcher = in.supervisor && in.supervisor->launcher_process ? &*in.supervisor->launcher_process : nullptr;
  const bool exited_in_teardown = then && then->cause.exit_code && *then->cause.exit_code > 128 && launcher &&
                                  launcher->exit_ns && *launcher->exit_ns >= teardown_ns;
  if (then && (then->cause.signal || exited_in_teardown) && !then->cause.exception_type && teardown_ns > 0) {
    // The others never gave up (torch 1.13's static rendezvous, accelerate's
    // default rendezvous timeout): faultline's teardown ended them.
    const std::string why = in.supervisor->trigger.detail;
    c.summary += "; the other nodes' launcher waited for it until faultline's teardown" + (why.empty() ? "" : " (" + why + ")");
    for (const Layer& l : then->cause.layers) c.layers.push_back(l);
  } else if (then) {
    c.exception_type = then->cause.exception_type;
    c.message = then->cause.message;
    c.location = then->cause.location;
    c.exit_code = then->cause.exit_code;
    std::string said = then->cause.summary;
    const std::string head = "launcher failed before any rank started: ";
    if (said.rfind(head, 0) == 0) said = "the others' launcher then failed: " + said.substr(head.size());
    c.summary += "; " + said;
    for (const Layer& l : then->cause.layers) c.layers.push_back(l);
  } else if (const std::vector<int> others = othersFailed(a, lost->name); !others.empty()) {
    c.summary += "; " + rankRangeText(others) + " of the other nodes failed after it";
  }
  c.layers.push_back({"error", c.summary});
  return Candidate{c, std::nullopt, {}};
}

std::vector<NodeReport> nodeReports(const RunInput& in, const std::optional<Candidate>& root) {
  std::map<std::string, NodeReport> out;
  auto at = [&](const std::string& name) -> NodeReport& {
    NodeReport& n = out[name];
    n.name = name;
    return n;
  };
  for (const auto& [name, node] : in.nodes) {
    NodeReport& n = at(name);
    n.host = node.host;
    n.link_down_ns = node.link_down_ns;
    for (const auto& [pid, cmd] : node.survivors) n.survivors.push_back({pid, cmd});
    n.agent_exit_code = node.agentExitCode();
  }
  for (const auto& [r, ri] : in.ranks) {
    if (!ri.node.empty()) at(ri.node).ranks.push_back(r);
  }
  if (out.empty()) return {};
  std::vector<NodeReport> v;
  for (auto& [name, n] : out) {
    n.lost = root && root->cause.node == name &&
             (root->cause.kind == Kind::kNodeLost || root->cause.kind == Kind::kNetworkPartition);
    v.push_back(std::move(n));
  }
  return v;
}

}  // namespace faultline::diagnose
