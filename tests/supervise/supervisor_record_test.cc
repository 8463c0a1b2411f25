// supervisor.json: round trip, field errors, atomic write.
#include "harness/model/supervisor_record.h"

#include <gtest/gtest.h>

#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

SupervisorRecord sample() {
  SupervisorRecord r;
  r.start_ns = 100;
  r.end_ns = 900;
  r.launcher = "external";
  r.command = {"torchrun", "--nproc_per_node=2", "train"};
  r.world_size = 2;
  r.containment = "cgroup";
  r.ranks.push_back({0, 11, 110, 800, std::nullopt, "SIGTERM", true, std::nullopt});
  r.ranks.push_back({1, 12, 111, 500, 3, std::nullopt, false, std::nullopt});
  r.launcher_process = LauncherProcess{10, 1, std::nullopt, 850};
  r.trigger = {TriggerKind::kRankFailure, 500, 1, "rank 1 exited with code 3"};
  r.teardown.report.clean = false;
  r.teardown.report.duration_ms = 42;
  r.teardown.report.escalation = Escalation::kSigkill;
  r.teardown.report.survivors.push_back({13, "daemon --forever"});
  r.teardown.report.leaks.push_back("shm:/dev/shm/x (left behind)");
  r.teardown.started_ns = 600;
  r.teardown.signals.push_back({11, 0, "SIGTERM", 601});
  r.teardown.signals.push_back({13, std::nullopt, "SIGKILL", 700});
  r.teardown.stack_dumps.push_back({0, 11, "gdb", "/run/ranks/0/stacks.txt", true});
  r.process_exits.push_back({12, 1, 500, 3, std::nullopt, "train", 7});
  r.harness_fds = HarnessFds{5, 5};
  return r;
}

TEST(SupervisorRecord, RoundTripsThroughJson) {
  const auto r = sample();
  const auto j = toJson(r);
  EXPECT_EQ(j["schema"], "faultline.supervisor/1");
  EXPECT_EQ(j["trigger"]["kind"], "rank_failure");
  EXPECT_EQ(j["ranks"][0]["signal"], "SIGTERM");
  EXPECT_TRUE(j["ranks"][0]["exit_code"].is_null());
  EXPECT_EQ(j["teardown"]["escalation"], "sigkill");
  EXPECT_EQ(j["harness_fds"]["after"], 5);
  EXPECT_EQ(j["process_exits"][0]["ppid"], 7);
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(toJson(*back), j);
}

// A record from before exits carried their parent still reads.
TEST(SupervisorRecord, AProcessExitsParentIsOptional) {
  auto j = toJson(sample());
  j["process_exits"][0].erase("ppid");
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_FALSE(back->process_exits.at(0).ppid);
  EXPECT_EQ(back->process_exits.at(0).pid, 12);
}

TEST(SupervisorRecord, HarnessFdsAreOptional) {
  auto j = toJson(sample());
  j.erase("harness_fds");
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_FALSE(back->harness_fds);
  j["harness_fds"] = {{"before", 4}};
  back = supervisorRecordFromJson(j);
  ASSERT_FALSE(back);
  EXPECT_EQ(back.error().context, "$.harness_fds.after");
}

TEST(SupervisorRecord, BuiltinHasNullLauncherProcess) {
  auto r = sample();
  r.launcher_process.reset();
  auto j = toJson(r);
  EXPECT_TRUE(j["launcher_process"].is_null());
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back);
  EXPECT_FALSE(back->launcher_process);
}

TEST(SupervisorRecord, ErrorsNameTheField) {
  auto j = toJson(sample());
  j["ranks"][1].erase("pid");
  auto r = supervisorRecordFromJson(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().context, "$.ranks[1].pid");
  j = toJson(sample());
  j["trigger"]["kind"] = "meteor";
  r = supervisorRecordFromJson(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().context, "$.trigger.kind");
}

TEST(SupervisorRecord, WritesAtomicallyAndReadsBack) {
  faultline::testing::TempDir dir;
  const std::string path = dir / "supervisor.json";
  ASSERT_TRUE(writeSupervisorRecord(sample(), path));
  EXPECT_FALSE(faultline::testing::fileExists(path + ".tmp"));
  auto r = readSupervisorRecord(path);
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(r->ranks.size(), 2u);
  EXPECT_EQ(r->teardown.report.survivors.size(), 1u);
}

}  // namespace
}  // namespace faultline
