// /proc readers used by containment, watch loop, teardown and leak check.
#include "harness/supervise/proc_fs.h"

#include <dirent.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <sstream>

#include "harness/os/sys.h"

namespace faultline::supervise {

std::optional<std::string> readSmallFile(const std::string& path, size_t limit) {
  int fd = os::sys().open(path.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  while (out.size() < limit) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

namespace {

// A stat file (/proc/PID/stat, or a thread's /proc/PID/task/TID/stat) of `pid`.
std::optional<ProcStat> readStatFile(const std::string& path, pid_t pid) {
  auto text = readSmallFile(path);
  if (!text) return std::nullopt;
  // comm may contain spaces and parentheses: fields start after the last ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos || close + 2 >= text->size()) return std::nullopt;
  std::istringstream in(text->substr(close + 2));
  ProcStat st;
  st.pid = pid;
  in >> st.state >> st.ppid >> st.pgid;
  // Field 52 (exit_code) is the 50th after ')' counting state as the 1st.
  std::string field;
  std::vector<std::string> rest;
  while (in >> field) rest.push_back(field);
  // Field N is rest[N - 6]: utime 14, stime 15, exit_code 52.
  if (rest.size() >= 4) st.flags = std::strtoull(rest[3].c_str(), nullptr, 10);
  if (rest.size() >= 10) st.cpu_ticks = std::strtoull(rest[8].c_str(), nullptr, 10) + std::strtoull(rest[9].c_str(), nullptr, 10);
  if (rest.size() >= 47) st.exit_code = std::atoi(rest[46].c_str());
  if (!in.eof() && in.fail() && rest.empty()) return std::nullopt;
  return st;
}

}  // namespace

std::optional<ProcStat> readStat(pid_t pid) { return readStatFile("/proc/" + std::to_string(pid) + "/stat", pid); }

std::optional<ProcStat> readThreadStat(pid_t pid, pid_t tid) {
  return readStatFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat", pid);
}

bool doomed(pid_t pid) {
  auto st = readStat(pid);
  if (!st || st->exiting()) return true;
  auto status = readSmallFile("/proc/" + std::to_string(pid) + "/status");
  if (!status) return true;
  // SigPnd (this thread) and ShdPnd (the process): hex masks, signal N at bit N-1.
  for (const char* key : {"\nSigPnd:", "\nShdPnd:"}) {
    const size_t at = status->find(key);
    if (at == std::string::npos) continue;
    const uint64_t mask = std::strtoull(status->c_str() + at + std::strlen(key), nullptr, 16);
    if (mask & (uint64_t{1} << (SIGKILL - 1))) return true;
  }
  return false;
}

std::vector<pid_t> listPids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) pids.push_back(static_cast<pid_t>(v));
  }
  ::closedir(d);
  return pids;
}

bool isAlive(pid_t pid) {
  errno = 0;
  auto st = readStat(pid);
  if (st) return st->state != 'Z' && st->state != 'X';
  // /proc could not be read for the harness's own trouble (EMFILE, ENFILE,
  // ENOMEM), not because the process is gone: the kernel says directly. A
  // process taken for dead is one a teardown would never end.
  if (errno == 0 || errno == ENOENT || errno == ESRCH) return false;
  return os::sys().kill(pid, 0) == 0 || errno == EPERM;
}

bool anyThreadLive(pid_t pid) {
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(task.c_str());
  if (!d) return false;
  bool live = false;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    // A thread still in its exit (PF_EXITING) may hold the files yet: only
    // a zombie or dead one has let them go.
    auto st = readStatFile(task + "/" + e->d_name + "/stat", pid);
    if (st && st->state != 'Z' && st->state != 'X') {
      live = true;
      break;
    }
  }
  ::closedir(d);
  return live;
}

namespace {

// One pass over /proc: every process's parent and CPU ticks.
struct ProcessTable {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  std::map<pid_t, uint64_t> cpu_ticks;

  ProcessTable() {
    for (pid_t p : listPids()) {
      if (auto st = readStat(p)) {
        children.emplace(st->ppid, p);
        cpu_ticks[p] = st->cpu_ticks;
      }
    }
  }

  // Every process below root (not root itself), by the ppid chain.
  std::vector<pid_t> below(pid_t root) const {
    std::vector<pid_t> out;
    std::vector<pid_t> todo{root};
    while (!todo.empty()) {
      const pid_t p = todo.back();
      todo.pop_back();
      auto [b, e] = children.equal_range(p);
      for (auto it = b; it != e; ++it) {
        out.push_back(it->second);
        todo.push_back(it->second);
      }
    }
    return out;
  }
};

}  // namespace

std::vector<pid_t> descendantsOf(pid_t root) { return ProcessTable().below(root); }

std::vector<pid_t> childrenFirst(std::vector<pid_t> pids, const std::function<pid_t(pid_t)>& parent_of) {
  const auto parent = [&](pid_t p) -> pid_t {
    if (parent_of) return parent_of(p);
    const auto st = readStat(p);
    return st ? st->ppid : 0;
  };
  const std::set<pid_t> in_set(pids.begin(), pids.end());
  std::map<pid_t, int> depth;  // ancestors of each within the set
  for (pid_t p : pids) {
    int d = 0;
    pid_t up = parent(p);
    // Bounded: a chain through /proc read while processes exit may loop.
    for (int hops = 0; up > 1 && hops < 64; ++hops, up = parent(up)) {
      if (in_set.count(up)) ++d;
    }
    depth[p] = d;
  }
  std::stable_sort(pids.begin(), pids.end(), [&](pid_t a, pid_t b) { return depth[a] > depth[b]; });
  return pids;
}

std::map<pid_t, uint64_t> treeCpuTicks(const std::vector<pid_t>& roots, const std::set<pid_t>& below_only) {
  const ProcessTable table;
  std::map<pid_t, uint64_t> out;
  for (pid_t root : roots) {
    auto it = table.cpu_ticks.find(root);
    if (it == table.cpu_ticks.end()) continue;
    uint64_t total = below_only.count(root) ? 0 : it->second;
    for (pid_t p : table.below(root)) {
      if (auto t = table.cpu_ticks.find(p); t != table.cpu_ticks.end()) total += t->second;
    }
    out[root] = total;
  }
  return out;
}

namespace {

std::optional<uint64_t> ioCharsAt(const std::string& path) {
  auto text = readSmallFile(path, 4096);
  if (!text) return std::nullopt;
  uint64_t total = 0;
  bool any = false;
  std::istringstream in(*text);
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) {
    if (key == "rchar:" || key == "wchar:") {
      total += value;
      any = true;
    }
  }
  if (!any) return std::nullopt;
  return total;
}

}  // namespace

std::optional<uint64_t> readIoChars(pid_t pid) { return ioCharsAt("/proc/" + std::to_string(pid) + "/io"); }

std::optional<uint64_t> readThreadIoChars(pid_t pid, pid_t tid) {
  return ioCharsAt("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/io");
}

std::optional<ThreadActivity> readThreadActivity(pid_t pid, pid_t tid) {
  const auto thread = readThreadStat(pid, tid);
  if (!thread) return std::nullopt;
  ThreadActivity a;
  a.state = thread->state;
  a.cpu_ticks = thread->cpu_ticks;
  a.io_chars = readThreadIoChars(pid, tid).value_or(0);
  return a;
}

std::optional<std::string> environVar(pid_t pid, const std::string& name) {
  auto text = readSmallFile("/proc/" + std::to_string(pid) + "/environ", 4 << 20);
  if (!text) return std::nullopt;
  const std::string prefix = name + "=";
  size_t pos = 0;
  while (pos < text->size()) {
    size_t end = text->find('\0', pos);
    if (end == std::string::npos) end = text->size();
    if (text->compare(pos, prefix.size(), prefix) == 0) return text->substr(pos + prefix.size(), end - pos - prefix.size());
    pos = end + 1;
  }
  return std::nullopt;
}

std::string cmdline(pid_t pid) {
  auto text = readSmallFile("/proc/" + std::to_string(pid) + "/cmdline", 64 << 10);
  if (!text) return "";
  while (!text->empty() && text->back() == '\0') text->pop_back();
  for (char& c : *text) {
    if (c == '\0') c = ' ';
  }
  return *text;
}

bool catchesSignal(pid_t pid, int sig) {
  auto text = readSmallFile("/proc/" + std::to_string(pid) + "/status");
  if (!text) return false;
  size_t pos = text->find("SigCgt:");
  if (pos == std::string::npos) return false;
  unsigned long long mask = std::strtoull(text->c_str() + pos + 7, nullptr, 16);
  return (mask >> (sig - 1)) & 1ULL;
}

std::string exeName(pid_t pid) {
  char buf[4096];
  ssize_t n = ::readlink(("/proc/" + std::to_string(pid) + "/exe").c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

int countOpenFds() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return -1;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(d);
  return n - 1;  // the directory stream's own fd
}

HeldResources heldResourcesOf(pid_t pid) {
  HeldResources out;
  const std::string base = "/proc/" + std::to_string(pid);
  static constexpr std::string_view kShm = "/dev/shm/";
  if (auto maps = readSmallFile(base + "/maps", 16 << 20)) {
    const std::string_view text = *maps;
    for (size_t p = text.find(kShm); p != std::string_view::npos; p = text.find(kShm, p + 1)) {
      const size_t end = text.find('\n', p);
      std::string_view path = text.substr(p, end == std::string_view::npos ? std::string_view::npos : end - p);
      if (path.find(" (deleted)") != std::string_view::npos) continue;
      out.shm.emplace(path);
    }
  }
  if (DIR* d = ::opendir((base + "/fd").c_str())) {
    while (dirent* e = ::readdir(d)) {
      char buf[4096];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, buf, sizeof buf - 1);
      if (n <= 0) continue;
      const std::string_view target(buf, static_cast<size_t>(n));
      if (target.rfind("socket:[", 0) == 0) {
        out.sockets.insert(std::strtoul(buf + 8, nullptr, 10));
      } else if (target.rfind(kShm, 0) == 0 && target.find(" (deleted)") == std::string_view::npos) {
        out.shm.emplace(target);
      }
    }
    ::closedir(d);
  }
  return out;
}

std::set<unsigned long> socketInodesOf(pid_t pid) {
  std::set<unsigned long> out;
  if (DIR* d = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = ::readdir(d)) {
      char buf[256];
      ssize_t n = ::readlinkat(::dirfd(d), e->d_name, buf, sizeof buf - 1);
      if (n <= 0) continue;
      buf[n] = '\0';
      if (std::strncmp(buf, "socket:[", 8) == 0) out.insert(std::strtoul(buf + 8, nullptr, 10));
    }
    ::closedir(d);
  }
  return out;
}

std::map<unsigned long, int> listeningTcpSockets() {
  std::map<unsigned long, int> out;
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    auto text = readSmallFile(file, 64 << 20);
    if (!text) continue;
    std::istringstream in(*text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
      f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
      if (st != "0A") continue;  // TCP_LISTEN
      size_t colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      out[std::strtoul(inode.c_str(), nullptr, 10)] = static_cast<int>(std::strtol(local.c_str() + colon + 1, nullptr, 16));
    }
  }
  return out;
}

}  // namespace faultline::supervise
