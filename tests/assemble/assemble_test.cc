// assembleReport on hand-built values: the verdict decided once, what the
// launcher blamed, a failed diagnosis; and reportOfRun on a captured run.
#include "harness/assemble/assemble.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace faultline::assemble {
namespace {

SupervisorRecord cleanRecord(int ranks) {
  SupervisorRecord rec;
  rec.world_size = ranks;
  rec.command = {"/bin/true"};
  for (int r = 0; r < ranks; ++r) {
    SupervisedRank k;
    k.rank = r;
    k.pid = 100 + r;
    k.exit_code = 0;
    rec.ranks.push_back(k);
  }
  rec.timeline.push_back({0.5, 0, "started (pid 100)"});
  rec.instruments = RunInstruments{"/shim", ""};
  return rec;
}

diagnose::Diagnosis cleanDiagnosis(int ranks) {
  diagnose::Diagnosis d;
  for (int r = 0; r < ranks; ++r) {
    diagnose::RankVerdict v;
    v.rank = r;
    v.diagnosis = "exited with code 0";
    d.ranks.push_back(v);
  }
  return d;
}

Finding finding(Kind kind, const char* severity) {
  Finding f;
  f.kind = kind;
  f.ranks = {0};
  f.severity = severity;
  f.summary = "s";
  return f;
}

TEST(AssembleReport, CleanRunFromTheSupervisorsFacts) {
  RunValues v;
  v.supervisor = cleanRecord(2);
  v.diagnosis = cleanDiagnosis(2);
  const Report r = assembleReport(v, {});
  EXPECT_EQ(r.verdict, Verdict::kClean);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].pid, 101);
  EXPECT_EQ(r.stack.world_size, 2);
  EXPECT_EQ(r.extra["instruments"]["python_shim"], "/shim");
  EXPECT_TRUE(r.extra["instruments"]["preload"].is_null());
  ASSERT_EQ(r.timeline.size(), 1u);
}

// A launcher that restarted the ranks: report.ranks are the first attempt's
// processes (the diagnosis names their failure); the restarts are
// report.attempts. Without restarts allowed the latest process stays.
TEST(AssembleReport, RestartedRanksAreReportedAsTheFirstAttempts) {
  RunValues v;
  v.supervisor = cleanRecord(2);
  v.supervisor->ranks[1].exit_code = 1;
  for (int r = 0; r < 2; ++r) {
    SupervisedRank k;
    k.rank = r;
    k.pid = 200 + r;
    k.exit_code = 0;
    k.attempt = 1;
    v.supervisor->ranks.push_back(k);
  }
  v.diagnosis = cleanDiagnosis(2);
  v.supervisor->max_restarts = 1;
  Report r = assembleReport(v, {});
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].pid, 101);
  EXPECT_EQ(r.ranks[1].exit_code, 1);
  v.supervisor->max_restarts = 0;
  r = assembleReport(v, {});
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_EQ(r.ranks[1].pid, 201);
}

TEST(AssembleReport, AWarningFindingIsReportedNotAFailure) {
  // Regression: a no_pg_destroy finding (severity warning) made exec exit 1.
  RunValues v;
  v.supervisor = cleanRecord(1);
  v.diagnosis = cleanDiagnosis(1);
  v.diagnosis->findings.push_back(finding(Kind::kNoPgDestroy, "warning"));
  EXPECT_EQ(assembleReport(v, {}).verdict, Verdict::kClean);
  RunContext strict;
  strict.fail_on = FailOn::kWarning;
  EXPECT_EQ(assembleReport(v, strict).verdict, Verdict::kDiagnosed);
  v.diagnosis->findings.push_back(finding(Kind::kSeedMismatch, "error"));
  EXPECT_EQ(assembleReport(v, {}).verdict, Verdict::kDiagnosed);
}

TEST(AssembleReport, AFailedDiagnosisIsUnresolvedWithItsError) {
  RunValues v;
  v.supervisor = cleanRecord(1);
  v.diagnose_error = "exception: boom";
  v.stderr_tails[0] = "last words\n";
  const Report r = assembleReport(v, {});
  EXPECT_EQ(r.verdict, Verdict::kUnresolved);
  EXPECT_EQ(r.problems.diagnose_error, "exception: boom");
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_EQ(r.ranks[0].stderr_tail, "last words\n");
  EXPECT_EQ(r.ranks[0].role, RankRole::kClean);  // from the facts alone
  // A scenario judged on it is unresolved too, whatever its expectations say.
  scenario::Expect e;
  e.path = "root_cause";
  e.op = scenario::MatchOp::kNull;
  e.value = true;
  const std::vector<scenario::Expect> expect{e};
  RunContext ctx;
  ctx.expect = &expect;
  const Report judged = assembleReport(v, ctx);
  ASSERT_EQ(judged.expectations.size(), 1u);
  EXPECT_TRUE(judged.expectations[0].ok);
  EXPECT_EQ(judged.verdict, Verdict::kUnresolved);
}

TEST(AssembleReport, AnInterruptedRunIsIncomplete) {
  RunValues v;
  v.supervisor = cleanRecord(1);
  v.supervisor->interrupted = true;
  EXPECT_EQ(assembleReport(v, {}).verdict, Verdict::kIncomplete);
}

TEST(AssembleReport, WhatTheLauncherBlamedAndWhetherItWasRight) {
  RunValues v;
  v.supervisor = cleanRecord(2);
  v.supervisor->ranks[1].exit_code = 1;
  v.diagnosis = cleanDiagnosis(2);
  RootCause rc;
  rc.kind = Kind::kPythonException;
  rc.rank = 1;
  v.diagnosis->root_cause = rc;
  EXPECT_FALSE(assembleReport(v, {}).launcher.blamed_rank);  // blamed none: null
  EXPECT_FALSE(assembleReport(v, {}).launcher.blamed_correctly);
  EXPECT_TRUE(toJson(assembleReport(v, {}))["launcher"]["blamed_ranks"].is_null());
  v.diagnosis->launcher_blamed_ranks = {0};
  Report r = assembleReport(v, {});
  EXPECT_EQ(r.launcher.blamed_rank, 0);
  EXPECT_EQ(r.launcher.blamed_correctly, false);
  EXPECT_EQ(r.extra["launcher_root_cause_rank"], 0);
  EXPECT_EQ(toJson(r)["launcher"]["blamed_correctly"], false);
  EXPECT_EQ(toJson(r)["launcher"]["blamed_ranks"], nlohmann::json::array({0}));
  v.diagnosis->launcher_blamed_ranks = {1};
  EXPECT_EQ(assembleReport(v, {}).launcher.blamed_correctly, true);
  // srun's "tasks 1-2:": both named together, the root cause's among them,
  // yet none singled out: no blamed_rank, and not right.
  v.diagnosis->launcher_blamed_ranks = {1, 2};
  r = assembleReport(v, {});
  EXPECT_FALSE(r.launcher.blamed_rank);
  EXPECT_FALSE(r.extra.contains("launcher_root_cause_rank"));
  EXPECT_EQ(r.launcher.blamed_correctly, false);
  EXPECT_EQ(r.launcher.blamed_ranks, (std::vector<int>{1, 2}));
  EXPECT_EQ(reportFromJson(toJson(r))->launcher.blamed_ranks, (std::vector<int>{1, 2}));
  v.diagnosis->root_cause->rank.reset();  // faultline names no rank: null
  EXPECT_FALSE(assembleReport(v, {}).launcher.blamed_correctly);
}

TEST(AssembleReport, ScenarioVerdictFromItsExpectations) {
  RunValues v;
  v.supervisor = cleanRecord(1);
  v.diagnosis = cleanDiagnosis(1);
  scenario::Expect e;
  e.path = "launcher.blamed_correctly";
  e.op = scenario::MatchOp::kNull;
  e.value = true;
  const std::vector<scenario::Expect> expect{e};
  RunContext ctx;
  ctx.scenario = ScenarioRef{"s", "s.toml"};
  ctx.stack = "builtin@2.13";
  ctx.expect = &expect;
  const Report r = assembleReport(v, ctx);
  EXPECT_EQ(r.verdict, Verdict::kPass);
  EXPECT_EQ(r.stack.launcher, "builtin@2.13");
  ASSERT_TRUE(r.scenario);
}

TEST(ReportOfRun, AMissingDirectoryIsADiagnosisError) {
  const Report r = reportOfRun("/nonexistent/run", {});
  EXPECT_TRUE(r.problems.diagnose_error);
  EXPECT_NE(r.verdict, Verdict::kClean);
}

TEST(ReportOfRun, ACapturedTorchrunRunNamesWhatTheLauncherBlamed) {
  const char* src = std::getenv("FAULTLINE_SOURCE_DIR");
  ASSERT_TRUE(src);
  const Report r = reportOfRun(std::string(src) + "/tests/fixtures/diagnose/torchrun_name_error", {});
  ASSERT_TRUE(r.root_cause);
  EXPECT_EQ(r.root_cause->rank, 1);
  EXPECT_EQ(r.launcher.blamed_rank, 0);
  EXPECT_EQ(r.launcher.blamed_correctly, false);
}

}  // namespace
}  // namespace faultline::assemble
