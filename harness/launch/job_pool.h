// The suite's job runner: a list of commands, at most N at a time, each with
// its output in a log file and its outcome returned as a value. Jobs are
// started with spawnProcess, in the suite's process group (a Ctrl-C reaches
// every job, which writes its report as interrupted), with an empty signal
// mask and default dispositions, as from a shell.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/error.h"
#include "harness/model/outcome.h"

namespace faultline::launch {

struct Job {
  std::vector<std::string> argv;  // argv[0]: the executable, a path
  std::vector<std::string> env;   // "KEY=VALUE"
  std::string log_path;           // stdout and stderr, truncated; stdin is /dev/null
};

struct JobOutcome {
  // exited(code) or killed(signal); notStarted when it never ran (`start_error`,
  // or an earlier job could not start and the pool stopped starting more).
  ProcessOutcome outcome = ProcessOutcome::notStarted();
  std::optional<Error> start_error;
  int64_t wall_ms = 0;
};

struct JobPoolEvents {
  std::function<void(size_t job)> started;                        // may be empty
  std::function<void(size_t job, const JobOutcome& outcome)> finished;  // as each one ends
  std::function<void()> tick;  // about every 500 ms while jobs run (a live display)
};

// Runs `jobs` in order, at most `max_running` (>= 1) at once, and returns one
// outcome per job. A job that cannot be started stops the pool from starting
// more; the running ones are still waited for. Blocks SIGCHLD while it runs
// (the caller's mask comes back on return) and reaps only its own jobs.
std::vector<JobOutcome> runJobs(const std::vector<Job>& jobs, int max_running, const JobPoolEvents& events = {});

}  // namespace faultline::launch
