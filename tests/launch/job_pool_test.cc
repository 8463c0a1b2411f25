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

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
    EXPECT_EQ(slurp(d.path + "/" + std::to_string(i) + ".log"), "out" + std::to_string(i) + "\nerr\n");
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
  const std::string log = d.path + "/mask.log";
  auto out = runJobs({shell("grep -E '^SigBlk' /proc/$$/status; cut -d' ' -f5 /proc/$$/stat", log)}, 1);
  ASSERT_EQ(out[0].outcome, ProcessOutcome::exited(0)) << slurp(log);
  const std::string text = slurp(log);
  EXPECT_NE(text.find("SigBlk:\t0000000000000000"), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(::getpgrp())), std::string::npos) << text;
}

}  // namespace
}  // namespace faultline::launch
