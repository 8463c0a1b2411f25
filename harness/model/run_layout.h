// Where the files of one run live (CONTRACT.md section 6): the one spelling of
// the run directory, for the stages that write it and those that read it back.
// Paths only; creating and clearing the tree is launch's (launch/run_layout.h).
#pragma once

#include <string>
#include <vector>

namespace faultline {

class RunLayout {
 public:
  explicit RunLayout(std::string out_dir) : out_(std::move(out_dir)) {}

  const std::string& outDir() const { return out_; }
  std::string ranksDir() const { return out_ + "/ranks"; }
  std::string rankDir(int rank) const { return ranksDir() + "/" + std::to_string(rank); }
  // A rank's files of one attempt: the first's in its directory, a restart's
  // (faultline's own launcher, [stack] max_restarts) in attempt_K under it.
  // Every attempt appends to the one events file.
  std::string rankAttemptDir(int rank, int attempt) const {
    return attempt <= 0 ? rankDir(rank) : rankDir(rank) + "/attempt_" + std::to_string(attempt);
  }
  std::string rankStdout(int rank, int attempt = 0) const { return rankAttemptDir(rank, attempt) + "/stdout"; }
  std::string rankStderr(int rank, int attempt = 0) const { return rankAttemptDir(rank, attempt) + "/stderr"; }
  std::string rankEvents(int rank) const { return rankDir(rank) + "/events.jsonl"; }
  std::string rankErrorFile(int rank, int attempt = 0) const { return rankAttemptDir(rank, attempt) + "/error.json"; }
  std::string rankStacks(int rank) const { return rankDir(rank) + "/stacks.txt"; }
  // The native threads of a Python rank stuck on its way out (eu-stack or
  // gdb), beside the shim's Python dump in stacks.txt.
  std::string rankNativeStacks(int rank) const { return rankDir(rank) + "/native_stacks.txt"; }
  // A Python rank's threads at a fatal signal (the shim's faulthandler: the
  // thread that took it is its "Current thread"), one dump per crash.
  std::string rankCrashStacks(int rank) const { return rankDir(rank) + "/crash_stacks.txt"; }
  std::string launcherDir() const { return out_ + "/launcher"; }
  std::string launcherStdout() const { return launcherDir() + "/stdout"; }
  std::string launcherStderr() const { return launcherDir() + "/stderr"; }
  std::string launcherLogsDir() const { return launcherDir() + "/logs"; }
  // A launcher's one log file per rank, each rank's stdout and stderr
  // together (deepspeed --enable_each_rank_log: STAMP_rankR.log).
  std::string launcherRankLogsDir() const { return launcherDir() + "/rank-logs"; }
  std::string reportPath() const { return out_ + "/report.json"; }
  std::string supervisorPath() const { return out_ + "/supervisor.json"; }
  std::string junitPath() const { return out_ + "/junit.xml"; }
  std::string markdownPath() const { return out_ + "/report.md"; }
  std::string htmlPath() const { return out_ + "/report.html"; }
  std::string daemonPidPath() const { return out_ + "/daemon.pid"; }
  // torch's Flight Recorder dumps (TORCH_FR_DUMP_TEMP_FILE = the prefix: torch
  // appends the rank) and the pipes that ask for one (CONTRACT.md section 6).
  std::string flightRecorderDir() const { return out_ + "/flight_recorder"; }
  std::string flightRecorderPrefix() const { return flightRecorderDir() + "/rank_"; }
  std::string flightRecorderPipePrefix() const { return flightRecorderDir() + "/pipe_"; }

  // Multi-node (docs/MULTINODE.md): what each node's agents and the supervisor's node faults write.
  std::string nodesDir() const { return out_ + "/nodes"; }
  std::string nodeDir(const std::string& name) const { return nodesDir() + "/" + name; }
  // torchrun-multinode: the --log_dir of node n2 and later (n1 logs in launcherLogsDir()).
  std::string nodeLogsDir(const std::string& name) const { return nodeDir(name) + "/logs"; }
  std::string nodeAgentEvents(const std::string& name, int pid) const {
    return nodeDir(name) + "/agent-" + std::to_string(pid) + ".jsonl";
  }
  std::string nodeSupervisorEvents(const std::string& name) const { return nodeDir(name) + "/supervisor.jsonl"; }
  // What the node's launcher wrote, as its node agent passed it on to the
  // run's launcher output (every node's together): this node's part alone.
  std::string nodeLauncherStdout(const std::string& name) const { return nodeDir(name) + "/launcher.stdout"; }
  std::string nodeLauncherStderr(const std::string& name) const { return nodeDir(name) + "/launcher.stderr"; }

  // The fault-free twin of a recovery scenario (recovery.same_result): a whole
  // run directory of its own, written after the run itself.
  std::string twinDir() const { return out_ + "/twin"; }
  // The trainer's own output (FAULTLINE_RUN_DIR/trainer: checkpoints, logs),
  // emptied before each run: a checkpoint left by an earlier run into the
  // same OUT would be resumed from.
  std::string trainerDir() const { return out_ + "/trainer"; }

  // What an earlier run leaves that a new run removes before it starts, so
  // that no stale rank directory is read as part of it; nothing else in OUT.
  std::vector<std::string> previousRunDirs() const { return {ranksDir(), launcherDir(), flightRecorderDir(), nodesDir(), twinDir(), trainerDir()}; }
  std::vector<std::string> previousRunFiles() const { return {reportPath(), supervisorPath(), daemonPidPath()}; }

 private:
  std::string out_;
};

}  // namespace faultline
