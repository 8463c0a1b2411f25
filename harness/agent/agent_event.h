// The lines of OUT/nodes/NAME/agent-PID.jsonl (docs/MULTINODE.md): one JSON
// object a line, the common fields first. Pure; no file access.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace faultline::agent {

// What every event of one agent carries.
struct AgentIdentity {
  std::string node;
  std::string host;
  pid_t agent_pid = 0;
};

// One event as the line the agent writes: t_ns, node, host, agent_pid, event,
// then `fields` (an object; null for none), newline-terminated.
std::string agentEventLine(const AgentIdentity& id, int64_t t_ns, const std::string& event,
                           const nlohmann::json& fields);

// The `exit_code` or `signal` (a name: "SIGKILL") of a wait status, as event fields.
nlohmann::json waitStatusFields(int wait_status);

// The exit status of the agent for a child's wait status: its exit code, or
// 128+N when signal N killed it (as a shell does).
int exitStatusFor(int wait_status);

}  // namespace faultline::agent
