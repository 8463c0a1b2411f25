// Shared-memory and port leak detection.
#include "harness/supervise/leak_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {

void LeakCheck::note(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) {
    pids_.insert(p);
    const HeldResources held = heldResourcesOf(p);
    shm_.insert(held.shm.begin(), held.shm.end());
    sockets_.insert(held.sockets.begin(), held.sockets.end());
  }
}

bool LeakCheck::notedGone() const {
  for (pid_t p : pids_) {
    if (anyThreadLive(p)) return false;
  }
  return true;
}

std::vector<std::string> LeakCheck::leaks(const std::vector<pid_t>& survivors) const {
  std::vector<std::string> out;
  // A /dev/shm file outlives every process that mapped it unless one unlinks it.
  for (const auto& path : shm_) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0) out.push_back("shm:" + path + " (left behind)");
  }
  if (!sockets_.empty()) {
    const auto listening = listeningTcpSockets();
    for (unsigned long inode : sockets_) {
      const auto it = listening.find(inode);
      if (it == listening.end()) continue;
      const int port = it->second;
      std::string holder;
      for (pid_t p : survivors) {
        if (socketInodesOf(p).count(inode)) holder = " (held by pid " + std::to_string(p) + ")";
      }
      out.push_back("port:" + std::to_string(port) + holder);
    }
  }
  return out;
}

int LeakCheck::removeLeftShm() const {
  int removed = 0;
  for (const auto& path : shm_) {
    if (::unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace faultline::supervise
