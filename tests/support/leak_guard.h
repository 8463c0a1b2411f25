// The check every supervision and CLI test ends with: no descriptor leaked in
// this process, no zombie child left.
#pragma once

#include <sys/types.h>

#include <vector>

namespace faultline::testing {

// Children of this process (any thread) that are zombies.
std::vector<pid_t> zombieChildren();

// Records the open-descriptor count when made; its destructor fails the test
// when the count differs or a zombie child is left.
class LeakGuard {
 public:
  LeakGuard();
  ~LeakGuard();
  LeakGuard(const LeakGuard&) = delete;
  LeakGuard& operator=(const LeakGuard&) = delete;

 private:
  int fds_;
};

}  // namespace faultline::testing
