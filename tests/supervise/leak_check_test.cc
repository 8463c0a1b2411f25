// LeakCheck on this test process: what it noted while alive is reported when
// it is still there after "teardown", and nothing is when it was released.
#include "harness/supervise/leak_check.h"

#include <arpa/inet.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

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

}  // namespace
}  // namespace faultline::supervise
