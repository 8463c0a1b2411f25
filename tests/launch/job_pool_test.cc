// The suite's job pool: outcomes as values, at most N at a time, logs, and a
// job that cannot start.
#include "harness/launch/job_pool.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/support/files.h"

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

struct Dir {
  Dir() {
    std::string t = (fs::temp_directory_path() / "fl-job-pool-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

using faultline::testing::readFile;

Job shell(const std::string& script, const std::string& log) { return Job{{"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, log}; }

TEST(JobPool, OutcomesAreValuesAndAtMostNRunAtOnce) {
  Dir d;
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back(shell("echo out" + std::to_string(i) + "; echo err >&2; sleep 0.2; exit " + std::to_string(i),
                         d.path + "/" + std::to_string(i) + ".log"));
  }
  jobs.push_back(shell("kill -KILL $$", d.path + "/killed.log"));
  int now = 0, most = 0, finished = 0;
  JobPoolEvents ev;
  ev.started = [&](size_t) { most = std::max(most, ++now); };
  ev.finished = [&](size_t, const JobOutcome&) {
    --now;
    ++finished;
  };
  auto out = runJobs(jobs, 2, ev);
  ASSERT_EQ(out.size(), jobs.size());
  EXPECT_EQ(finished, 6);
  EXPECT_LE(most, 2);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(out[i].outcome, ProcessOutcome::exited(i)) << out[i].outcome.str();
    EXPECT_FALSE(out[i].start_error);
    EXPECT_GE(out[i].wall_ms, 150);
    EXPECT_EQ(readFile(d.path + "/" + std::to_string(i) + ".log"), "out" + std::to_string(i) + "\nerr\n");
  }
  EXPECT_EQ(out[5].outcome, ProcessOutcome::killed(SIGKILL)) << out[5].outcome.str();
}

TEST(JobPool, AJobThatCannotStartStopsThePoolAndTheRunningOnesAreWaitedFor) {
  Dir d;
  std::vector<Job> jobs = {shell("sleep 0.3; exit 7", d.path + "/a.log"),
                           Job{{"/nonexistent/faultline-no-such"}, {}, d.path + "/b.log"},
                           shell("exit 0", d.path + "/c.log")};
  auto out = runJobs(jobs, 4);
  EXPECT_EQ(out[0].outcome, ProcessOutcome::exited(7));
  ASSERT_TRUE(out[1].start_error);
  EXPECT_NE(out[1].start_error->message.find("execve"), std::string::npos) << out[1].start_error->message;
  EXPECT_EQ(out[2].outcome, ProcessOutcome::notStarted());
  EXPECT_FALSE(out[2].start_error);
}

TEST(JobPool, JobsStartWithAnEmptySignalMaskInTheCallersProcessGroup) {
  Dir d;
  // The job's own process reads its own status (no shell in between).
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &block, &old);
  auto out = runJobs({Job{{"/bin/grep", "-E", "^SigBlk", "/proc/self/status"}, {}, d.path + "/mask.log"},
                      Job{{"/usr/bin/cut", "-d", " ", "-f5", "/proc/self/stat"}, {}, d.path + "/pgrp.log"}},
                     2);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_EQ(out[0].outcome, ProcessOutcome::exited(0)) << readFile(d.path + "/mask.log");
  EXPECT_EQ(readFile(d.path + "/mask.log"), "SigBlk:\t0000000000000000\n");
  ASSERT_EQ(out[1].outcome, ProcessOutcome::exited(0)) << readFile(d.path + "/pgrp.log");
  EXPECT_EQ(readFile(d.path + "/pgrp.log"), std::to_string(::getpgrp()) + "\n");
}

}  // namespace
}  // namespace faultline::launch
