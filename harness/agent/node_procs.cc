// Scans /proc for the agent and filters what it finds.
#include "harness/agent/node_procs.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <unordered_map>

namespace faultline::agent {

namespace {

std::optional<int> parseInt(const std::string& s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::string> readAll(const std::string& path, size_t limit) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  while (out.size() < limit) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::string> var(const ProcInfo& p, const std::string& name) {
  const auto it = p.env.find(name);
  if (it == p.env.end()) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<RankProcess> ranksBelow(const std::vector<ProcInfo>& procs, pid_t root) {
  std::unordered_map<pid_t, const ProcInfo*> by_pid;
  for (const auto& p : procs) by_pid[p.pid] = &p;
  std::vector<RankProcess> out;
  for (const auto& p : procs) {
    if (p.pid == root) continue;
    const auto rank_var = var(p, "RANK");
    const auto rank = rank_var ? parseInt(*rank_var) : std::nullopt;
    if (!rank) continue;
    // Below root, and no ancestor between it and root carries a RANK.
    bool below = false;
    bool topmost = true;
    pid_t up = p.ppid;
    for (int depth = 0; depth < 4096 && up > 0; ++depth) {
      if (up == root) {
        below = true;
        break;
      }
      const auto it = by_pid.find(up);
      if (it == by_pid.end()) break;
      if (const auto r = var(*it->second, "RANK"); r && parseInt(*r)) topmost = false;
      up = it->second->ppid;
    }
    if (!below || !topmost) continue;
    const auto local_var = var(p, "LOCAL_RANK");
    out.push_back({*rank, local_var ? parseInt(*local_var) : std::nullopt, p.pid});
  }
  return out;
}

std::vector<ProcInfo> survivorsAmong(const std::vector<ProcInfo>& procs, const std::optional<std::string>& run_id,
                                     const std::string& node, pid_t agent_pid) {
  std::vector<ProcInfo> out;
  const std::string self = std::to_string(agent_pid);
  for (const auto& p : procs) {
    if (p.pid == agent_pid || p.state == 'Z') continue;
    if (var(p, "FAULTLINE_RUN_ID") != run_id) continue;
    if (var(p, "FAULTLINE_NODE") != node) continue;
    if (var(p, "FAULTLINE_AGENT_PID") != self) continue;
    out.push_back(p);
  }
  return out;
}

std::vector<ProcInfo> scanProcesses() {
  std::vector<ProcInfo> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const auto pid = parseInt(e->d_name);
    if (!pid || *pid <= 0) continue;
    const auto stat = readAll("/proc/" + std::string(e->d_name) + "/stat", 4096);
    if (!stat) continue;
    // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
    const size_t close = stat->rfind(')');
    if (close == std::string::npos || close + 4 > stat->size()) continue;
    ProcInfo p;
    p.pid = *pid;
    p.state = (*stat)[close + 2];
    p.ppid = static_cast<pid_t>(std::strtol(stat->c_str() + close + 4, nullptr, 10));
    out.push_back(std::move(p));
  }
  ::closedir(d);
  return out;
}

bool readEnviron(ProcInfo& p, const std::set<std::string>& names) {
  const auto environ = readAll("/proc/" + std::to_string(p.pid) + "/environ", 4 << 20);
  if (!environ || environ->empty()) return false;
  size_t pos = 0;
  while (pos < environ->size()) {
    size_t end = environ->find('\0', pos);
    if (end == std::string::npos) end = environ->size();
    const std::string_view kv(environ->data() + pos, end - pos);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) {
      std::string key(kv.substr(0, eq));
      if (names.count(key)) p.env[std::move(key)] = std::string(kv.substr(eq + 1));
    }
    pos = end + 1;
  }
  return true;
}

std::string readCmdline(pid_t pid) {
  auto raw = readAll("/proc/" + std::to_string(pid) + "/cmdline", 64 << 10);
  if (!raw) return {};
  while (!raw->empty() && raw->back() == '\0') raw->pop_back();
  for (char& c : *raw) {
    if (c == '\0') c = ' ';
  }
  return *raw;
}

}  // namespace faultline::agent
