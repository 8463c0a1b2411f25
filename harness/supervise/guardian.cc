// Guardian process: sweeps the run when the harness's pipe reaches EOF.
#include "harness/supervise/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace faultline::supervise {
namespace {

void napMs(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  ::nanosleep(&ts, nullptr);
}

// Kills every process whose environment holds `marker` ("FAULTLINE_RUN_ID=..\0").
// Returns how many it signalled. Reads each environ in 64 KiB chunks with an
// overlap of the marker's length, on the stack: no allocation after fork.
int killByMarker(const std::string& marker) {
  int killed = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return 0;
  const pid_t self = ::getpid();
  char buf[64 * 1024];
  const size_t keep = marker.size();
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (!end || *end != '\0' || pid <= 0 || pid == self) continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    size_t have = 0;
    bool found = false;
    while (!found) {
      ssize_t n = ::read(fd, buf + have, sizeof buf - have);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
      found = ::memmem(buf, have, marker.data(), marker.size()) != nullptr;
      if (have > keep) {
        std::memmove(buf, buf + have - keep, keep);
        have = keep;
      }
    }
    ::close(fd);
    if (found) {
      ::kill(static_cast<pid_t>(pid), SIGKILL);
      ++killed;
    }
  }
  ::closedir(d);
  return killed;
}

[[noreturn]] void guardianMain(int read_fd, const std::string& cgroup_path, const std::string& marker) {
  // Survive the terminal's Ctrl-C and the harness's death long enough to sweep.
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) ::signal(s, SIG_IGN);
  ::prctl(PR_SET_NAME, "fl-guardian");
  if (read_fd > 3) ::syscall(SYS_close_range, 0, read_fd - 1, 0);
  ::syscall(SYS_close_range, read_fd + 1, ~0U, 0);
  char c = 0;
  bool released = false;
  while (true) {
    ssize_t n = ::read(read_fd, &c, 1);
    if (n == 1 && c == 'D') released = true;  // the harness verified the run empty itself
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  if (released) ::_exit(0);
  if (!cgroup_path.empty()) {
    int fd = ::open((cgroup_path + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, "1", 1);
      ::close(fd);
    }
  }
  // Processes fork while being killed: sweep until a round finds nothing.
  for (int round = 0; round < 100; ++round) {
    if (killByMarker(marker) == 0) break;
    napMs(10);
  }
  if (!cgroup_path.empty()) {
    for (int i = 0; i < 200 && ::rmdir(cgroup_path.c_str()) != 0 && errno == EBUSY; ++i) napMs(10);
  }
  ::_exit(0);
}

}  // namespace

Result<std::unique_ptr<Guardian>> Guardian::start(const std::string& cgroup_path, const std::string& run_id) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(ErrorCode::kSystem, std::string("pipe2 failed: ") + std::strerror(errno));
  std::string marker = std::string("FAULTLINE_RUN_ID=") + run_id;
  marker.push_back('\0');
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return fail(ErrorCode::kSystem, std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(fds[1]);
    guardianMain(fds[0], cgroup_path, marker);
  }
  ::close(fds[0]);
  return std::unique_ptr<Guardian>(new Guardian(pid, fds[1]));
}

void Guardian::release(bool run_is_empty) {
  if (write_fd_ >= 0) {
    if (run_is_empty) (void)!::write(write_fd_, "D", 1);
    ::close(write_fd_);
    write_fd_ = -1;
  }
  if (pid_ <= 0) return;
  // Bounded: the guardian exits at once when released, and its sweep of a
  // run that was not verified empty takes milliseconds.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    while (::poll(&p, 1, 2000) < 0 && errno == EINTR) {
    }
    ::close(pidfd);
  }
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

Guardian::~Guardian() { release(false); }

}  // namespace faultline::supervise
