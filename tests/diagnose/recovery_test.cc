// Attempts and the recovery verdict (recovery.h) on runs built in code: a
// job that came back from a checkpoint, one that started over, a crash loop,
// a launcher that never restarted, and a run that allowed no restarts.
#include "harness/diagnose/recovery.h"

#include <gtest/gtest.h>

#include "tests/diagnose/event_builder.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;
using testing::History;

constexpr int64_t kS = 1'000'000'000;  // History's t0: 1 s

// Restarts allowed: supervisor.json's max_restarts.
RunInput restartable(int max_restarts = 1) {
  RunInput in;
  SupervisorRecord rec;
  rec.start_ns = kS;
  rec.max_restarts = max_restarts;
  in.supervisor = rec;
  return in;
}

// Rank r of attempt k: started at start_ms, ended with `code` at end_ms.
RankInput& attemptRank(RunInput& in, int k, int r, int code, int64_t start_ms, int64_t end_ms) {
  RankInput* ri = nullptr;
  if (k == 0) {
    ri = &addRank(in, r, code, std::nullopt, kS + end_ms * 1'000'000);
  } else {
    auto it = std::find_if(in.attempts.begin(), in.attempts.end(), [&](const AttemptInput& a) { return a.attempt == k; });
    if (it == in.attempts.end()) it = in.attempts.insert(in.attempts.end(), AttemptInput{k, {}});
    ri = &it->ranks[r];
    ri->rank = r;
    ri->started = true;
    ri->exit_known = true;
    ri->exit_code = code;
    ri->exit_ns = kS + end_ms * 1'000'000;
  }
  ri->pid = 100 * (k + 1) + r;
  ri->start_ns = kS + start_ms * 1'000'000;
  return *ri;
}

Event errorEvent(const std::string& type, const std::string& file, int line) {
  Event e;
  e.ev = "error";
  e.kind = "python_exception";
  e.type = type;
  e.message = "boom";
  e.file = file;
  e.line = line;
  return e;
}

// Rank 1 fails at step 5 of attempt 0 (checkpoints every 2 steps); the
// restart loads step 4's parameters and runs to step 8.
RunInput resumedFromACheckpoint() {
  RunInput in = restartable();
  in.world_size = 2;
  History h0(0);
  h0.fingerprintAt("ddp_ready", 0, "p0");
  for (int s = 1; s <= 5; ++s) h0.step(s).fingerprintAt("optimizer_step", s, "p" + std::to_string(s));
  attemptRank(in, 0, 0, 1, 0, 3000).events = h0.log();
  RankInput& r1 = attemptRank(in, 0, 1, 1, 0, 2900);
  r1.events = History(1).step(1).step(2).step(3).step(4).step(5).log();
  r1.events.events.push_back(errorEvent("NameError", "/app/train.py", 40));
  History h1(0, kS + 5'000'000'000);  // the restart's steps begin at 6 s
  h1.fingerprintAt("ddp_ready", 0, "p4");
  for (int s = 1; s <= 4; ++s) h1.step(s).fingerprintAt("optimizer_step", s, "q" + std::to_string(s));
  attemptRank(in, 1, 0, 0, 4000, 9000).events = h1.log();
  attemptRank(in, 1, 1, 0, 4000, 9000).events = History(1, kS + 5'000'000'000).step(1).step(4).log();
  return in;
}

TEST(Recovery, AJobThatCameBackFromItsCheckpoint) {
  const RunInput in = resumedFromACheckpoint();
  const auto attempts = attemptsOf(in);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].failed_rank, 1);
  EXPECT_EQ(attempts[0].last_step, 5);
  EXPECT_EQ(attempts[0].ended, "rank 1 exited with code 1: NameError: boom (train.py:40)");
  EXPECT_FALSE(attempts[1].failed_rank);
  EXPECT_EQ(attempts[1].ended, "every rank exited 0");
  EXPECT_EQ(attempts[1].start_ms, 4000);
  const auto v = judgeRecovery(in, attempts);
  ASSERT_TRUE(v);
  EXPECT_TRUE(v->recovered);
  EXPECT_EQ(v->restarts, 1);
  EXPECT_EQ(v->resumed_from_step, 4);
  EXPECT_EQ(v->steps_lost, 1);
  // Rank 1 failed at 3.9 s (1 s + 2900 ms); the restart's first step ended at 6.002 s.
  EXPECT_EQ(v->time_to_recover_ms, 2101);
  EXPECT_FALSE(v->crash_loop_rank);
  EXPECT_EQ(v->summary, "recovered after 1 restart, back at work 2101 ms after the failure; resumed from step 4, 1 step lost");
}

// The fault-free twin (OUT/twin) ran the same job: its rank 0's last
// parameter fingerprint against the last attempt's.
TEST(Recovery, TheSameResultAsTheFaultFreeTwin) {
  RunInput in = resumedFromACheckpoint();
  EXPECT_FALSE(judgeRecovery(in, attemptsOf(in))->same_result);  // no twin: not said
  History t0(0);
  t0.fingerprintAt("ddp_ready", 0, "p0");
  for (int s = 1; s <= 8; ++s) t0.step(s).fingerprintAt("optimizer_step", s, s == 8 ? "q4" : "t" + std::to_string(s));
  RankInput& twin0 = in.twin[0];
  twin0.events = t0.log();
  twin0.exit_known = true;
  twin0.exit_code = 0;
  in.twin[1] = twin0;
  in.twin[1].rank = 1;
  auto v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v->same_result);
  EXPECT_TRUE(*v->same_result);
  EXPECT_EQ(v->summary,
            "recovered after 1 restart, back at work 2101 ms after the failure; resumed from step 4, 1 step lost; the "
            "final parameters equal the fault-free run's");
  // A resume that lost state ends elsewhere.
  in.twin[0].events.events.back().hash = "t8";
  v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v->same_result);
  EXPECT_FALSE(*v->same_result);
  EXPECT_NE(v->summary.find("differ from the fault-free run's"), std::string::npos);
  // A twin that failed compares nothing.
  in.twin[1].exit_code = 1;
  v = judgeRecovery(in, attemptsOf(in));
  EXPECT_FALSE(v->same_result);
  EXPECT_NE(v->summary.find("the fault-free twin run did not end clean"), std::string::npos);
}

TEST(Recovery, ACheckpointLoadedAfterDdpWrapsTheModelMatchesOneStepLater) {
  RunInput in = resumedFromACheckpoint();
  // The restart's ddp_ready is a fresh model; its first step lands on step 5's parameters.
  auto& events = in.attempts[0].ranks[0].events.events;
  events[0].hash = "fresh";
  events[3].hash = "p5";  // step 1's fingerprint follows its step_begin and step_end
  const auto v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->resumed_from_step, 4);
}

TEST(Recovery, StartingOverLosesEveryStep) {
  RunInput in = resumedFromACheckpoint();
  in.attempts[0].ranks[0].events.events[0].hash = "p0";  // the restart starts from the initial parameters
  const auto v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->resumed_from_step, 0);
  EXPECT_EQ(v->steps_lost, 5);
}

TEST(Recovery, TheSameFailureInEveryAttemptIsACrashLoop) {
  RunInput in = restartable(2);
  in.world_size = 2;
  for (int k = 0; k < 3; ++k) {
    attemptRank(in, k, 1, 3, 1000 * k, 1000 * k + 100);
    RankInput& r0 = attemptRank(in, k, 0, 0, 1000 * k, 1000 * k + 200);
    r0.exit_code.reset();
    r0.signal = "SIGTERM";
  }
  const auto attempts = attemptsOf(in);
  ASSERT_EQ(attempts.size(), 3u);
  for (const auto& a : attempts) EXPECT_EQ(a.failed_rank, 1) << a.attempt;
  const auto v = judgeRecovery(in, attempts);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->recovered);
  EXPECT_EQ(v->restarts, 2);
  EXPECT_EQ(v->crash_loop_rank, 1);
  EXPECT_EQ(v->summary, "not recovered: rank 1 failed the same way in all 3 attempts (a crash loop): rank 1 exited with code 3");
  // Another way in the last attempt: no crash loop, and not recovered.
  in.attempts.back().ranks.at(1).exit_code = 4;
  const auto w = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->crash_loop_rank);
  EXPECT_EQ(w->summary, "not recovered after 2 restarts: the last attempt ended: rank 1 exited with code 4");
  // The supervisor ended the last attempt as a hang: said so.
  in.supervisor->notes.push_back(std::string(kRestartedAttemptHung) + "no progress event for 10000 ms");
  EXPECT_EQ(judgeRecovery(in, attemptsOf(in))->summary,
            "not recovered after 2 restarts: the last attempt hung (no progress event for 10000 ms)");
}

// Ray Train ends every worker at once after one raises (the others first,
// as it happens): the attempt's failed rank is the one whose error came
// first, not the first to exit.
TEST(Recovery, TheFailedRankIsTheOneWhoseErrorCameFirst) {
  RunInput in = restartable(1);
  in.world_size = 2;
  attemptRank(in, 0, 0, 1, 0, 2000);
  RankInput& r1 = attemptRank(in, 0, 1, 1, 0, 2010);
  Event e = errorEvent("NameError", "/app/train.py", 40);
  e.t = kS + 1500 * 1'000'000;
  r1.events.events.push_back(e);
  attemptRank(in, 1, 0, 0, 3000, 5000);
  attemptRank(in, 1, 1, 0, 3000, 5000);
  const auto attempts = attemptsOf(in);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].failed_rank, 1);
}

// torch 2.13's static rendezvous: the restart's Gloo connects to the first
// attempt's (dead) rank's port. The summary says what to run it with.
TEST(Recovery, ARestartThatReadTheFirstAttemptsStoreSaysTheFix) {
  RunInput in = restartable(1);
  in.world_size = 2;
  attemptRank(in, 0, 1, 1, 0, 100);
  attemptRank(in, 0, 0, 0, 0, 100);
  attemptRank(in, 1, 0, 0, 200, 2400);
  RankInput& r1 = attemptRank(in, 1, 1, 1, 200, 2300);
  Event e = errorEvent("RuntimeError", "/app/train.py", 12);
  e.message = "Gloo connectFullMesh failed with [pair.cc:152] timed out connecting: SO_ERROR: Connection refused, "
              "remote=[127.0.0.1]:4503$1";
  r1.events.events.push_back(e);
  const auto v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->recovered);
  EXPECT_NE(v->summary.find("run it with --rdzv_backend=c10d and TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"), std::string::npos)
      << v->summary;
}

TEST(Recovery, ALauncherThatNeverRestartedDidNotRecover) {
  RunInput in = restartable(1);
  in.world_size = 2;
  attemptRank(in, 0, 1, 1, 0, 100);
  attemptRank(in, 0, 0, 0, 0, 100);
  const auto v = judgeRecovery(in, attemptsOf(in));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->recovered);
  EXPECT_EQ(v->restarts, 0);
  EXPECT_EQ(v->summary, "not recovered: the launcher made no restart (max_restarts 1)");
  // torch 2.13's agent crashed reading a half-written error file: said so.
  LauncherLog log;
  log.launcher_crashed = true;
  log.wrapper = PyTraceback{};
  log.wrapper->type = "json.decoder.JSONDecodeError";
  log.wrapper->message = "Expecting value: line 1 column 1 (char 0)";
  in.launcher = log;
  EXPECT_EQ(judgeRecovery(in, attemptsOf(in))->summary,
            "not recovered: the launcher made no restart (max_restarts 1): it crashed first (JSONDecodeError: "
            "Expecting value: line 1 column 1 (char 0))");
}

TEST(Recovery, NoRestartsAllowedNoneHappened) {
  RunInput in = restartable(0);
  attemptRank(in, 0, 0, 1, 0, 100);
  EXPECT_TRUE(attemptsOf(in).empty());
  EXPECT_FALSE(judgeRecovery(in, attemptsOf(in)));
}

}  // namespace
}  // namespace faultline::diagnose
