// Rank output for report.json (moved from cli/exec_command.cc).
#include "harness/diagnose/report_text.h"

#include <fcntl.h>
#include <unistd.h>

#include "harness/model/utf8.h"

namespace faultline::diagnose {

std::string sanitizeReportText(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0, n = in.size();
  while (i < n) {
    unsigned char c = s[i];
    // Surrogates and overlong forms too: the renderers copy this text into XML.
    const size_t len = utf8SequenceLength(s + i, n - i);
    if (len > 0) {
      if (len == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
        out.push_back('?');
      } else {
        out.append(in, i, len);
      }
      i += len;
    } else {
      out.append("\xef\xbf\xbd");  // U+FFFD
      ++i;
    }
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
