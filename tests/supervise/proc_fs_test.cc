// Reading /proc for one thread of a process: a Ray worker's training thread
// is idle while the process's other threads work.
#include "harness/supervise/proc_fs.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

namespace faultline::supervise {
namespace {

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
  // This thread works: 200 ms of CPU, 20 clock ticks at 100 Hz.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  volatile uint64_t x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + 1;
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

}  // namespace
}  // namespace faultline::supervise
