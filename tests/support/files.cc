// Files in tests.
#include "tests/support/files.h"

#include <sys/stat.h>
#include <time.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace faultline::testing {

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool fileExists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/fl-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::string cmd = "rm -rf '" + path_ + "'";
  (void)!std::system(cmd.c_str());
}

bool waitFor(const std::function<bool()>& cond, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!cond()) {
    if (std::chrono::steady_clock::now() > end) return false;
    timespec ts{0, 5 * 1000 * 1000};
    ::nanosleep(&ts, nullptr);
  }
  return true;
}

}  // namespace faultline::testing
