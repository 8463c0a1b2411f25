// Helpers shared by the supervision and CLI tests: fixture paths, temp run
// directories, and the no-zombie / no-fd-leak checks every test ends with.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "harness/launch/rank_env.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::testing {

inline std::string hostilePath() { return FL_HOSTILE; }

// A fresh directory under $TMPDIR, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/fl-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    path_ = ::mkdtemp(buf.data());
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    (void)!std::system(cmd.c_str());
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool fileExists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

// Waits for a condition with a generous bound; true if it came.
inline bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    timespec ts{0, 5 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
  return true;
}

// Children of this process (any thread) that are zombies.
inline std::vector<pid_t> zombieChildren() {
  std::vector<pid_t> out;
  for (pid_t p : supervise::listPids()) {
    auto st = supervise::readStat(p);
    if (st && st->ppid == ::getpid() && st->state == 'Z') out.push_back(p);
  }
  return out;
}

// Every test records the fd count first and checks it, and zombies, last.
class LeakGuard {
 public:
  LeakGuard() : fds_(supervise::countOpenFds()) {}
  ~LeakGuard() {
    EXPECT_EQ(supervise::countOpenFds(), fds_) << "file descriptors leaked in the harness";
    EXPECT_TRUE(zombieChildren().empty()) << "zombie children left in the harness";
  }

 private:
  int fds_;
};

// torchrun's default --master_port (29500) is shared by every test that
// runs it at once (ctest -j): each run gets a port that was free a moment ago.
inline std::string freeTorchrunPortFlag() {
  auto port = launch::findFreePort();
  return "--master_port=" + std::to_string(port ? *port : 29500);
}

}  // namespace faultline::testing
