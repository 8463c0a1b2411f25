// The verdict table: one row per verdict, and the exit statuses it gives.
#include <gtest/gtest.h>

#include "harness/model/report.h"
#include "harness/model/verdict.h"

namespace faultline {
namespace {

TEST(VerdictTable, CoversEveryVerdictWithItsNameFailureJunitAndExit) {
  struct Row {
    Verdict v;
    const char* name;
    bool failure;
    JunitElement junit;
    int exit;
  };
  const Row rows[] = {
      {Verdict::kPass, "pass", false, JunitElement::kNone, 0},
      {Verdict::kFail, "fail", true, JunitElement::kFailure, 1},
      {Verdict::kUnresolved, "unresolved", true, JunitElement::kError, 1},
      {Verdict::kUnsupported, "unsupported", false, JunitElement::kSkipped, 0},
      {Verdict::kDiagnosed, "diagnosed", true, JunitElement::kFailure, 1},
      {Verdict::kClean, "clean", false, JunitElement::kNone, 0},
      {Verdict::kIncomplete, "incomplete", true, JunitElement::kFailure, 1},
      {Verdict::kError, "error", true, JunitElement::kError, 3},
  };
  for (const Row& r : rows) {
    const VerdictInfo& info = verdictInfo(r.v);
    EXPECT_EQ(info.verdict, r.v);
    EXPECT_STREQ(info.name, r.name);
    EXPECT_EQ(verdictFromName(r.name), r.v);
    EXPECT_EQ(info.failure, r.failure) << r.name;
    EXPECT_EQ(verdictIsFailure(r.v), r.failure) << r.name;
    EXPECT_EQ(info.junit, r.junit) << r.name;
    Report report;
    report.verdict = r.v;
    EXPECT_EQ(exitStatusOf(report), r.exit) << r.name;
  }
  EXPECT_FALSE(verdictFromName("skipped"));
}

TEST(VerdictTable, StrictMakesUnsupportedFail) {
  Report r;
  r.verdict = Verdict::kUnsupported;
  EXPECT_EQ(exitStatusOf(r), 0);
  EXPECT_EQ(exitStatusOf(r, ExitPolicy{true, FailOn::kError}), 1);
}

TEST(VerdictTable, FailOnWarningFailsARunThatReportsAWarning) {
  Report r;
  r.verdict = Verdict::kPass;
  Finding f;
  f.kind = Kind::kNoPgDestroy;
  f.severity = "warning";
  r.findings.push_back(f);
  EXPECT_EQ(exitStatusOf(r), 0);
  EXPECT_EQ(exitStatusOf(r, ExitPolicy{false, FailOn::kWarning}), 1);
  EXPECT_TRUE(severityFails("error", FailOn::kError));
  EXPECT_FALSE(severityFails("warning", FailOn::kError));
  EXPECT_TRUE(severityFails("warning", FailOn::kWarning));
  EXPECT_EQ(failOnFromName("warning"), FailOn::kWarning);
  EXPECT_FALSE(failOnFromName("info"));
}

TEST(VerdictTable, SeveralRunsExitWithTheWorst) {
  EXPECT_EQ(exitStatusOf(std::vector<int>{}), 0);
  EXPECT_EQ(exitStatusOf(std::vector<int>{0, 1, 0}), 1);
  EXPECT_EQ(exitStatusOf(std::vector<int>{3, 1}), 3);
  EXPECT_EQ(exitStatusOf(std::vector<int>{1, 3}), 3);
}

}  // namespace
}  // namespace faultline

#include "harness/model/supervisor_record.h"

namespace faultline {
namespace {

// supervisor.json carries what the report needs beside the facts; a record
// written before those fields existed still reads.
TEST(SupervisorRecordJson, TimelineNotesInterruptionAndInstrumentsRoundTrip) {
  SupervisorRecord rec;
  rec.command = {"/bin/true"};
  rec.world_size = 1;
  rec.timeline.push_back({1.5, 0, "started (pid 7)"});
  rec.timeline.push_back({2.0, std::nullopt, "teardown clean in 0 ms"});
  rec.notes = {"guardian pipe closed early"};
  rec.interrupted = true;
  rec.instruments = RunInstruments{"/shim", ""};
  const nlohmann::json j = toJson(rec);
  EXPECT_TRUE(j["instruments"]["preload"].is_null());
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  ASSERT_EQ(back->timeline.size(), 2u);
  EXPECT_EQ(back->timeline[0].rank, 0);
  EXPECT_FALSE(back->timeline[1].rank);
  EXPECT_EQ(back->timeline[1].what, "teardown clean in 0 ms");
  EXPECT_EQ(back->notes, rec.notes);
  EXPECT_TRUE(back->interrupted);
  ASSERT_TRUE(back->instruments);
  EXPECT_EQ(back->instruments->python_shim, "/shim");
  EXPECT_EQ(back->instruments->preload, "");

  nlohmann::json old = j;
  for (const char* k : {"timeline", "notes", "interrupted", "instruments"}) old.erase(k);
  auto older = supervisorRecordFromJson(old);
  ASSERT_TRUE(older) << older.error().str();
  EXPECT_TRUE(older->timeline.empty());
  EXPECT_FALSE(older->interrupted);
  EXPECT_FALSE(older->instruments);
}

// The faults a run asked for: kept in supervisor.json for the diagnosis, and
// in report.json with whether each was struck; a wrong type names its field.
TEST(SupervisorRecordJson, RequestedFaultsRoundTrip) {
  SupervisorRecord rec;
  RequestedFault f{"sigkill:rank=1:step=3", "sigkill", "step 3", {1}, "", "shim"};
  RequestedFault node{"node_loss:node=n2:step=2", "node_loss", "step 2", {}, "n2", "supervisor"};
  rec.faults = {f, node};
  const nlohmann::json j = toJson(rec);
  EXPECT_EQ(j["faults"][1]["ranks"], "all");
  auto back = supervisorRecordFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  ASSERT_EQ(back->faults.size(), 2u);
  EXPECT_EQ(back->faults[0].ranks, std::vector<int>{1});
  EXPECT_EQ(back->faults[0].by, "shim");
  EXPECT_TRUE(back->faults[1].ranks.empty());
  EXPECT_EQ(back->faults[1].node, "n2");
  nlohmann::json bad = j;
  bad["faults"][0]["rule"] = 7;
  auto err = supervisorRecordFromJson(bad);
  ASSERT_FALSE(err);
  EXPECT_NE(err.error().str().find("faults[].rule"), std::string::npos) << err.error().str();

  Report r;
  FaultOutcome o;
  o.fault = f;
  o.reason = "no aimed rank reached step 3 (rank 1 last reached step 2)";
  r.faults = {o};
  r.problems.fault_not_struck = "sigkill:rank=1:step=3 (step 3) was not struck: " + o.reason;
  auto again = reportFromJson(toJson(r));
  ASSERT_TRUE(again) << again.error().str();
  ASSERT_EQ(again->faults.size(), 1u);
  EXPECT_FALSE(again->faults[0].struck);
  EXPECT_EQ(again->faults[0].reason, o.reason);
  EXPECT_EQ(again->problems.fault_not_struck, r.problems.fault_not_struck);
}

}  // namespace
}  // namespace faultline
