// A cgroup v2 group owned by one run: placement, enumeration, cgroup.kill, populated.
// Created as a new child of the harness's own cgroup; the harness's own group
// is never written to, and no process of the harness is ever moved.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline::supervise {

// The cgroup2 mount point from /proc/self/mountinfo ("" when there is none).
std::string findCgroup2Mount();

class RunCgroup {
 public:
  // mkdir <mount>/<own cgroup>/<name>; kSystem when cgroup v2 is absent or
  // not writable (the caller then falls back to a subreaper).
  static Result<std::unique_ptr<RunCgroup>> create(const std::string& name);
  ~RunCgroup();
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  const std::string& path() const { return path_; }
  // O_WRONLY fd of cgroup.procs: a child writes "0" to it between fork and exec.
  int procsFd() const { return procs_fd_; }
  std::string eventsPath() const { return path_ + "/cgroup.events"; }
  // Every process in the group and its descendants' groups.
  std::vector<pid_t> pids() const;
  bool populated() const;
  // SIGKILL to every process, via cgroup.kill (or one by one on kernels without it).
  void killAll() const;
  // rmdir (children first); fails while processes remain.
  Result<void> remove();

 private:
  RunCgroup(std::string path, int procs_fd) : path_(std::move(path)), procs_fd_(procs_fd) {}
  std::string path_;
  int procs_fd_ = -1;
  bool removed_ = false;
};

}  // namespace faultline::supervise
