// Atomic and in-place file writes, announced as file_open events.
#include "reference-trainer/file_writes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "faultline/probe.h"

namespace faultline::trainer {
namespace {

[[noreturn]] void fail(const char* call, const std::string& path) {
  throw std::runtime_error(std::string(call) + " " + path + ": " + std::strerror(errno));
}

void writeAll(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      errno = err;
      fail("write", path);
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void makeDirectories(const std::string& dir) {
  for (size_t pos = 0; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) fail("mkdir", prefix);
  }
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  fl_probe_file_open(tmp.c_str(), "w");
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("open", tmp);
  writeAll(fd, bytes, tmp);
  if (::fsync(fd) != 0 || ::close(fd) != 0) fail("fsync/close", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", tmp);
}

void writeFileInPlace(const std::string& path, std::string_view bytes, bool append) {
  fl_probe_file_open(path.c_str(), append ? "a" : "w");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) fail("open", path);
  writeAll(fd, bytes, path);
  ::close(fd);
}

}  // namespace faultline::trainer
