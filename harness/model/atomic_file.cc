// Atomic whole-file writes, through the OS seam (os/sys.h).
#include "harness/model/atomic_file.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "harness/os/sys.h"

namespace faultline {

Result<void> writeFileAtomically(const std::string& path, std::string_view text) {
  os::Sys& sys = os::sys();
  const std::string tmp = path + ".tmp";
  int fd;
  do {
    fd = sys.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return fail(ErrorCode::kIo, std::string("open failed: ") + std::strerror(errno), tmp);
  // On any failure the temp file goes and `path` keeps what it held.
  const auto abandon = [&](const char* call, int err, const std::string& named) {
    if (fd >= 0) sys.close(fd);
    sys.unlink(tmp.c_str());
    return fail(ErrorCode::kIo, std::string(call) + " failed: " + std::strerror(err), named);
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = sys.write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return abandon("write", n < 0 ? errno : EIO, tmp);
    done += static_cast<size_t>(n);
  }
  // Linux releases the descriptor even when close says EINTR; the data is
  // written by then. Any other error (a deferred ENOSPC on NFS) is a failure.
  const int closed = sys.close(fd);
  const int close_err = errno;
  fd = -1;
  if (closed != 0 && close_err != EINTR) return abandon("close", close_err, tmp);
  if (sys.rename(tmp.c_str(), path.c_str()) != 0) return abandon("rename", errno, path);
  return {};
}

}  // namespace faultline
