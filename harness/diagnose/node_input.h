// What the run directory says of each node (docs/MULTINODE.md): the node
// agents' events (OUT/nodes/NAME/agent-PID.jsonl) and the supervisor's node
// faults (OUT/nodes/NAME/supervisor.jsonl), gathered per node. Plain data;
// readNodes() is the only part that touches files.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::diagnose {

// One line of an agent's or the supervisor's node file. Unset numbers are unset.
struct NodeEvent {
  int64_t t_ns = 0;
  std::string event;  // agent_start | rank_start | rank_exit | child_exit | link | signal | survivors | agent_exit | fault
  std::string host;
  int agent_pid = 0;
  std::optional<int> rank, local_rank, pid, exit_code;
  std::optional<std::string> signal;
  bool gone = false;  // rank_exit of a descendant: it only knows the process is gone
  std::string ifname, state, previous;  // link
  // survivors: what was left; fault: the pids it struck (cmdline empty).
  std::vector<std::pair<int, std::string>> processes;
  std::string kind, point, rule, source;  // fault
};

// A line that could not be read: where, and why.
struct NodeProblem {
  std::string file;
  int line = 0;
  int col = 0;
  std::string what;
};

struct AgentRecord {
  int pid = 0;                          // the agent-PID of its file name
  std::vector<NodeEvent> events;        // file order
  std::optional<int64_t> start_ns;      // agent_start
  std::optional<int> exit_code;         // agent_exit
  std::optional<int64_t> exit_ns;
  std::optional<int64_t> last_ns;       // its last line: the last sign of life
};

struct RankOnNode {
  int rank = 0;
  std::optional<int> local_rank, pid;
  std::optional<int64_t> start_ns;
  // rank_exit: how it ended, as the agent saw it.
  std::optional<int> exit_code;
  std::optional<std::string> signal;
  bool gone = false;
  std::optional<int64_t> exit_ns;
};

struct NodeInput {
  std::string name;
  std::string host;                          // the agents' gethostname, "" unknown
  std::vector<AgentRecord> agents;           // by pid
  std::map<int, RankOnNode> ranks;           // rank_start events
  std::vector<NodeEvent> faults;             // the supervisor's `fault` events, file order
  std::optional<int64_t> link_down_ns;       // the first `link` with state down
  std::string link_down_ifname;
  std::optional<int64_t> link_up_ns;         // the link back up after that
  std::vector<std::pair<int, std::string>> survivors;  // every agent's survivors
  std::optional<int64_t> child_exit_ns;      // the first agent child's end
  std::optional<int> child_exit_code;
  std::optional<std::string> child_signal;

  bool anyAgent() const { return !agents.empty(); }
  // Every agent that started wrote agent_exit: null when some agent vanished.
  std::optional<int> agentExitCode() const;
  bool agentGone() const;  // some agent started and never wrote agent_exit
  const NodeEvent* fault(std::string_view kind) const;  // the first supervisor fault of that kind
};

// Parses one line of a node file; nullopt (and `why`, `col`) when it is not a
// JSON object with a string "event".
std::optional<NodeEvent> parseNodeEventLine(std::string_view line, std::string* why = nullptr, int* col = nullptr);

// Every OUT/nodes/NAME directory (RunLayout::nodesDir()); empty when there is
// none (a single-node run). Malformed lines are skipped and listed in `problems`.
std::map<std::string, NodeInput> readNodes(const std::string& run_dir, std::vector<NodeProblem>* problems = nullptr);

// Folds one agent's events into the node (rank_start, link, survivors...). Pure.
void addAgent(NodeInput& node, AgentRecord agent);

}  // namespace faultline::diagnose
