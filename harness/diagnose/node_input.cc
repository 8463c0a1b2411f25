// Reading OUT/nodes/NAME/: the node agents' events and the supervisor's node faults.
#include "harness/diagnose/node_input.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "harness/diagnose/text.h"
#include "harness/model/outcome.h"
#include "harness/model/run_layout.h"

namespace faultline::diagnose {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<int> intField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int>();
}

std::string stringField(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "agent-1234.jsonl" -> 1234
std::optional<int> agentPidOf(const std::string& name) {
  if (!startsWith(name, "agent-") || name.size() <= 12 || name.substr(name.size() - 6) != ".jsonl") return std::nullopt;
  const std::string digits = name.substr(6, name.size() - 12);
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::stoi(digits);
}

// Reads the lines of one node file; the bad ones become problems.
std::vector<NodeEvent> readNodeFile(const std::string& path, std::vector<NodeProblem>* problems) {
  std::vector<NodeEvent> out;
  auto text = readAll(path);
  if (!text) return out;
  int lineno = 0;
  for (std::string_view line : splitLines(*text)) {
    ++lineno;
    if (trim(line).empty()) continue;
    std::string why;
    int col = 0;
    if (auto e = parseNodeEventLine(line, &why, &col)) {
      out.push_back(std::move(*e));
    } else if (problems) {
      problems->push_back({path, lineno, col, why});
    }
  }
  return out;
}

}  // namespace

std::optional<NodeEvent> parseNodeEventLine(std::string_view line, std::string* why, int* col) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::parse_error& e) {
    if (why) *why = "not JSON";
    if (col) *col = static_cast<int>(e.byte);
    return std::nullopt;
  }
  if (!j.is_object() || !j.contains("event") || !j["event"].is_string()) {
    if (why) *why = "not a JSON object with a string \"event\"";
    if (col) *col = 1;
    return std::nullopt;
  }
  NodeEvent e;
  e.event = j["event"].get<std::string>();
  if (auto it = j.find("t_ns"); it != j.end() && it->is_number()) e.t_ns = it->get<int64_t>();
  e.host = stringField(j, "host");
  e.agent_pid = intField(j, "agent_pid").value_or(0);
  e.rank = intField(j, "rank");
  e.local_rank = intField(j, "local_rank");
  e.pid = intField(j, "pid");
  e.exit_code = intField(j, "exit_code");
  if (auto it = j.find("signal"); it != j.end()) {
    if (it->is_string()) e.signal = it->get<std::string>();
    else if (it->is_number_integer()) e.signal = signalName(it->get<int>());
  }
  if (auto it = j.find("gone"); it != j.end() && it->is_boolean()) e.gone = it->get<bool>();
  e.ifname = stringField(j, "ifname");
  e.state = stringField(j, "state");
  e.previous = stringField(j, "previous");
  e.kind = stringField(j, "kind");
  e.point = stringField(j, "point");
  e.rule = stringField(j, "rule");
  e.source = stringField(j, "source");
  if (auto it = j.find("processes"); it != j.end() && it->is_array()) {
    for (const json& p : *it) {
      if (p.is_number_integer()) e.processes.emplace_back(p.get<int>(), "");
      else if (p.is_object()) e.processes.emplace_back(intField(p, "pid").value_or(0), stringField(p, "cmdline"));
    }
  }
  return e;
}

std::optional<int> NodeInput::agentExitCode() const {
  if (agents.empty() || agentGone()) return std::nullopt;
  for (const AgentRecord& a : agents) {
    if (a.exit_code && *a.exit_code != 0) return a.exit_code;
  }
  return agents.front().exit_code;
}

bool NodeInput::agentGone() const {
  return std::any_of(agents.begin(), agents.end(), [](const AgentRecord& a) { return !a.exit_code; });
}

const NodeEvent* NodeInput::fault(std::string_view kind) const {
  for (const NodeEvent& f : faults) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

void addAgent(NodeInput& node, AgentRecord agent) {
  for (const NodeEvent& e : agent.events) {
    if (node.host.empty() && !e.host.empty()) node.host = e.host;
    if (e.t_ns > 0) agent.last_ns = std::max(agent.last_ns.value_or(0), e.t_ns);
    if (e.event == "agent_start") {
      agent.start_ns = e.t_ns;
    } else if (e.event == "agent_exit") {
      agent.exit_code = e.exit_code.value_or(0);
      agent.exit_ns = e.t_ns;
    } else if (e.event == "rank_start" && e.rank) {
      RankOnNode& r = node.ranks[*e.rank];
      r.rank = *e.rank;
      r.local_rank = e.local_rank;
      r.pid = e.pid;
      r.start_ns = e.t_ns;
    } else if (e.event == "rank_exit" && e.rank) {
      RankOnNode& r = node.ranks[*e.rank];
      r.rank = *e.rank;
      if (!r.pid) r.pid = e.pid;
      r.exit_code = e.exit_code;
      r.signal = e.signal;
      r.gone = e.gone || (!e.exit_code && !e.signal);
      r.exit_ns = e.t_ns;
    } else if (e.event == "child_exit") {
      if (!node.child_exit_ns || e.t_ns < *node.child_exit_ns) {
        node.child_exit_ns = e.t_ns;
        node.child_exit_code = e.exit_code;
        node.child_signal = e.signal;
      }
    } else if (e.event == "link") {
      const bool down = e.state == "down" || e.state == "lowerlayerdown" || e.state == "notpresent";
      if (down && (!node.link_down_ns || e.t_ns < *node.link_down_ns)) {
        node.link_down_ns = e.t_ns;
        node.link_down_ifname = e.ifname;
      } else if (e.state == "up" && node.link_down_ns && e.t_ns >= *node.link_down_ns && !node.link_up_ns) {
        node.link_up_ns = e.t_ns;
      }
    } else if (e.event == "survivors") {
      for (const auto& p : e.processes) node.survivors.push_back(p);
    }
  }
  node.agents.push_back(std::move(agent));
  std::sort(node.agents.begin(), node.agents.end(), [](const AgentRecord& a, const AgentRecord& b) { return a.pid < b.pid; });
}

std::map<std::string, NodeInput> readNodes(const std::string& run_dir, std::vector<NodeProblem>* problems) {
  std::map<std::string, NodeInput> nodes;
  const RunLayout layout(run_dir);
  std::error_code ec;
  if (!fs::is_directory(layout.nodesDir(), ec)) return nodes;
  for (const auto& d : fs::directory_iterator(layout.nodesDir(), ec)) {
    if (!d.is_directory(ec)) continue;
    const std::string name = d.path().filename().string();
    NodeInput& node = nodes[name];
    node.name = name;
    std::vector<std::pair<int, std::string>> agent_files;
    for (const auto& f : fs::directory_iterator(d.path(), ec)) {
      if (auto pid = agentPidOf(f.path().filename().string())) agent_files.emplace_back(*pid, f.path().string());
    }
    std::sort(agent_files.begin(), agent_files.end());
    for (const auto& [pid, path] : agent_files) {
      AgentRecord a;
      a.pid = pid;
      a.events = readNodeFile(path, problems);
      addAgent(node, std::move(a));
    }
    for (NodeEvent& e : readNodeFile(layout.nodeSupervisorEvents(name), problems)) {
      if (e.event == "fault") node.faults.push_back(std::move(e));
    }
  }
  return nodes;
}

}  // namespace faultline::diagnose
