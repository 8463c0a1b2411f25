// Files in tests: whole-file reads, existence, fresh temp directories, and
// waiting for a condition with a bound.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace faultline::testing {

// The whole file (binary, as it is on disk); "" when it cannot be read.
std::string readFile(const std::string& path);

bool fileExists(const std::string& path);

// A fresh directory $TMPDIR/fl-test-XXXXXX (/tmp without TMPDIR), removed
// with everything in it by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Polls `cond` every 5 ms until it holds (true) or `limit` has passed (false).
bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit);

}  // namespace faultline::testing
