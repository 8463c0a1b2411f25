// The teardown ladder as one function (folly's terminateOrKill): SIGTERM to
// every process still there, a grace period, SIGKILL to what is left, a
// bounded wait, and what became of each process as a value. The watch loop's
// teardown runs it on its event loop; anything else (a test, a tool) runs
// the plain form over a set of pids.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/outcome.h"
#include "harness/model/report.h"

namespace faultline::supervise {

// How the ladder reaches the processes. Only `members` is required.
struct Ladder {
  // The processes still to end, read again after every wait: they fork, and
  // a launcher's children appear while it is being stopped.
  std::function<std::vector<pid_t>()> members;
  // Sends one signal (and records it). Default: kill(2).
  std::function<void(pid_t, int)> send;
  // Waits until `done` holds or `max` has passed. Default: polls every 5 ms.
  std::function<void(const std::function<bool()>& done, std::chrono::steady_clock::duration max)> wait;
  // Ends the grace early (a second Ctrl-C, say). Default: never.
  std::function<bool()> cut_grace;
  // Called with the processes just signalled, once for SIGTERM and once for
  // SIGKILL, before the wait that follows.
  std::function<void(Escalation, const std::vector<pid_t>&)> on_step;
  // Called for each process still there after the grace, before its SIGKILL
  // (while its /proc entry can still be read).
  std::function<void(pid_t)> on_survivor;
  // After the SIGKILLs: whatever else ends the run at once (cgroup.kill).
  std::function<void()> kill_rest;
};

enum class Fate {
  kEndedOnSigterm,  // gone within the grace
  kKilled,          // still there after the grace, SIGKILLed, then gone
  kSurvived,        // still there after the SIGKILL wait too
};

struct TerminatedProcess {
  pid_t pid = 0;
  Fate fate = Fate::kEndedOnSigterm;
  // How it ended, where the plain form reaped it (a child of the caller);
  // the watch loop's reaper keeps its own.
  std::optional<ProcessOutcome> outcome;
};

struct TerminateResult {
  Escalation escalation = Escalation::kNone;  // the last step taken
  std::vector<TerminatedProcess> processes;   // each process signalled, in the order first signalled
  std::vector<pid_t> survivors() const;       // kSurvived: the teardown failed for these
};

// The ladder: SIGTERM and SIGCONT (a stopped process holds SIGTERM pending)
// to every member, wait up to `grace` for none to be left, SIGKILL to every
// member still there, wait up to `kill_wait`. Nothing to end: escalation
// kNone and no processes. Never throws; a signal that cannot be sent (the
// process already gone) is not an error.
TerminateResult terminateOrKill(const Ladder& ladder, std::chrono::steady_clock::duration grace,
                                std::chrono::steady_clock::duration kill_wait);

// The plain form over `pids`: those that are the caller's children are reaped
// here and their outcomes returned; the others are watched through /proc
// (gone or a zombie counts as ended).
TerminateResult terminateOrKill(const std::vector<pid_t>& pids, std::chrono::steady_clock::duration grace,
                                std::chrono::steady_clock::duration kill_wait = std::chrono::seconds(2));

}  // namespace faultline::supervise
