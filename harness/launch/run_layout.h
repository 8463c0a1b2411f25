// Where the files of one run live (ARCHITECTURE.md "Where the pieces of a run live").
#pragma once

#include <string>

#include "harness/model/error.h"

namespace faultline::launch {

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
  std::string reportPath() const { return out_ + "/report.json"; }
  std::string supervisorPath() const { return out_ + "/supervisor.json"; }

  // mkdir -p of OUT, OUT/ranks and, if given, OUT/ranks/0..nranks-1.
  Result<void> create(int nranks) const;
  Result<void> createLauncherDir() const;
  // Removes what an earlier run left in OUT (ranks/, launcher/, report.json,
  // supervisor.json, daemon.pid), so that no stale rank directory is read as
  // part of this run. Nothing else in OUT is touched.
  Result<void> clearPrevious() const;

 private:
  std::string out_;
};

// mkdir -p; fails with kIo naming the path.
Result<void> makeDirs(const std::string& path);
// Makes a path absolute against the current directory (ranks may chdir).
std::string absolutePath(const std::string& path);

}  // namespace faultline::launch
