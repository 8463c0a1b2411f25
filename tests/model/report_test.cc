// report.json: every contract field survives a round trip; bad input names the field.
#include "harness/model/report.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace faultline {
namespace {

Report sampleReport() {
  Report r;
  r.scenario = ScenarioRef{"hung-collective", "scenarios/hung.toml"};
  r.stack = {"builtin@2.13", {"faultline-trainer", "--steps", "5"}, 4, "2.13.0+cpu"};
  r.launcher.exit_code = 1;
  RootCause rc;
  rc.kind = Kind::kHungCollective;
  rc.rank = 1;
  rc.summary = "rank 1 never entered allreduce #7";
  rc.collective = CollectiveRef{"allreduce", 7};
  rc.waiting_ranks = {0, 2, 3};
  rc.missing_ranks = {1};
  rc.location = Location{"train.py", 42};
  rc.layers = {{"launcher", "ChildFailedError"}, {"process", "rank 1 killed by SIGTERM"}};
  rc.blame = Blame::kRank;
  rc.ranks = {1};
  rc.sides = {CollectiveSide{{1}, "", std::nullopt, "", {}, ""},
              CollectiveSide{{0, 2, 3}, "allreduce", 10, "/app/t.py:9", {"/app/t.py:30"}, "/app/t.py:8: if rank == 0"}};
  r.root_cause = rc;
  r.ranks.push_back({0, 100, std::nullopt, std::string("SIGTERM"), RankRole::kKilledByTeardown, "waited", "tail"});
  r.findings.push_back({Kind::kStraggler, {2}, "warning", "rank 2 is slow", "step 40 ms vs 5 ms", "", std::nullopt});
  LoggedMetric m;
  m.name = "val_acc";
  m.sink = "lightning";
  m.n = 2;
  m.step = 1;
  m.values = {{0, 0.5}, {1, 0.75}};
  m.logged_by = {0};
  m.why = "differs_across_ranks";
  m.sync = false;
  m.site = "/app/t.py:40";
  r.findings.push_back({Kind::kUnsyncedMetrics, {0, 1}, "error", "val_acc differs", "rank 0 0.5, rank 1 0.75",
                        "self.log('val_acc', ..., sync_dist=True)", m});
  r.teardown = {true, 120, Escalation::kSigterm, {{42, "sleep 100"}}, {"/dev/shm/x"}};
  r.expectations.push_back({"root_cause.rank", 1, 1, true, ExpectationStatus::kPass, ""});
  r.verdict = Verdict::kPass;
  r.timeline.push_back({1.5, 1, "fault hung_collective"});
  r.harness = {"0.1.0", 900};
  r.spans.push_back({1, "collective", "allreduce", 7, 10.5, 2.0, 6532, "float32"});
  r.spans_dropped = 3;
  r.problems.diagnose_error = "exception: boom";
  r.extra["containment"] = "cgroup";
  return r;
}

TEST(Report, RoundTripKeepsEveryField) {
  const auto j = toJson(sampleReport());
  EXPECT_EQ(j["schema"], "faultline.report/1");
  EXPECT_EQ(j["root_cause"]["kind"], "hung_collective");
  EXPECT_EQ(j["ranks"][0]["role"], "killed_by_teardown");
  EXPECT_EQ(j["teardown"]["escalation"], "sigterm");
  EXPECT_FALSE(j["findings"][0].contains("fix"));  // only a finding with a fix of its own has one
  EXPECT_EQ(j["findings"][1]["fix"], "self.log('val_acc', ..., sync_dist=True)");
  EXPECT_EQ(j["findings"][1]["metric"]["values"][1]["value"], 0.75);
  auto back = reportFromJson(j);
  ASSERT_TRUE(back.has_value()) << back.error().str();
  EXPECT_EQ(toJson(*back), j);
}

// A run whose launcher restarted it: each attempt and the recovery verdict
// come back as fields, nothing in `extra`.
TEST(Report, AttemptsAndRecoveryRoundTrip) {
  Report r = sampleReport();
  AttemptReport a0;
  a0.attempt = 0;
  a0.start_ms = 900;
  a0.end_ms = 2100;
  a0.ranks = {AttemptRank{0, 11, std::nullopt, std::string("SIGTERM")}, AttemptRank{1, 12, 1, std::nullopt}};
  a0.last_step = 2;
  a0.failed_rank = 1;
  a0.ended = "rank 1 exited with code 1: NameError: x (t.py:3)";
  AttemptReport a1;
  a1.attempt = 1;
  a1.start_ms = 5900;
  a1.ranks = {AttemptRank{0, 21, 0, std::nullopt}};
  a1.last_step = 8;
  a1.ended = "every rank exited 0";
  r.attempts = {a0, a1};
  Recovery v;
  v.restarts = 1;
  v.recovered = true;
  v.time_to_recover_ms = 5048;
  v.resumed_from_step = 0;
  v.steps_lost = 2;
  v.same_result = false;
  v.summary = "recovered after 1 restart";
  r.recovery = v;
  const auto j = toJson(r);
  EXPECT_EQ(j["attempts"][0]["ranks"][0]["signal"], "SIGTERM");
  EXPECT_TRUE(j["attempts"][1]["end_ms"].is_null());
  EXPECT_EQ(j["recovery"]["steps_lost"], 2);
  EXPECT_TRUE(j["recovery"]["crash_loop_rank"].is_null());
  auto back = reportFromJson(j);
  ASSERT_TRUE(back.has_value()) << back.error().str();
  EXPECT_EQ(toJson(*back), j);
  EXPECT_FALSE(back->extra.contains("attempts") || back->extra.contains("recovery")) << back->extra.dump();
  EXPECT_EQ(back->attempts.size(), 2u);
  ASSERT_TRUE(back->recovery);
  EXPECT_EQ(back->recovery->time_to_recover_ms, 5048);
  EXPECT_EQ(back->recovery->same_result, false);
  // Without restarts neither key is written.
  EXPECT_FALSE(toJson(sampleReport()).contains("attempts"));
  EXPECT_FALSE(toJson(sampleReport()).contains("recovery"));
}

// The problems are typed fields under their own keys, never `extra`; every
// key toJson writes is one reportFromJson reads (kKnown in report.cc once
// lacked spans and spans_dropped, and a round trip put them in extra too).
TEST(Report, ProblemsAndEveryWrittenKeyAreReadBackAsFields) {
  Report r = sampleReport();
  r.problems = {"boom", "no GPU", "s.toml:3:1: bad", "exception: x"};
  const auto j = toJson(r);
  EXPECT_EQ(j["harness_error"], "boom");
  EXPECT_EQ(j["unsupported_reason"], "no GPU");
  EXPECT_EQ(j["bad_input"], "s.toml:3:1: bad");
  EXPECT_EQ(j["diagnose_error"], "exception: x");
  auto back = reportFromJson(j);
  ASSERT_TRUE(back.has_value()) << back.error().str();
  EXPECT_EQ(back->problems.harness_error, "boom");
  EXPECT_EQ(back->problems.bad_input, "s.toml:3:1: bad");
  EXPECT_EQ(back->extra, (nlohmann::json{{"containment", "cgroup"}}));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto& keys = reportKeys();
    EXPECT_TRUE(it.key() == "containment" || std::find(keys.begin(), keys.end(), it.key()) != keys.end()) << it.key();
  }
  auto bad = j;
  bad["harness_error"] = 5;
  auto r2 = reportFromJson(bad);
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.error().context, "report.harness_error");
  bad = j;
  bad["expectations"][0]["status"] = "maybe";
  r2 = reportFromJson(bad);
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.error().context, "report.expectations[].status");
}

TEST(Report, BlameOfAReportWrittenBeforeItReadsFromItsRank) {
  auto j = toJson(sampleReport());
  j["root_cause"].erase("blame");
  j["root_cause"].erase("ranks");
  j["root_cause"].erase("sides");
  auto back = reportFromJson(j);
  ASSERT_TRUE(back.has_value()) << back.error().str();
  EXPECT_EQ(back->root_cause->blame, Blame::kRank);
  EXPECT_EQ(back->root_cause->ranks, (std::vector<int>{1}));
  EXPECT_TRUE(back->root_cause->sides.empty());
  j["root_cause"]["rank"] = nullptr;
  back = reportFromJson(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->root_cause->blame, Blame::kNone);
  j["root_cause"]["blame"] = "maybe";
  back = reportFromJson(j);
  ASSERT_FALSE(back.has_value());
  EXPECT_NE(back.error().str().find("root_cause.blame"), std::string::npos) << back.error().str();
  EXPECT_EQ(blameFromName("all_ranks"), Blame::kAllRanks);
  EXPECT_EQ(blameName(Blame::kAmbiguous), "ambiguous");
}

TEST(Report, NullRootCauseAndEmptyFindings) {
  Report r;
  r.verdict = Verdict::kClean;
  auto j = toJson(r);
  EXPECT_TRUE(j["root_cause"].is_null());
  EXPECT_TRUE(j["findings"].empty());
  auto back = reportFromJson(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->root_cause.has_value());
}

TEST(Report, BadInputNamesTheField) {
  auto j = toJson(sampleReport());
  j["ranks"][0]["role"] = "boss";
  auto r = reportFromJson(j);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().context, "report.ranks[].role");
  EXPECT_NE(r.error().message.find("boss"), std::string::npos);

  j = toJson(sampleReport());
  j["teardown"]["duration_ms"] = "fast";
  r = reportFromJson(j);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().context, "report.teardown.duration_ms");

  j = toJson(sampleReport());
  j["schema"] = "faultline.report/9";
  EXPECT_FALSE(reportFromJson(j).has_value());
}

TEST(Report, VerdictFailureFlags) {
  EXPECT_FALSE(verdictIsFailure(Verdict::kPass));
  EXPECT_FALSE(verdictIsFailure(Verdict::kClean));
  EXPECT_TRUE(verdictIsFailure(Verdict::kUnresolved));
  EXPECT_FALSE(verdictIsFailure(Verdict::kUnsupported));
  EXPECT_TRUE(verdictIsFailure(Verdict::kDiagnosed));
  EXPECT_EQ(kindFromName("no_pg_destroy"), Kind::kNoPgDestroy);
  EXPECT_EQ(kindFromName("nope"), std::nullopt);
}

}  // namespace
}  // namespace faultline
