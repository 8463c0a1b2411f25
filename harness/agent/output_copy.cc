#include "harness/agent/output_copy.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace faultline::agent {
namespace {

// All of it, or as much as the descriptor takes: a closed or full target
// (EPIPE, ENOSPC) loses this copy, never the agent or the other copy.
void writeAll(int fd, const char* data, size_t n) {
  while (fd >= 0 && n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

bool OutputCopy::open(int own_fd, const std::string& copy_path) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  ::fcntl(read_fd_, F_SETFL, ::fcntl(read_fd_, F_GETFL) | O_NONBLOCK);
  own_fd_ = own_fd;
  if (!copy_path.empty()) copy_fd_ = ::open(copy_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  return true;
}

OutputCopy::~OutputCopy() {
  for (int fd : {read_fd_, write_fd_, copy_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

void OutputCopy::closeWriteEnd() {
  if (write_fd_ >= 0) ::close(write_fd_);
  write_fd_ = -1;
}

bool OutputCopy::pump() {
  if (read_fd_ < 0) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(read_fd_, buf, sizeof buf);
    if (n > 0) {
      writeAll(own_fd_, buf, static_cast<size_t>(n));
      writeAll(copy_fd_, buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(read_fd_);  // EOF (or an error that ends the copy)
    read_fd_ = -1;
    return false;
  }
}

}  // namespace faultline::agent
