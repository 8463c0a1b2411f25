// Rank output for report.json (moved from cli/exec_command.cc).
#include "harness/diagnose/report_text.h"

#include <fcntl.h>
#include <unistd.h>

#include "harness/model/utf8.h"

namespace faultline::diagnose {

std::string sanitizeReportText(const std::string& in) {
  // The one UTF-8 policy, then what report text adds: no control characters
  // (a terminal escape in a rank's stderr must not reach a reader's terminal).
  std::string out = sanitizeUtf8(in);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') c = '?';
  }
  return out;
}

std::string fileTail(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t start = size > static_cast<off_t>(limit) ? size - static_cast<off_t>(limit) : 0;
  std::string buf(static_cast<size_t>(size - start), '\0');
  ssize_t n = buf.empty() ? 0 : ::pread(fd, buf.data(), buf.size(), start);
  ::close(fd);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (start > 0) {
    // Do not begin mid-line (or mid-character) when a line start is near.
    size_t nl = buf.find('\n');
    if (nl != std::string::npos && nl < 4096) buf.erase(0, nl + 1);
  }
  return sanitizeReportText(buf);
}

}  // namespace faultline::diagnose
