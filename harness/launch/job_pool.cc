// runJobs: spawnProcess for each job, SIGCHLD waited for with a timeout.
#include "harness/launch/job_pool.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <ctime>

#include "harness/launch/process_spawn.h"

namespace faultline::launch {
namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  size_t job;
  pid_t pid;
  Clock::time_point started;
};

int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

}  // namespace

std::vector<JobOutcome> runJobs(const std::vector<Job>& jobs, int max_running, const JobPoolEvents& events) {
  std::vector<JobOutcome> out(jobs.size());
  if (max_running < 1) max_running = 1;
  // SIGCHLD is waited for with a timeout, so that a live display can tick.
  sigset_t chld, old;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::pthread_sigmask(SIG_BLOCK, &chld, &old);
  // A job runs beside the suite, in its process group, and outlives nothing:
  // the suite waits for every job it started.
  Placement placement;
  placement.new_process_group = false;
  std::vector<Running> running;
  size_t next = 0;
  bool stop_starting = false;
  while ((next < jobs.size() && !stop_starting) || !running.empty()) {
    while (!stop_starting && next < jobs.size() && static_cast<int>(running.size()) < max_running) {
      const size_t i = next++;
      const Job& job = jobs[i];
      SpawnSpec spec;
      spec.executable = job.argv.empty() ? "" : job.argv[0];
      spec.argv = job.argv;
      spec.env = job.env;
      spec.stdout_path = job.log_path;
      spec.stderr_path = job.log_path;
      const auto t0 = Clock::now();
      auto pid = job.argv.empty() ? Result<pid_t>(fail(ErrorCode::kBadUsage, "empty command")) : spawnProcess(spec, placement);
      if (!pid) {
        out[i].start_error = pid.error();
        if (events.finished) events.finished(i, out[i]);
        stop_starting = true;
        break;
      }
      running.push_back({i, *pid, t0});
      if (events.started) events.started(i);
    }
    if (running.empty()) break;
    if (events.tick) events.tick();
    timespec tick{0, 500'000'000};
    ::sigtimedwait(&chld, nullptr, &tick);
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t r = ::waitpid(it->pid, &status, WNOHANG);
      if (r != it->pid) {
        ++it;
        continue;
      }
      JobOutcome& o = out[it->job];
      o.outcome = ProcessOutcome::fromWaitStatus(status);
      o.wall_ms = msSince(it->started);
      const size_t job = it->job;
      it = running.erase(it);
      if (events.finished) events.finished(job, o);
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return out;
}

}  // namespace faultline::launch
