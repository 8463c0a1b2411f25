// The real system calls behind the seam, and the switch a test flips.
#include "harness/os/sys.h"

#include <signal.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

namespace faultline::os {
namespace {

Sys& realSys() {
  static Sys real;
  return real;
}

std::atomic<Sys*> current{nullptr};

}  // namespace

int Sys::open(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }
ssize_t Sys::write(int fd, const void* buf, size_t n) { return ::write(fd, buf, n); }
int Sys::close(int fd) { return ::close(fd); }
int Sys::rename(const char* from, const char* to) { return ::rename(from, to); }
int Sys::unlink(const char* path) { return ::unlink(path); }
int Sys::kill(pid_t pid, int sig) { return ::kill(pid, sig); }
pid_t Sys::waitpid(pid_t pid, int* status, int options) { return ::waitpid(pid, status, options); }
int Sys::inotifyInit(int flags) { return ::inotify_init1(flags); }
int Sys::inotifyAddWatch(int fd, const char* path, uint32_t mask) { return ::inotify_add_watch(fd, path, mask); }
int Sys::socket(int domain, int type, int protocol) { return ::socket(domain, type, protocol); }
int Sys::pidfdOpen(pid_t pid, unsigned flags) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, flags)); }

Sys& sys() {
  Sys* s = current.load(std::memory_order_acquire);
  return s ? *s : realSys();
}

ScopedSys::ScopedSys(Sys& replacement) : previous_(current.exchange(&replacement, std::memory_order_acq_rel)) {}
ScopedSys::~ScopedSys() { current.store(previous_, std::memory_order_release); }

}  // namespace faultline::os
