// Containment of one run: a cgroup v2 group where the machine allows it, else
// PR_SET_CHILD_SUBREAPER + process groups + PR_SET_PDEATHSIG; plus the
// guardian that sweeps the run if the harness itself is killed.
#pragma once

#include <sys/types.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness/launch/process_spawn.h"
#include "harness/model/error.h"
#include "harness/supervise/cgroup.h"
#include "harness/supervise/guardian.h"

namespace faultline::supervise {

enum class ContainmentKind { kCgroup, kSubreaper };
std::string containmentName(ContainmentKind k);

class Containment {
 public:
  // Tries a cgroup (unless allow_cgroup is false), falls back to the
  // subreaper; starts the guardian. Fails only when neither works.
  static Result<std::unique_ptr<Containment>> create(const std::string& run_id, bool allow_cgroup);
  ~Containment();

  ContainmentKind kind() const { return kind_; }
  // How every process of the run is spawned.
  launch::Placement placement() const;
  // cgroup.events, watched for "populated 0"; "" under the subreaper.
  std::string eventsPath() const { return cgroup_ ? cgroup_->eventsPath() : ""; }
  // Live processes of the run (zombies and the harness's helpers excluded).
  std::vector<pid_t> members() const;
  bool empty() const;
  // SIGKILL to everything (cgroup.kill, or each member by pid).
  void killAll() const;
  // Helper processes the harness starts itself (gdb) are not run members.
  void excludeHelper(pid_t pid) { helpers_.insert(pid); }
  void forgetHelper(pid_t pid) { helpers_.erase(pid); }
  pid_t guardianPid() const { return guardian_ ? guardian_->pid() : -1; }
  // Removes the cgroup and lets the guardian go (it sweeps once more).
  // Idempotent: the destructor calls it again.
  void finish();

 private:
  Containment() = default;
  ContainmentKind kind_ = ContainmentKind::kSubreaper;
  std::unique_ptr<RunCgroup> cgroup_;
  std::unique_ptr<Guardian> guardian_;
  std::string run_id_;
  std::set<pid_t> helpers_;
  bool finished_ = false;
};

}  // namespace faultline::supervise
