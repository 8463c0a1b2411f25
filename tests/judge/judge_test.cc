// The judge on hand-written reports: no processes.
#include "harness/judge/judge.h"

#include <gtest/gtest.h>

namespace faultline::judge {
namespace {

using nlohmann::json;

const json kReport = json::parse(R"J({
  "root_cause": {"kind": "python_exception", "rank": 1, "summary": "rank 1: NameError: name 'c' is not defined (train.py:42)",
                 "location": {"file": "train.py", "line": 42}},
  "ranks": [{"rank": 0, "role": "collateral"}, {"rank": 1, "role": "root_cause"}],
  "findings": [{"kind": "straggler", "ranks": [2]}, {"kind": "no_pg_destroy", "ranks": [0, 1]}],
  "teardown": {"clean": true, "duration_ms": 412},
  "verdict": "diagnosed"
})J");

scenario::Expect ex(std::string path, scenario::MatchOp op, json value) {
  scenario::Expect e;
  e.path = std::move(path);
  e.op = op;
  e.value = std::move(value);
  return e;
}

TEST(ResolvePath, FieldsIndicesAndProjection) {
  EXPECT_EQ(resolvePath(kReport, "root_cause.rank"), 1);
  EXPECT_EQ(resolvePath(kReport, "ranks[1].role"), "root_cause");
  EXPECT_EQ(resolvePath(kReport, "ranks.role"), json({"collateral", "root_cause"}));
  EXPECT_EQ(resolvePath(kReport, "findings.ranks"), json({2, 0, 1}));
  EXPECT_TRUE(resolvePath(kReport, "ranks[5].role").is_null());
  EXPECT_TRUE(resolvePath(json::parse(R"({"root_cause": null})"), "root_cause.kind").is_null());
}

// Issue 16: `findings.ranks contains 1` merges every finding's ranks, so a
// seed_mismatch expectation passed on another finding's rank 1.
// `findings[KIND]` ties the ranks to the finding.
TEST(ResolvePath, FindingsOfOneKind) {
  const json two = json::parse(R"J({
    "findings": [{"kind": "seed_mismatch", "ranks": [0], "severity": "error"},
                 {"kind": "no_pg_destroy", "ranks": [1], "severity": "warning"}]
  })J");
  using scenario::MatchOp;
  // The old path passes on no_pg_destroy's rank 1; the finding's own does not.
  EXPECT_TRUE(judgeOne(ex("findings.ranks", MatchOp::kContains, 1), two).ok);
  EXPECT_FALSE(judgeOne(ex("findings[seed_mismatch].ranks", MatchOp::kContains, 1), two).ok);
  EXPECT_FALSE(judgeOne(ex("findings[seed_mismatch].ranks", MatchOp::kEquals, json({1})), two).ok);
  EXPECT_TRUE(judgeOne(ex("findings[seed_mismatch].ranks", MatchOp::kEquals, json({0})), two).ok);
  EXPECT_EQ(resolvePath(two, "findings[no_pg_destroy].severity"), json({"warning"}));
  EXPECT_EQ(resolvePath(two, "findings[seed_mismatch]"), json::array({two["findings"][0]}));
  // No finding of the kind is absent, not an empty list.
  EXPECT_TRUE(resolvePath(two, "findings[straggler].ranks").is_null());
  EXPECT_FALSE(judgeOne(ex("findings[straggler].ranks", MatchOp::kEquals, json::array()), two).ok);
  EXPECT_TRUE(judgeOne(ex("findings[straggler]", MatchOp::kNull, true), two).ok);
  // Several findings of one kind (a straggler per rank) project like findings.ranks.
  const json many = json::parse(R"J({"findings": [{"kind": "straggler", "ranks": [0]}, {"kind": "seed_mismatch", "ranks": [2]},
                                                  {"kind": "straggler", "ranks": [3]}]})J");
  EXPECT_EQ(resolvePath(many, "findings[straggler].ranks"), json({0, 3}));
}

// A fault on several ranks: the root cause is whichever failed first.
TEST(Judge, InMatcherAcceptsAnyListedValue) {
  using scenario::MatchOp;
  EXPECT_TRUE(judgeOne(ex("root_cause.rank", MatchOp::kIn, json({0, 1})), kReport).ok);
  EXPECT_FALSE(judgeOne(ex("root_cause.rank", MatchOp::kIn, json({0, 2})), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause.rank", MatchOp::kIn, json({1.0})), kReport).ok);  // numbers by value
  EXPECT_FALSE(judgeOne(ex("root_cause.exit_code", MatchOp::kIn, json({nullptr, 1})), kReport).ok);  // absent fails
  const auto e = judgeOne(ex("root_cause.rank", MatchOp::kIn, json({0, 2})), kReport);
  EXPECT_EQ(e.status, ExpectationStatus::kFail);
}

TEST(Judge, Matchers) {
  using scenario::MatchOp;
  EXPECT_TRUE(judgeOne(ex("root_cause.kind", MatchOp::kEquals, "python_exception"), kReport).ok);
  EXPECT_FALSE(judgeOne(ex("root_cause.rank", MatchOp::kEquals, 0), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause.rank", MatchOp::kEquals, 1.0), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause.summary", MatchOp::kRegex, "NameError.*train\\.py:42"), kReport).ok);
  EXPECT_FALSE(judgeOne(ex("root_cause.summary", MatchOp::kRegex, "^rank 0"), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("teardown.duration_ms", MatchOp::kMax, 3000), kReport).ok);
  EXPECT_FALSE(judgeOne(ex("teardown.duration_ms", MatchOp::kMax, 400), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("teardown.duration_ms", MatchOp::kMin, 400), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("findings.kind", MatchOp::kContains, "straggler"), kReport).ok);
  EXPECT_FALSE(judgeOne(ex("findings.kind", MatchOp::kContains, "seed_mismatch"), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("findings", MatchOp::kEquals, json::array()), json::parse(R"({"findings": []})")).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause", MatchOp::kNull, true), json::parse(R"({"root_cause": null})")).ok);
  EXPECT_FALSE(judgeOne(ex("root_cause", MatchOp::kNull, true), kReport).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause.location", MatchOp::kNull, false), kReport).ok);
}

TEST(Judge, ContainsARegexMatchesAnElement) {
  using scenario::MatchOp;
  const json report = json::parse(R"J({"root_cause": {"layers": [{"layer": "process", "text": "rank 1 exited with code 1"},
      {"layer": "error", "text": "RuntimeError: config has no 'warmup' (/w/onion.py:102)"}, {"layer": "error", "text": "KeyError: 'warmup'"}]}})J");
  EXPECT_TRUE(judgeOne(ex("root_cause.layers.text", MatchOp::kContains, "~^RuntimeError: .*onion\\.py:102\\)$"), report).ok);
  EXPECT_FALSE(judgeOne(ex("root_cause.layers.text", MatchOp::kContains, "~^ValueError"), report).ok);
  // Without "~" it is still an element equal to the value.
  EXPECT_FALSE(judgeOne(ex("root_cause.layers.text", MatchOp::kContains, "KeyError"), report).ok);
  EXPECT_TRUE(judgeOne(ex("root_cause.layers.text", MatchOp::kContains, "KeyError: 'warmup'"), report).ok);
  // On a string: a match anywhere.
  EXPECT_TRUE(judgeOne(ex("root_cause.summary", MatchOp::kContains, "~NameError.*42"), kReport).ok);
}

TEST(Judge, RecordsExpectedAndActual) {
  auto e = judgeOne(ex("teardown.duration_ms", scenario::MatchOp::kMax, 400), kReport);
  EXPECT_EQ(e.what, "teardown.duration_ms");
  EXPECT_EQ(e.expected, json({{"max", 400}}));
  EXPECT_EQ(e.actual, 412);
  EXPECT_EQ(e.status, ExpectationStatus::kFail);
}

TEST(Judge, MissingValueFailsAndWrongTypeIsUnresolved) {
  using scenario::MatchOp;
  const json no_cause = json::parse(R"({"root_cause": null, "teardown": {"clean": "yes"}})");
  auto missing = judgeOne(ex("root_cause.rank", MatchOp::kEquals, 1), no_cause);
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.status, ExpectationStatus::kFail);
  auto wrong = judgeOne(ex("teardown.clean", MatchOp::kMax, 1), no_cause);
  EXPECT_FALSE(wrong.ok);
  EXPECT_EQ(wrong.status, ExpectationStatus::kUnresolved);
  EXPECT_EQ(wrong.reason, "a numeric bound needs a number, the report has string");
  EXPECT_EQ(verdictOf({missing, wrong}), Verdict::kUnresolved);
  EXPECT_EQ(verdictOf({missing}), Verdict::kFail);
  EXPECT_EQ(verdictOf({judgeOne(ex("root_cause.rank", MatchOp::kEquals, 1), kReport)}), Verdict::kPass);
}

// A finding the diagnosis could not look for is unknown: "no findings" and
// "has no seed_mismatch" cannot pass, a finding that was found still can.
TEST(Judge, FindingsThatWereNotCheckedAreUnresolved) {
  using scenario::MatchOp;
  const json report = json::parse(R"({"findings": [{"kind": "straggler", "ranks": [2]}],
    "unchecked_findings": [{"kind": "seed_mismatch", "ranks": [1],
                            "reason": "rank 1: patch ddp.fingerprint failed: TypeError: x"}]})");
  auto none = judgeOne(ex("findings", MatchOp::kEquals, json::array()), json::parse(R"({"findings": [],
    "unchecked_findings": [{"kind": "seed_mismatch", "ranks": [1], "reason": "r"}]})"));
  EXPECT_EQ(none.status, ExpectationStatus::kUnresolved);
  EXPECT_EQ(none.reason, "seed_mismatch not checked (r)");
  auto seed = judgeOne(ex("findings.kind", MatchOp::kContains, "seed_mismatch"), report);
  EXPECT_EQ(seed.status, ExpectationStatus::kUnresolved);
  EXPECT_EQ(seed.reason, "seed_mismatch not checked (rank 1: patch ddp.fingerprint failed: TypeError: x)");
  EXPECT_EQ(judgeOne(ex("findings.kind", MatchOp::kContains, "straggler"), report).status, ExpectationStatus::kPass);
  EXPECT_EQ(judgeOne(ex("root_cause", MatchOp::kNull, true), report).status, ExpectationStatus::kPass);
}

TEST(Judge, NothingJudgedIsNotAPass) {
  // The parser insists on expectations; if none reach the judge, nothing was checked.
  EXPECT_EQ(verdictOf({}), Verdict::kUnresolved);
}

// Regression: a scenario expecting root_cause = null passed when diagnosis threw.
TEST(Judge, ACrashedDiagnosisIsUnresolvedNeverAPass) {
  Report r;
  r.problems.diagnose_error = "exception: boom";
  const auto judged = judgeAll({ex("root_cause", scenario::MatchOp::kNull, true)}, toJson(r));
  ASSERT_EQ(judged.size(), 1u);
  EXPECT_TRUE(judged[0].ok);  // the expectation alone would pass
  EXPECT_EQ(scenarioVerdict(judged, r), Verdict::kUnresolved);
  r.problems.diagnose_error.reset();
  EXPECT_EQ(scenarioVerdict(judged, r), Verdict::kPass);
}

}  // namespace
}  // namespace faultline::judge
