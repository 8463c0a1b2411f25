// The guardian: a tiny process that outlives a SIGKILLed harness just long
// enough to kill the run. It holds the read end of a pipe whose only writer is
// the harness; EOF means the harness is gone (or done), and it then kills the
// run's cgroup (cgroup.kill) and every process carrying the run's
// FAULTLINE_RUN_ID, daemonised grandchildren included.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "harness/model/error.h"

namespace faultline::supervise {

class Guardian {
 public:
  // Forks the guardian. Call before any rank is spawned and while the harness
  // is single-threaded (the child runs plain system calls only, but still).
  // cgroup_path may be empty (subreaper containment).
  static Result<std::unique_ptr<Guardian>> start(const std::string& cgroup_path, const std::string& run_id);
  ~Guardian();
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;

  pid_t pid() const { return pid_; }
  // Closes the pipe and waits (bounded) for the guardian to exit. With
  // run_is_empty the harness vouches that nothing of the run is left and the
  // guardian skips its /proc sweep; otherwise it sweeps first.
  void release(bool run_is_empty);

 private:
  Guardian(pid_t pid, int fd) : pid_(pid), write_fd_(fd) {}
  pid_t pid_ = -1;
  int write_fd_ = -1;
};

}  // namespace faultline::supervise
