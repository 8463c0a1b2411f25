// terminateOrKill against hostile children: one that ends on SIGTERM, one
// that ignores it, one stopped, one already gone; and the ladder's hooks in
// the order the watch loop relies on.
#include "harness/supervise/terminate.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <map>
#include <thread>

#include <gtest/gtest.h>

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

// A launcher and its ranks: the ranks get SIGTERM before the launcher, so
// none is first told of its parent's death (mp.spawn's SIGINT).
TEST(ChildrenFirst, NoProcessComesBeforeOneBelowIt) {
  // 10 launcher -> 11, 12 ranks; 12 -> 13 a DataLoader worker; 20 unrelated.
  const std::map<pid_t, pid_t> parent{{10, 1}, {11, 10}, {12, 10}, {13, 12}, {20, 1}};
  const auto parent_of = [&](pid_t p) { return parent.count(p) ? parent.at(p) : 0; };
  EXPECT_EQ(childrenFirst({10, 11, 12, 13, 20}, parent_of), (std::vector<pid_t>{13, 11, 12, 10, 20}));
  // Ancestors outside the set do not count: with 10 and 12 gone, the given order.
  EXPECT_EQ(childrenFirst({11, 13, 20}, parent_of), (std::vector<pid_t>{11, 13, 20}));
  EXPECT_EQ(childrenFirst({10, 13}, parent_of), (std::vector<pid_t>{13, 10}));
  EXPECT_TRUE(childrenFirst({}, parent_of).empty());
}

TEST(TerminateOrKill, SignalsChildrenBeforeTheirParent) {
  LeakGuard guard;
  TempDir dir;
  const pid_t parent = startHostile(dir, "sleep:60");
  Ladder ladder;
  std::vector<pid_t> sent;
  // This test process is the hostile's parent: both in the set, the child first.
  ladder.members = [&] {
    std::vector<pid_t> out;
    for (pid_t p : {::getpid(), parent}) {
      if (std::find(sent.begin(), sent.end(), p) == sent.end()) out.push_back(p);
    }
    return out;
  };
  ladder.send = [&](pid_t p, int sig) {
    sent.push_back(p);
    if (p == parent) ::kill(p, sig);
  };
  ladder.wait = [](const std::function<bool()>&, std::chrono::steady_clock::duration) {};
  terminateOrKill(ladder, 1s, 1s);
  ASSERT_GE(sent.size(), 2u);
  EXPECT_EQ(sent[0], parent);
  EXPECT_EQ(sent[1], ::getpid());
  int status = 0;
  ::waitpid(parent, &status, 0);
}

TEST(TerminateOrKill, AChildThatEndsOnSigtermIsNotKilled) {
  LeakGuard guard;
  TempDir dir;
  const pid_t pid = startHostile(dir, "sleep:60");
  const auto t0 = std::chrono::steady_clock::now();
  const TerminateResult r = terminateOrKill({pid}, 30s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, testing::scaled(std::chrono::milliseconds(5000)));
  EXPECT_EQ(r.escalation, Escalation::kSigterm);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].fate, Fate::kEndedOnSigterm);
  ASSERT_TRUE(r.processes[0].outcome);
  EXPECT_EQ(r.processes[0].outcome->signal(), SIGTERM) << r.processes[0].outcome->str();
  EXPECT_TRUE(r.survivors().empty());
}

TEST(TerminateOrKill, AChildThatIgnoresSigtermIsKilledAfterTheGrace) {
  LeakGuard guard;
  TempDir dir;
  const pid_t pid = startHostile(dir, "ignore-term:60");
  const auto t0 = std::chrono::steady_clock::now();
  const TerminateResult r = terminateOrKill({pid}, 300ms);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 300ms);
  EXPECT_EQ(r.escalation, Escalation::kSigkill);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].fate, Fate::kKilled);
  ASSERT_TRUE(r.processes[0].outcome);
  EXPECT_EQ(r.processes[0].outcome->signal(), SIGKILL) << r.processes[0].outcome->str();
}

// SIGTERM stays pending in a stopped process until it runs again: the ladder
// continues it, so it ends within the grace instead of being SIGKILLed.
TEST(TerminateOrKill, AStoppedChildIsContinuedAndEndsOnSigterm) {
  LeakGuard guard;
  TempDir dir;
  const pid_t pid = startHostile(dir, "sleep:60");
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(status));
  const TerminateResult r = terminateOrKill({pid}, 30s);
  ASSERT_EQ(r.processes.size(), 1u);
  EXPECT_EQ(r.processes[0].fate, Fate::kEndedOnSigterm);
  ASSERT_TRUE(r.processes[0].outcome);
  EXPECT_EQ(r.processes[0].outcome->signal(), SIGTERM) << r.processes[0].outcome->str();
}

// A child that exited before the teardown is reaped, never signalled.
TEST(TerminateOrKill, NothingLeftIsNoEscalation) {
  LeakGuard guard;
  TempDir dir;
  testing::SpawnOptions o;
  o.argv = {hostilePath(), "*=exit:4"};
  o.stdout_path = dir / "out";
  o.stderr_path = dir / "err";
  const pid_t pid = testing::spawnChild(o);
  ASSERT_TRUE(waitFor([&] { return readFile(dir / "err").find("exiting with 4") != std::string::npos; },
                      testing::scaled(std::chrono::seconds(10))));
  ASSERT_TRUE(waitFor([&] { return !isAlive(pid); }, testing::scaled(std::chrono::seconds(10))));
  const TerminateResult r = terminateOrKill({pid}, 30s);
  EXPECT_EQ(r.escalation, Escalation::kNone);
  EXPECT_TRUE(r.processes.empty());
  EXPECT_EQ(terminateOrKill(std::vector<pid_t>{}, 30s).escalation, Escalation::kNone);
}

// The hooks as the watch loop uses them: each step reported with the pids
// signalled, the survivor seen while it can still be read, every signal
// through `send`, the grace cut short on request, then cgroup.kill's stand-in.
TEST(TerminateOrKill, HooksSeeEachStepInOrder) {
  LeakGuard guard;
  TempDir dir;
  const pid_t stubborn = startHostile(dir, "ignore-term:60");
  const pid_t meek = startHostile(dir, "sleep:60");
  std::vector<std::string> seen;
  std::map<pid_t, ProcessOutcome> reaped;
  Ladder ladder;
  ladder.members = [&] {
    std::vector<pid_t> out;
    for (pid_t p : {stubborn, meek}) {
      int status = 0;
      if (!reaped.count(p) && ::waitpid(p, &status, WNOHANG) == p) reaped.emplace(p, ProcessOutcome::fromWaitStatus(status));
      if (!reaped.count(p)) out.push_back(p);
    }
    return out;
  };
  ladder.send = [&](pid_t p, int sig) {
    seen.push_back(signalName(sig) + " " + (p == stubborn ? "stubborn" : "meek"));
    ::kill(p, sig);
  };
  bool cut = false;
  ladder.cut_grace = [&] { return cut; };
  ladder.wait = [&](const std::function<bool()>& done, std::chrono::steady_clock::duration max) {
    // The grace is long; a second Ctrl-C (here: the first poll) ends it.
    const auto until = std::chrono::steady_clock::now() + max;
    while (!done() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(5ms);
      if (reaped.count(meek)) cut = true;
    }
  };
  ladder.on_step = [&](Escalation e, const std::vector<pid_t>& pids) {
    seen.push_back(escalationName(e) + " step of " + std::to_string(pids.size()));
  };
  ladder.on_survivor = [&](pid_t p) {
    seen.push_back(std::string("survivor ") + (p == stubborn ? "stubborn" : "meek") + (isAlive(p) ? " alive" : " gone"));
  };
  ladder.kill_rest = [&] { seen.push_back("kill rest"); };
  const auto t0 = std::chrono::steady_clock::now();
  const TerminateResult r = terminateOrKill(ladder, 600s, 10s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, testing::scaled(std::chrono::seconds(10)));
  const std::vector<std::string> want = {"SIGTERM stubborn",        "SIGTERM meek", "sigterm step of 2",
                                         "survivor stubborn alive", "SIGKILL stubborn", "kill rest",
                                         "sigkill step of 1"};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(r.escalation, Escalation::kSigkill);
  ASSERT_EQ(r.processes.size(), 2u);
  EXPECT_EQ(r.processes[0].pid, stubborn);
  EXPECT_EQ(r.processes[0].fate, Fate::kKilled);
  EXPECT_EQ(r.processes[1].fate, Fate::kEndedOnSigterm);
  EXPECT_EQ(reaped.at(stubborn).signal(), SIGKILL);
  EXPECT_EQ(reaped.at(meek).signal(), SIGTERM);
}

}  // namespace
}  // namespace faultline::supervise
