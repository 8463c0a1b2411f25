// A Sys (harness/os/sys.h) that fails the calls a test chooses, with the
// errno it chooses, and passes every other call to the real one: how the
// tests make EINTR, EPIPE, ENOSPC and EMFILE happen where the harness writes
// its run directory, where its watch loop signals and reaps, and where it
// opens what follows the run (inotify, the proc connector, pidfds).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "harness/os/sys.h"

namespace faultline::testing {

class FaultySys : public os::Sys {
 public:
  enum class Call { kOpen, kWrite, kClose, kRename, kUnlink, kKill, kWaitpid, kInotifyInit, kInotifyAddWatch, kSocket, kPidfdOpen };
  // Fails `times` calls of `call` (-1: all) with `err`; narrowed by the setters.
  struct Rule {
    Rule(Call c, int e, int t = 1) : call(c), err(e), times(t) {}
    Rule& skipping(int n) { after = n; return *this; }               // let the first n matching calls through
    Rule& onPath(std::string p) { path = std::move(p); return *this; }  // a file (or watched path) whose path contains p
    Rule& onSignal(int s) { signal = s; return *this; }               // kill: only this signal
    Call call;
    int err;
    int times;
    int after = 0;
    std::string path;
    int signal = 0;
  };
  void add(Rule r);
  // Calls of that kind made, and how many of them this made fail.
  int calls(Call c) const;
  int failed(Call c) const;

  int open(const char* path, int flags, mode_t mode) override;
  ssize_t write(int fd, const void* buf, size_t n) override;
  int close(int fd) override;
  int rename(const char* from, const char* to) override;
  int unlink(const char* path) override;
  int kill(pid_t pid, int sig) override;
  pid_t waitpid(pid_t pid, int* status, int options) override;
  int inotifyInit(int flags) override;
  int inotifyAddWatch(int fd, const char* path, uint32_t mask) override;
  int socket(int domain, int type, int protocol) override;
  int pidfdOpen(pid_t pid, unsigned flags) override;

 private:
  // The errno to fail this call with, or 0 to let it through.
  int decide(Call c, const std::string& path, int sig);
  std::string pathOf(int fd) const;

  mutable std::mutex mu_;
  std::vector<Rule> rules_;
  std::map<int, int> seen_;  // rule index -> matching calls seen
  std::map<Call, int> calls_, failed_;
  std::map<int, std::string> fds_;  // open descriptors -> their paths
};

}  // namespace faultline::testing
