// FaultySys: scripted failures over the real system calls.
#include "tests/support/faulty_sys.h"

#include <cerrno>

namespace faultline::testing {

void FaultySys::add(Rule r) {
  std::lock_guard<std::mutex> lock(mu_);
  rules_.push_back(std::move(r));
}

int FaultySys::calls(Call c) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = calls_.find(c);
  return it == calls_.end() ? 0 : it->second;
}

int FaultySys::failed(Call c) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failed_.find(c);
  return it == failed_.end() ? 0 : it->second;
}

int FaultySys::decide(Call c, const std::string& path, int sig) {
  std::lock_guard<std::mutex> lock(mu_);
  ++calls_[c];
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Rule& r = rules_[i];
    if (r.call != c || (!r.path.empty() && path.find(r.path) == std::string::npos) || (r.signal && r.signal != sig)) {
      continue;
    }
    const int n = seen_[static_cast<int>(i)]++;
    if (n < r.after || (r.times >= 0 && n >= r.after + r.times)) continue;
    ++failed_[c];
    return r.err;
  }
  return 0;
}

std::string FaultySys::pathOf(int fd) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fds_.find(fd);
  return it == fds_.end() ? std::string() : it->second;
}

int FaultySys::open(const char* path, int flags, mode_t mode) {
  if (int e = decide(Call::kOpen, path, 0)) {
    errno = e;
    return -1;
  }
  const int fd = Sys::open(path, flags, mode);
  if (fd >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    fds_[fd] = path;
  }
  return fd;
}

ssize_t FaultySys::write(int fd, const void* buf, size_t n) {
  if (int e = decide(Call::kWrite, pathOf(fd), 0)) {
    errno = e;
    return -1;
  }
  return Sys::write(fd, buf, n);
}

int FaultySys::close(int fd) {
  const std::string path = pathOf(fd);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fds_.erase(fd);
  }
  if (int e = decide(Call::kClose, path, 0)) {
    Sys::close(fd);  // as Linux does: the descriptor is released even when close fails
    errno = e;
    return -1;
  }
  return Sys::close(fd);
}

int FaultySys::rename(const char* from, const char* to) {
  if (int e = decide(Call::kRename, to, 0)) {
    errno = e;
    return -1;
  }
  return Sys::rename(from, to);
}

int FaultySys::unlink(const char* path) {
  if (int e = decide(Call::kUnlink, path, 0)) {
    errno = e;
    return -1;
  }
  return Sys::unlink(path);
}

int FaultySys::kill(pid_t pid, int sig) {
  if (int e = decide(Call::kKill, "", sig)) {
    errno = e;
    return -1;
  }
  return Sys::kill(pid, sig);
}

pid_t FaultySys::waitpid(pid_t pid, int* status, int options) {
  if (int e = decide(Call::kWaitpid, "", 0)) {
    errno = e;
    return -1;
  }
  return Sys::waitpid(pid, status, options);
}

// The calls that only open something: fail as chosen, else the real call.
#define FL_FAULTY_CALL(call, path, real) \
  if (int e = decide(call, path, 0)) {   \
    errno = e;                           \
    return -1;                           \
  }                                      \
  return real

int FaultySys::inotifyInit(int flags) { FL_FAULTY_CALL(Call::kInotifyInit, "", Sys::inotifyInit(flags)); }
int FaultySys::inotifyAddWatch(int fd, const char* path, uint32_t mask) {
  FL_FAULTY_CALL(Call::kInotifyAddWatch, path, Sys::inotifyAddWatch(fd, path, mask));
}
int FaultySys::socket(int domain, int type, int protocol) { FL_FAULTY_CALL(Call::kSocket, "", Sys::socket(domain, type, protocol)); }
int FaultySys::pidfdOpen(pid_t pid, unsigned flags) { FL_FAULTY_CALL(Call::kPidfdOpen, "", Sys::pidfdOpen(pid, flags)); }

#undef FL_FAULTY_CALL

}  // namespace faultline::testing
