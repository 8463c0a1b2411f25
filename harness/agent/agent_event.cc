// Formats the agent's event lines.
#include "harness/agent/agent_event.h"

#include <sys/wait.h>

#include "harness/model/outcome.h"

namespace faultline::agent {

std::string agentEventLine(const AgentIdentity& id, int64_t t_ns, const std::string& event,
                           const nlohmann::json& fields) {
  nlohmann::ordered_json line;
  line["t_ns"] = t_ns;
  line["node"] = id.node;
  line["host"] = id.host;
  line["agent_pid"] = id.agent_pid;
  line["event"] = event;
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) line[key] = value;
  }
  // Invalid UTF-8 (a command line can carry anything) is replaced, never thrown on.
  return line.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

nlohmann::json waitStatusFields(int wait_status) {
  if (WIFSIGNALED(wait_status)) return {{"signal", signalName(WTERMSIG(wait_status))}};
  return {{"exit_code", WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1}};
}

int exitStatusFor(int wait_status) {
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  return 1;
}

}  // namespace faultline::agent
