// The teardown on its own, outside the watch loop: hostile children as the
// run, a host that reaps them, and the record it leaves (what was signalled,
// who survived, clean or not, who tore the run down).
#include "harness/supervise/teardown.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <thread>

#include <gtest/gtest.h>

#include "harness/launch/clock.h"
#include "harness/supervise/proc_fs.h"
#include "tests/supervise/test_support.h"
#include "tests/test_scale.h"

namespace faultline::supervise {
namespace {

using namespace std::chrono_literals;
using testing::hostilePath;
using testing::startHostile;
using testing::LeakGuard;
using testing::readFile;
using testing::TempDir;
using testing::waitFor;

// The run: hostile children as ranks 0..n-1, reaped by polling.
class ChildrenHost : public Teardown::Host {
 public:
  std::vector<std::unique_ptr<RankState>> ranks;
  std::vector<std::string> timeline_lines;
  std::vector<std::string> notes;

  RankState& add(pid_t pid) {
    auto r = std::make_unique<RankState>();
    r->rank = static_cast<int>(ranks.size());
    r->pid = pid;
    r->our_child = true;
    ranks.push_back(std::move(r));
    return *ranks.back();
  }
  void runUntil(const std::function<bool()>& done, Clock::duration max) override {
    const auto until = Clock::now() + max;
    while (true) {
      reapChildren();
      if (done() || Clock::now() >= until) return;
      std::this_thread::sleep_for(2ms);
    }
  }
  std::vector<pid_t> runMembers() const override {
    std::vector<pid_t> out;
    for (const auto& r : ranks) {
      if (!r->finished) out.push_back(r->pid);
    }
    return out;
  }
  RankState* rankByPid(pid_t pid) override {
    for (auto& r : ranks) {
      if (r->pid == pid) return r.get();
    }
    return nullptr;
  }
  void reapChildren() override {
    for (auto& r : ranks) {
      int status = 0;
      if (!r->finished && ::waitpid(r->pid, &status, WNOHANG) == r->pid) {
        r->finished = true;
        r->exit_known = true;
        r->outcome = ProcessOutcome::fromWaitStatus(status);
        last_exit_ns = launch::realtimeNs();
      }
    }
  }
  void watchChild(pid_t, std::function<void(int)>) override { ADD_FAILURE() << "no stack dumper expected"; }
  void forgetChild(pid_t) override {}
  std::optional<pid_t> liveLauncher() const override { return std::nullopt; }
  bool launcherEnded() const override { return false; }
  bool allReaped() const override { return runMembers().empty(); }
  int64_t lastExitNs() const override { return last_exit_ns; }
  bool orphaned(pid_t) const override { return false; }
  bool anyOrphaned() const override { return false; }
  int interrupts() const override { return 0; }
  void timeline(std::optional<int>, std::string what, TimelineKind) override { timeline_lines.push_back(std::move(what)); }
  void note(std::string what) override { notes.push_back(std::move(what)); }

  int64_t last_exit_ns = 0;
};

struct Fixture {
  TempDir dir;
  SuperviseOptions opts;
  RunLayout layout{dir / "run"};
  std::unique_ptr<Containment> containment;
  LeakCheck leaks;
  ChildrenHost host;

  Fixture() {
    opts.grace_s = 0.3;
    opts.gdb_stacks = false;
    auto c = Containment::create("teardown-test-" + std::to_string(::getpid()), /*allow_cgroup=*/false);
    EXPECT_TRUE(c) << c.error().str();
    containment = std::move(*c);
  }
  Teardown make() { return Teardown({opts, *launch::launcherNamed("builtin"), layout, *containment, host.ranks, leaks, host}); }
};

Trigger hang() {
  Trigger t;
  t.kind = TriggerKind::kHang;
  t.t_ns = launch::realtimeNs();
  t.detail = "test";
  return t;
}

// A stuck run: the rank that ends on SIGTERM does, the one that ignores it is
// a survivor of the grace and is SIGKILLed; the teardown was faultline's and
// is not clean.
TEST(Teardown, AStuckRunIsEndedAndARankThatIgnoresSigtermIsNamed) {
  LeakGuard guard;
  Fixture f;
  const pid_t meek = startHostile(f.dir, "sleep:60");
  const pid_t stubborn = startHostile(f.dir, "ignore-term:60");
  f.host.add(meek);
  f.host.add(stubborn);
  Teardown t = f.make();
  t.run({false, hang(), {}});
  const TeardownRecord& rec = t.record();
  EXPECT_GT(rec.started_ns, 0);
  EXPECT_EQ(rec.report.escalation, Escalation::kSigkill);
  EXPECT_EQ(rec.report.by, TeardownBy::kFaultline);
  ASSERT_EQ(rec.report.survivors.size(), 1u);
  EXPECT_EQ(rec.report.survivors[0].pid, stubborn);
  EXPECT_FALSE(rec.report.clean);
  EXPECT_EQ(f.host.ranks[0]->outcome.signal(), SIGTERM);
  EXPECT_EQ(f.host.ranks[1]->outcome.signal(), SIGKILL);
  EXPECT_TRUE(f.host.ranks[0]->signalled_by_teardown);
  EXPECT_TRUE(f.host.ranks[1]->sigkilled_by_teardown);
  // Every signal sent is in the record, rank by rank.
  const auto sent = [&](int rank, const std::string& sig) {
    return std::any_of(rec.signals.begin(), rec.signals.end(),
                       [&](const SignalSent& s) { return s.rank == rank && s.signal == sig; });
  };
  EXPECT_TRUE(sent(0, "SIGTERM"));
  EXPECT_TRUE(sent(1, "SIGTERM"));
  EXPECT_TRUE(sent(1, "SIGKILL"));
  EXPECT_FALSE(sent(0, "SIGKILL"));
}

// A stack that ended of itself and left a process running: that process is
// left behind (a survivor), ended, and the teardown is not clean.
TEST(Teardown, WhatAFinishedStackLeftRunningIsASurvivor) {
  LeakGuard guard;
  Fixture f;
  f.host.add(startHostile(f.dir, "sleep:60"));
  Teardown t = f.make();
  const auto t0 = std::chrono::steady_clock::now();
  t.run({true, std::nullopt, {}});
  // The allowance (at most 1 s) for what is on its way out, then the ladder.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
  const TeardownRecord& rec = t.record();
  ASSERT_EQ(rec.report.survivors.size(), 1u);
  EXPECT_FALSE(rec.report.clean);
  EXPECT_EQ(rec.report.escalation, Escalation::kSigterm);
  EXPECT_TRUE(f.host.ranks[0]->finished);
  EXPECT_TRUE(std::any_of(f.host.timeline_lines.begin(), f.host.timeline_lines.end(), [](const std::string& l) {
    return l.find("left running after the stack ended") != std::string::npos;
  })) << ::testing::PrintToString(f.host.timeline_lines);
}

// Nothing left to end: no signal, no teardown time, clean.
TEST(Teardown, ARunWithNothingLeftSendsNothing) {
  LeakGuard guard;
  Fixture f;
  testing::SpawnOptions o;
  o.argv = {hostilePath(), "*=exit:0"};
  o.stdout_path = f.dir / "out";
  f.host.add(testing::spawnChild(o));
  ASSERT_TRUE(waitFor([&] {
    f.host.reapChildren();
    return f.host.ranks[0]->finished;
  }, testing::scaled(std::chrono::seconds(10))));
  Teardown t = f.make();
  t.run({true, std::nullopt, {}});
  const TeardownRecord& rec = t.record();
  EXPECT_EQ(rec.started_ns, 0);
  EXPECT_TRUE(rec.signals.empty());
  EXPECT_TRUE(rec.report.clean);
  EXPECT_EQ(rec.report.by, TeardownBy::kNone);
  EXPECT_EQ(rec.report.duration_ms, 0);
}

}  // namespace
}  // namespace faultline::supervise
