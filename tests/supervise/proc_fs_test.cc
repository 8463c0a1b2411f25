// Reading /proc for one thread of a process, and for the processes below
// one: a Ray worker's training thread is idle while the process's other
// threads work.
#include "harness/supervise/proc_fs.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace faultline::supervise {
namespace {

// This thread works until it has had `how_long` of CPU (its own clock, not
// the wall's: on a loaded machine 200 ms of wall time gave it 70 ms of CPU):
// 200 ms of CPU is 20 clock ticks at 100 Hz.
void burnCpu(std::chrono::milliseconds how_long) {
  const auto cpu_ns = [] {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  };
  const int64_t until = cpu_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(how_long).count();
  volatile uint64_t x = 0;
  while (cpu_ns() < until) x = x + 1;
}

TEST(ProcFs, AThreadsActivityLeavesItsProcessesOtherThreadsOut) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::atomic<pid_t> tid{0};
  std::thread waiter([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return done; });  // idle: no CPU, no I/O
  });
  while (tid == 0) std::this_thread::yield();
  const auto before = readThreadActivity(::getpid(), tid);
  const auto process_before = readStat(::getpid());
  ASSERT_TRUE(before && process_before);
  burnCpu(std::chrono::milliseconds(200));
  const auto after = readThreadActivity(::getpid(), tid);
  const auto process_after = readStat(::getpid());
  ASSERT_TRUE(after && process_after);
  EXPECT_GE(process_after->cpu_ticks, process_before->cpu_ticks + 10) << "the process worked";
  EXPECT_LT(after->cpu_ticks, before->cpu_ticks + 2) << "the waiting thread did not";
  EXPECT_EQ(after->io_chars, before->io_chars);
  EXPECT_EQ(after->state, 'S');
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_FALSE(readThreadActivity(::getpid(), tid)) << "a thread that is gone";
}

// A Ray rank's activity is its work thread's plus its child processes':
// the tree below its process, without the process's own (busy) threads.
TEST(ProcFs, ATreeBelowARootLeavesTheRootsOwnTimeOut) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();  // idle until killed
    ::_exit(0);
  }
  const pid_t self = ::getpid();
  const auto before = treeCpuTicks({self});
  const auto below_before = treeCpuTicks({self}, {self});
  burnCpu(std::chrono::milliseconds(200));
  const auto after = treeCpuTicks({self});
  const auto below_after = treeCpuTicks({self}, {self});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(before.count(self) && after.count(self) && below_before.count(self) && below_after.count(self));
  EXPECT_GE(after.at(self), before.at(self) + 10) << "the root worked";
  EXPECT_LT(below_after.at(self), below_before.at(self) + 2) << "the idle child did not";
}

}  // namespace
}  // namespace faultline::supervise
