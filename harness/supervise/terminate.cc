// terminateOrKill: the SIGTERM -> grace -> SIGKILL ladder, over hooks or a pid set.
#include "harness/supervise/terminate.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <thread>

#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"

namespace faultline::supervise {

using Clock = std::chrono::steady_clock;

std::vector<pid_t> TerminateResult::survivors() const {
  std::vector<pid_t> out;
  for (const auto& p : processes) {
    if (p.fate == Fate::kSurvived) out.push_back(p.pid);
  }
  return out;
}

namespace {

void pollUntil(const std::function<bool()>& done, Clock::duration max) {
  const auto deadline = Clock::now() + max;
  while (!done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

TerminatedProcess* find(TerminateResult& r, pid_t pid) {
  auto it = std::find_if(r.processes.begin(), r.processes.end(), [&](const auto& p) { return p.pid == pid; });
  return it == r.processes.end() ? nullptr : &*it;
}

}  // namespace

TerminateResult terminateOrKill(const Ladder& ladder, Clock::duration grace, Clock::duration kill_wait) {
  TerminateResult result;
  const auto send = [&](pid_t pid, int sig) {
    if (ladder.send) {
      ladder.send(pid, sig);
    } else {
      os::sys().kill(pid, sig);
    }
  };
  const auto wait = [&](const std::function<bool()>& done, Clock::duration max) {
    if (ladder.wait) {
      ladder.wait(done, max);
    } else {
      pollUntil(done, max);
    }
  };
  const auto none_left = [&] { return ladder.members().empty(); };

  // Children before their parents: a rank gets the teardown's signal, not
  // whatever its launcher's death sends it first.
  const std::vector<pid_t> live = childrenFirst(ladder.members());
  if (live.empty()) return result;
  for (pid_t pid : live) {
    result.processes.push_back({pid, Fate::kEndedOnSigterm, std::nullopt});
    send(pid, SIGTERM);
    os::sys().kill(pid, SIGCONT);  // a stopped process would hold SIGTERM pending forever
  }
  result.escalation = Escalation::kSigterm;
  if (ladder.on_step) ladder.on_step(Escalation::kSigterm, live);
  wait([&] { return none_left() || (ladder.cut_grace && ladder.cut_grace()); }, grace);

  const std::vector<pid_t> rest = ladder.members();
  if (rest.empty()) return result;
  for (pid_t pid : rest) {
    if (ladder.on_survivor) ladder.on_survivor(pid);
    // One that appeared during the grace (forked while stopping) gets the SIGKILL only.
    if (TerminatedProcess* p = find(result, pid)) {
      p->fate = Fate::kKilled;
    } else {
      result.processes.push_back({pid, Fate::kKilled, std::nullopt});
    }
    send(pid, SIGKILL);
  }
  if (ladder.kill_rest) ladder.kill_rest();
  result.escalation = Escalation::kSigkill;
  if (ladder.on_step) ladder.on_step(Escalation::kSigkill, rest);
  wait(none_left, kill_wait);
  for (pid_t pid : ladder.members()) {
    if (TerminatedProcess* p = find(result, pid)) {
      p->fate = Fate::kSurvived;
    } else {
      result.processes.push_back({pid, Fate::kSurvived, std::nullopt});
    }
  }
  return result;
}

TerminateResult terminateOrKill(const std::vector<pid_t>& pids, Clock::duration grace, Clock::duration kill_wait) {
  std::map<pid_t, ProcessOutcome> reaped;
  // Still to end: not reaped here, and (for a process that is not the
  // caller's child) alive by /proc.
  const auto alive = [&](pid_t pid) {
    if (reaped.count(pid)) return false;
    int status = 0;
    pid_t w;
    do {
      w = os::sys().waitpid(pid, &status, WNOHANG);
    } while (w < 0 && errno == EINTR);
    if (w == pid) {
      reaped.emplace(pid, ProcessOutcome::fromWaitStatus(status));
      return false;
    }
    if (w == 0) return true;
    return isAlive(pid);  // ECHILD: someone else's child
  };
  Ladder ladder;
  ladder.members = [&] {
    std::vector<pid_t> out;
    for (pid_t pid : pids) {
      if (alive(pid)) out.push_back(pid);
    }
    return out;
  };
  TerminateResult result = terminateOrKill(ladder, grace, kill_wait);
  for (auto& p : result.processes) {
    if (auto it = reaped.find(p.pid); it != reaped.end()) p.outcome = it->second;
  }
  return result;
}

}  // namespace faultline::supervise
