// cgroup v2 run group.
#include "harness/supervise/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {
namespace {

void collectPids(const std::string& dir, std::vector<pid_t>& out) {
  if (auto text = readSmallFile(dir + "/cgroup.procs")) {
    std::istringstream in(*text);
    pid_t p;
    while (in >> p) out.push_back(p);
  }
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_type == DT_DIR && e->d_name[0] != '.') collectPids(dir + "/" + e->d_name, out);
    }
    ::closedir(d);
  }
}

bool removeTree(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_type == DT_DIR && e->d_name[0] != '.') removeTree(dir + "/" + e->d_name);
    }
    ::closedir(d);
  }
  return ::rmdir(dir.c_str()) == 0 || errno == ENOENT;
}

}  // namespace

std::string findCgroup2Mount() {
  auto text = readSmallFile("/proc/self/mountinfo");
  if (!text) return "";
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // "... mount_point options - fstype source superoptions"
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, devno, root, mount;
    head >> id >> parent >> devno >> root >> mount;
    return mount;
  }
  return "";
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::create(const std::string& name) {
  const std::string mount = findCgroup2Mount();
  if (mount.empty()) return fail(ErrorCode::kSystem, "no cgroup2 mount in /proc/self/mountinfo");
  auto self = readSmallFile("/proc/self/cgroup");
  std::string own;
  if (self) {
    std::istringstream in(*self);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) own = line.substr(3);
    }
  }
  if (own.empty()) return fail(ErrorCode::kSystem, "no cgroup v2 entry in /proc/self/cgroup");
  if (own == "/") own.clear();
  const std::string path = mount + own + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) {
    return fail(ErrorCode::kSystem, std::string("mkdir failed: ") + std::strerror(errno), path);
  }
  int fd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    ::rmdir(path.c_str());
    return fail(ErrorCode::kSystem, std::string("open cgroup.procs failed: ") + std::strerror(e), path);
  }
  return std::unique_ptr<RunCgroup>(new RunCgroup(path, fd));
}

RunCgroup::~RunCgroup() {
  if (procs_fd_ >= 0) ::close(procs_fd_);
  if (!removed_) {
    killAll();
    removeTree(path_);
  }
}

std::vector<pid_t> RunCgroup::pids() const {
  std::vector<pid_t> out;
  collectPids(path_, out);
  return out;
}

bool RunCgroup::populated() const {
  auto text = readSmallFile(eventsPath());
  if (!text) return false;
  return text->find("populated 1") != std::string::npos;
}

void RunCgroup::killAll() const {
  int fd = ::open((path_ + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    bool ok = ::write(fd, "1", 1) == 1;
    ::close(fd);
    if (ok) return;
  }
  for (pid_t p : pids()) ::kill(p, SIGKILL);
}

Result<void> RunCgroup::remove() {
  if (removed_) return {};
  if (!removeTree(path_)) return fail(ErrorCode::kSystem, std::string("rmdir failed: ") + std::strerror(errno), path_);
  removed_ = true;
  return {};
}

}  // namespace faultline::supervise
