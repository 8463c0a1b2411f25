// The leak guard, through /proc (harness/supervise/proc_fs.h).
#include "tests/support/leak_guard.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "harness/supervise/proc_fs.h"

namespace faultline::testing {

std::vector<pid_t> zombieChildren() {
  std::vector<pid_t> out;
  for (pid_t p : supervise::listPids()) {
    auto st = supervise::readStat(p);
    if (st && st->ppid == ::getpid() && st->state == 'Z') out.push_back(p);
  }
  return out;
}

LeakGuard::LeakGuard() : fds_(supervise::countOpenFds()) {}

LeakGuard::~LeakGuard() {
  EXPECT_EQ(supervise::countOpenFds(), fds_) << "file descriptors leaked in the harness";
  EXPECT_TRUE(zombieChildren().empty()) << "zombie children left in the harness";
}

}  // namespace faultline::testing
