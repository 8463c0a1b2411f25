// Atomic whole-file writes.
#include "harness/model/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace faultline {

Result<void> writeFileAtomically(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(ErrorCode::kIo, std::string("open failed: ") + std::strerror(errno), tmp);
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return fail(ErrorCode::kIo, std::string("write failed: ") + std::strerror(err), tmp);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return fail(ErrorCode::kIo, std::string("rename failed: ") + std::strerror(err), path);
  }
  return {};
}

}  // namespace faultline
