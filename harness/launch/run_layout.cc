// Creating and clearing the run directory tree.
#include "harness/launch/run_layout.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace faultline::launch {

Result<void> makeDirs(const std::string& path) {
  if (path.empty()) return fail(ErrorCode::kIo, "empty directory path");
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      return fail(ErrorCode::kIo, std::string("mkdir failed: ") + std::strerror(errno), part);
    }
  }
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return fail(ErrorCode::kIo, "not a directory", path);
  }
  return {};
}

std::string absolutePath(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char buf[4096];
  if (!::getcwd(buf, sizeof buf)) return path;
  std::string cwd(buf);
  return path == "." ? cwd : cwd + "/" + path;
}

Result<void> createRunDirs(const RunLayout& layout, int nranks) {
  if (auto r = makeDirs(layout.ranksDir()); !r) return r;
  if (auto r = makeDirs(layout.flightRecorderDir()); !r) return r;
  for (int i = 0; i < nranks; ++i) {
    if (auto r = makeDirs(layout.rankDir(i)); !r) return r;
  }
  return {};
}

Result<void> createLauncherDir(const RunLayout& layout) { return makeDirs(layout.launcherDir()); }

Result<void> clearPreviousRun(const RunLayout& layout) {
  auto remove = [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); };
  for (const auto& dir : layout.previousRunDirs()) {
    struct stat st{};
    if (::lstat(dir.c_str(), &st) != 0) continue;
    if (::nftw(dir.c_str(), remove, 16, FTW_DEPTH | FTW_PHYS) != 0) {
      return fail(ErrorCode::kIo, std::string("cannot remove the previous run's files: ") + std::strerror(errno), dir);
    }
  }
  for (const auto& file : layout.previousRunFiles()) ::unlink(file.c_str());
  return {};
}

}  // namespace faultline::launch
