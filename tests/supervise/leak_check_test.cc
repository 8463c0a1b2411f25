// LeakCheck on this test process: what it noted while alive is reported when
// it is still there after "teardown", and nothing is when it was released.
#include "harness/supervise/leak_check.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "harness/supervise/proc_fs.h"

#include <gtest/gtest.h>

namespace faultline::supervise {
namespace {

int listenOnLoopback(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd, 1), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  port = ntohs(a.sin_port);
  return fd;
}

TEST(LeakCheck, AListeningPortStillHeldAfterTeardownIsALeak) {
  int port = 0;
  const int fd = listenOnLoopback(port);
  LeakCheck check;
  check.note({::getpid()});
  const auto leaks = check.leaks({::getpid()});
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(leaks[0], "port:" + std::to_string(port) + " (held by pid " + std::to_string(::getpid()) + ")");
  ::close(fd);
  EXPECT_TRUE(check.leaks({}).empty());  // released: no leak
}

TEST(LeakCheck, AShmFileLeftBehindIsALeak) {
  const std::string name = "/fl-leak-test-" + std::to_string(::getpid());
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  LeakCheck check;
  check.note({::getpid()});
  ::close(fd);
  const auto leaks = check.leaks({});
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ(leaks[0], "shm:/dev/shm" + name + " (left behind)");
  ::shm_unlink(name.c_str());
  EXPECT_TRUE(check.leaks({}).empty());
}

TEST(LeakCheck, TheShmFilesLeftBehindAreRemovedOnceNamed) {
  const std::string name = "/fl-leak-remove-" + std::to_string(::getpid());
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  LeakCheck check;
  check.note({::getpid()});
  ::close(fd);
  ASSERT_EQ(check.leaks({}).size(), 1u);
  EXPECT_EQ(check.removeLeftShm(), 1);
  struct stat st{};
  EXPECT_NE(::stat(("/dev/shm" + name).c_str(), &st), 0);
  EXPECT_TRUE(check.leaks({}).empty());
  EXPECT_EQ(check.removeLeftShm(), 0);  // nothing left
}

// A thread that waits for the parent to close `fd`, then ends the process
// (the last thread of a process whose leader already exited).
void* waitForRelease(void* fd) {
  char c;
  while (::read(*static_cast<int*>(fd), &c, 1) > 0) {
  }
  return nullptr;
}

// Lightning's and DeepSpeed's ranks, killed, read as gone when their leader
// has exited; a Gloo thread still exiting holds their listening sockets for
// tens of milliseconds more. The leak check must wait for the last thread,
// not report the socket as leaked.
TEST(LeakCheck, AProcessIsGoneOnlyWithItsLastThread) {
  int ready[2], go[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(release), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    ::close(go[1]);
    ::close(release[1]);
    int port = 0;
    listenOnLoopback(port);  // held until the process is gone
    pthread_t t;
    if (::pthread_create(&t, nullptr, waitForRelease, &release[0]) != 0) ::_exit(2);
    if (::write(ready[1], &port, sizeof port) != sizeof port) ::_exit(3);
    char c;
    while (::read(go[0], &c, 1) > 0) {
    }
    // The leader thread exits (the raw system call: pthread_exit would unwind
    // through the test framework); the thread keeps the process.
    ::syscall(SYS_exit, 0);
  }
  ::close(ready[1]);
  ::close(go[0]);
  ::close(release[0]);
  int port = 0;
  ASSERT_EQ(::read(ready[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  LeakCheck check;
  check.note({child});  // while it runs, as at its first step
  ::close(go[1]);       // the leader exits
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (isAlive(child) && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_FALSE(isAlive(child)) << "the leader never exited";
  // A zombie leader, a live thread: not gone, and its socket still listens.
  EXPECT_TRUE(anyThreadLive(child));
  EXPECT_FALSE(check.notedGone());
  EXPECT_EQ(check.leaks({}), (std::vector<std::string>{"port:" + std::to_string(port)}));
  ::close(release[1]);  // the thread returns: the process ends
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_FALSE(anyThreadLive(child));
  EXPECT_TRUE(check.notedGone());
  EXPECT_TRUE(check.leaks({}).empty());
  ::close(ready[0]);
}

}  // namespace
}  // namespace faultline::supervise
