// `faultline agent`: runs one node's part of a multi-node job and records what
// it sees into OUT/nodes/NAME/agent-PID.jsonl (docs/MULTINODE.md).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace faultline::agent {

struct AgentOptions {
  std::string out_dir;  // --out; "" = FAULTLINE_RUN_DIR
  std::string node;     // --node; "" = SLURMD_NODENAME with --slurm-task
  std::string link;     // --link IFNAME; "" = no link sampling
  bool slurm_task = false;
  std::vector<std::string> command;
};

// The node name the agent uses: --node, else (with --slurm-task) the Slurm
// node the task runs on; "" when there is none.
std::string resolveNode(const AgentOptions& opts, const char* slurmd_nodename);

// Runs COMMAND as its child until it ends and returns the agent's exit status:
// the child's exit code, or 128+N when signal N killed it; 127 when COMMAND
// cannot be run. Bad usage (no node, no OUT, no command, --slurm-task outside
// a step) prints why on `err` and returns 2; the events file that cannot be
// written returns 3 before anything is started.
int runAgent(const AgentOptions& opts, std::ostream& err);

}  // namespace faultline::agent
