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
  std::string rankStdout(int rank) const { return rankDir(rank) + "/stdout"; }
  std::string rankStderr(int rank) const { return rankDir(rank) + "/stderr"; }
  std::string rankEvents(int rank) const { return rankDir(rank) + "/events.jsonl"; }
  std::string rankErrorFile(int rank) const { return rankDir(rank) + "/error.json"; }
  std::string rankStacks(int rank) const { return rankDir(rank) + "/stacks.txt"; }
  std::string launcherDir() const { return out_ + "/launcher"; }
  std::string launcherStdout() const { return launcherDir() + "/stdout"; }
  std::string launcherStderr() const { return launcherDir() + "/stderr"; }
  std::string launcherLogsDir() const { return launcherDir() + "/logs"; }
  std::string reportPath() const { return out_ + "/report.json"; }
  std::string supervisorPath() const { return out_ + "/supervisor.json"; }
  std::string junitPath() const { return out_ + "/junit.xml"; }
  std::string markdownPath() const { return out_ + "/report.md"; }
  std::string htmlPath() const { return out_ + "/report.html"; }
  std::string daemonPidPath() const { return out_ + "/daemon.pid"; }

  // What an earlier run leaves that a new run removes before it starts, so
  // that no stale rank directory is read as part of it; nothing else in OUT.
  std::vector<std::string> previousRunDirs() const { return {ranksDir(), launcherDir()}; }
  std::vector<std::string> previousRunFiles() const { return {reportPath(), supervisorPath(), daemonPidPath()}; }

 private:
  std::string out_;
};

}  // namespace faultline
