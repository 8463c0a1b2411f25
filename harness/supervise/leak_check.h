// What a run holds that must not outlive it: shared-memory files and listening
// TCP ports, noted while its processes are alive and checked after teardown.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace faultline::supervise {

class LeakCheck {
 public:
  // Notes what these (live) processes have mapped in /dev/shm or listen on.
  void note(const std::vector<pid_t>& pids);
  // After teardown: "shm:/dev/shm/x (left behind)", "port:29500 (held by pid 42)".
  std::vector<std::string> leaks(const std::vector<pid_t>& survivors) const;

 private:
  std::set<std::string> shm_;
  std::map<unsigned long, int> ports_;  // socket inode -> port
};

}  // namespace faultline::supervise
