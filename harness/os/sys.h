// The one seam for the system calls the harness makes where a failure has
// to be handled (fmt's posix-mock, as a class): open, write, close, rename,
// unlink, kill, waitpid, and what the watch loop opens to follow the run
// (inotify, the proc connector's socket, pidfds) go through the current Sys,
// which is the real one unless a test installs another for its scope. Each call has the
// system call's own contract: -1 (or a negative ssize_t) with errno set.
// Nothing here retries; the callers decide what is retried (EINTR) and what
// is reported.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cstdint>

namespace faultline::os {

class Sys {
 public:
  virtual ~Sys() = default;
  virtual int open(const char* path, int flags, mode_t mode);
  virtual ssize_t write(int fd, const void* buf, size_t n);
  virtual int close(int fd);
  virtual int rename(const char* from, const char* to);
  virtual int unlink(const char* path);
  virtual int kill(pid_t pid, int sig);
  virtual pid_t waitpid(pid_t pid, int* status, int options);
  virtual int inotifyInit(int flags);
  virtual int inotifyAddWatch(int fd, const char* path, uint32_t mask);
  virtual int socket(int domain, int type, int protocol);
  virtual int pidfdOpen(pid_t pid, unsigned flags);
};

// The Sys in force: the real calls unless a ScopedSys is alive.
Sys& sys();

// Installs `replacement` until destroyed (then the previous one again). For
// tests; one thread at a time.
class ScopedSys {
 public:
  explicit ScopedSys(Sys& replacement);
  ~ScopedSys();
  ScopedSys(const ScopedSys&) = delete;
  ScopedSys& operator=(const ScopedSys&) = delete;

 private:
  Sys* previous_;
};

}  // namespace faultline::os
