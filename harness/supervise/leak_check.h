// What a run holds that must not outlive it: shared-memory files and listening
// TCP ports, noted while its processes are alive and checked after teardown.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace faultline::supervise {

class LeakCheck {
 public:
  // Notes what these (live) processes have mapped in /dev/shm and which
  // sockets they hold. Runs on the way to SIGTERM, so it reads only the
  // processes' own /proc entries: /proc/net/tcp{,6} take milliseconds to read
  // on some kernels (8 ms for both on this 2-core VM) and are read in leaks().
  void note(const std::vector<pid_t>& pids);
  // True once no thread of any noted process runs: their sockets and
  // mappings are released with the last thread, which can outlive the exit
  // the supervisor saw (the leader's) by tens of milliseconds.
  bool notedGone() const;
  // After teardown: "shm:/dev/shm/x (left behind)", "port:29500 (held by pid
  // 42)" for a noted socket that is still a listening TCP socket.
  std::vector<std::string> leaks(const std::vector<pid_t>& survivors) const;
  // Unlinks the noted /dev/shm files still there once the run is over (its
  // leaks() already named them): a harness that runs job after job must not
  // fill /dev/shm with what each job left (DeepSpeed's CPU all-reduce, 66 MiB
  // a rank, every run). Returns how many it removed.
  int removeLeftShm() const;

 private:
  std::set<pid_t> pids_;
  std::set<std::string> shm_;
  std::set<unsigned long> sockets_;  // socket inodes the run's processes held
};

}  // namespace faultline::supervise
