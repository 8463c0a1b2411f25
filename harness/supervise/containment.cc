// Containment: cgroup v2 or subreaper fallback, and the guardian.
#include "harness/supervise/containment.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "harness/launch/rank_env.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {

std::string containmentName(ContainmentKind k) { return k == ContainmentKind::kCgroup ? "cgroup" : "subreaper"; }

Result<std::unique_ptr<Containment>> Containment::create(const std::string& run_id, bool allow_cgroup) {
  std::unique_ptr<Containment> c(new Containment());
  c->run_id_ = run_id;
  if (allow_cgroup) {
    auto cg = RunCgroup::create("faultline-" + run_id);
    if (cg) {
      c->cgroup_ = std::move(*cg);
      c->kind_ = ContainmentKind::kCgroup;
    }
  }
  // Subreaper in both modes: a daemon whose parent exits is reparented to the
  // harness, which reaps it, instead of to an init that may never reap.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0 && !c->cgroup_) {
    return fail(ErrorCode::kSystem, "neither a cgroup nor PR_SET_CHILD_SUBREAPER is available");
  }
  auto g = Guardian::start(c->cgroup_ ? c->cgroup_->path() : "", run_id);
  if (!g) return tl::unexpected(g.error());
  c->guardian_ = std::move(*g);
  return c;
}

Containment::~Containment() { finish(); }

launch::Placement Containment::placement() const {
  launch::Placement p;
  p.cgroup_procs_fd = cgroup_ ? cgroup_->procsFd() : -1;
  // Direct children die with the harness; the guardian covers the rest.
  p.pdeath_signal = SIGKILL;
  p.new_process_group = true;
  return p;
}

std::vector<pid_t> Containment::members() const {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  auto keep = [&](pid_t p) {
    return p != self && p != guardianPid() && !helpers_.count(p) && isAlive(p);
  };
  if (cgroup_) {
    for (pid_t p : cgroup_->pids()) {
      if (keep(p)) out.push_back(p);
    }
    return out;
  }
  std::set<pid_t> seen;
  // Every descendant is a member (a rank may exec with a cleared environment),
  // except the harness's own helpers and whatever they started.
  std::set<pid_t> helper_tree(helpers_.begin(), helpers_.end());
  for (pid_t h : helpers_) {
    for (pid_t d : descendantsOf(h)) helper_tree.insert(d);
  }
  for (pid_t p : descendantsOf(self)) {
    if (helper_tree.count(p) || !keep(p)) continue;
    if (guardianPid() > 0 && p == guardianPid()) continue;
    if (seen.insert(p).second) out.push_back(p);
  }
  // A daemon reparented to some other subreaper still carries the run id.
  for (pid_t p : listPids()) {
    if (seen.count(p) || !keep(p)) continue;
    if (environVar(p, launch::kRunIdVar) == run_id_ && seen.insert(p).second) out.push_back(p);
  }
  return out;
}

bool Containment::empty() const {
  if (cgroup_) return !cgroup_->populated();
  return members().empty();
}

void Containment::killAll() const {
  if (cgroup_) {
    cgroup_->killAll();
    return;
  }
  for (pid_t p : members()) ::kill(p, SIGKILL);
}

void Containment::finish() {
  // A second call would find no cgroup and take the subreaper path: a scan of
  // every process on the machine (stat and environ of each) for nothing.
  if (finished_) return;
  finished_ = true;
  bool empty = true;
  if (cgroup_) {
    if (cgroup_->populated()) cgroup_->killAll();
    empty = cgroup_->remove().has_value();
    cgroup_.reset();
  } else {
    empty = members().empty();
  }
  if (guardian_) {
    guardian_->release(empty);
    guardian_.reset();
  }
}

}  // namespace faultline::supervise
