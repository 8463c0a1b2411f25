// The processes of one node as the agent sees them in /proc: its ranks (the
// topmost descendants carrying RANK) and, after its child has ended, the
// survivors of this run and this node. The filters are pure; scanning /proc
// tolerates processes that vanish while they are read.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace faultline::agent {

struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  char state = '?';                         // R S D Z T ... (stat field 3)
  std::map<std::string, std::string> env;   // only the variables asked for
  std::string cmdline;                      // space-joined argv (filled by the survivors scan)
};

// --- pure ---

struct RankProcess {
  int rank = 0;
  std::optional<int> local_rank;
  pid_t pid = 0;
};
// The ranks below `root` (not root itself): each process carrying a numeric
// RANK whose ancestors up to root carry none (a rank's own children inherit
// its RANK and are not ranks). `procs` needs RANK and LOCAL_RANK read.
std::vector<RankProcess> ranksBelow(const std::vector<ProcInfo>& procs, pid_t root);

// The processes of this run and node that this agent is answerable for: not
// itself, not a zombie, FAULTLINE_RUN_ID and FAULTLINE_NODE equal to the
// agent's (absent matches absent), and FAULTLINE_AGENT_PID equal to its pid:
// a process of another agent on the same node (several Slurm tasks share one)
// is that agent's to report. `procs` needs those three variables read.
std::vector<ProcInfo> survivorsAmong(const std::vector<ProcInfo>& procs, const std::optional<std::string>& run_id,
                                     const std::string& node, pid_t agent_pid);

// --- /proc ---

// Every process's pid, ppid and state (no environment).
std::vector<ProcInfo> scanProcesses();
// Fills `env` with those of `names` that are set in the process's environment
// (as at its exec); false when it could not be read (gone, or a zombie).
bool readEnviron(ProcInfo& p, const std::set<std::string>& names);
// Space-joined argv, "" if gone.
std::string readCmdline(pid_t pid);

}  // namespace faultline::agent
