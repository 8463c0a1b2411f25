// Renderers: JUnit parses as XML with the structure CI servers read, and all
// trainer-controlled text is escaped in every format.
#include "reports/render.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <pugixml.hpp>

#include "reports/xml_text.h"
#include "tests/support/utf8_oracle.h"

namespace faultline::reports {
namespace {

const std::string kHostile = "<script>alert(1)</script> & \"quotes\" \x01\x0b bell\x07 ```\n| pipe";

Report hostileReport() {
  Report r;
  r.scenario = ScenarioRef{"name-error <b>", "s.toml"};
  r.stack = {"torchrun", {"torchrun"}, 2, "2.13.0+cpu"};
  RootCause rc;
  rc.kind = Kind::kPythonException;
  rc.rank = 1;
  rc.summary = "rank 1: NameError: " + kHostile;
  rc.layers = {{"launcher", "ChildFailedError " + kHostile}, {"error", "NameError"}};
  r.root_cause = rc;
  r.ranks = {{0, 10, 1, std::nullopt, RankRole::kCollateral, "peer closed", kHostile},
             {1, 11, 1, std::nullopt, RankRole::kRootCause, kHostile, "Traceback...\n" + kHostile}};
  r.findings = {{Kind::kStraggler, {1}, "warning", kHostile, kHostile, "", std::nullopt}};
  r.expectations = {{"root_cause.rank", 1, 1, true, ExpectationStatus::kPass, ""},
                    {"root_cause.kind", "python_exception", kHostile, false, ExpectationStatus::kFail, ""},
                    {"teardown.clean", nlohmann::json{{"max", 1}}, true, false, ExpectationStatus::kUnresolved,
                     "needs a number"}};
  r.timeline = {{0.5, 1, "fault " + kHostile}, {12.0, std::nullopt, "SIGTERM sent"}};
  r.verdict = Verdict::kFail;
  r.harness.wall_ms = 1500;
  return r;
}

TEST(XmlText, StripsForbiddenAndEscapes) {
  EXPECT_EQ(stripForbidden("a\x01" "b\x0b" "c\td\n"), "abc\td\n");
  EXPECT_EQ(stripForbidden("x\xff" "y"), "x\xef\xbf\xbdy");
  EXPECT_EQ(stripForbidden("\xef\xbf\xbe"), "");
  EXPECT_EQ(escapeXml("<a href='x'>&</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;");
}

TEST(Junit, ParsesAndHasTheStructureCiReads) {
  pugi::xml_document doc;
  const std::string xml = junitForRun(hostileReport());
  ASSERT_TRUE(doc.load_string(xml.c_str())) << xml;
  auto suite = doc.child("testsuites").child("testsuite");
  EXPECT_STREQ(suite.attribute("name").value(), "name-error <b>");
  EXPECT_EQ(suite.attribute("tests").as_int(), 3);
  EXPECT_EQ(suite.attribute("failures").as_int(), 1);
  EXPECT_EQ(suite.attribute("errors").as_int(), 1);
  int cases = 0;
  for (auto tc : suite.children("testcase")) {
    ++cases;
    EXPECT_STREQ(tc.attribute("classname").value(), "faultline.torchrun");
    EXPECT_TRUE(tc.child("system-out"));
  }
  EXPECT_EQ(cases, 3);
  auto failed = suite.find_child_by_attribute("testcase", "name", "root_cause.kind");
  // The failure message is the root-cause summary, control characters stripped.
  EXPECT_EQ(std::string(failed.child("failure").attribute("message").value()),
            "rank 1: NameError: <script>alert(1)</script> & \"quotes\"  bell ```");
  EXPECT_TRUE(suite.find_child_by_attribute("testcase", "name", "teardown.clean").child("error"));
}

// Regression: an unsupported run has no expectations and was a <failure>,
// red in Jenkins and GitLab for what is a skip.
TEST(Junit, UnsupportedIsASkipWithItsReason) {
  Report r;
  r.scenario = ScenarioRef{"stock-flags", "s.toml"};
  r.stack.launcher = "torchrun@2.13";
  r.verdict = Verdict::kUnsupported;
  r.problems.unsupported_reason = "scenario 'stock-flags' applies to torch <2, not 2.13.0+cpu";
  pugi::xml_document doc;
  const std::string xml = junitForRun(r);
  ASSERT_TRUE(doc.load_string(xml.c_str())) << xml;
  auto suite = doc.child("testsuites").child("testsuite");
  EXPECT_EQ(suite.attribute("tests").as_int(), 1);
  EXPECT_EQ(suite.attribute("failures").as_int(), 0);
  EXPECT_EQ(suite.attribute("skipped").as_int(), 1);
  auto tc = suite.child("testcase");
  EXPECT_FALSE(tc.child("failure"));
  EXPECT_EQ(std::string(tc.child("skipped").attribute("message").value()),
            "unsupported: scenario 'stock-flags' applies to torch <2, not 2.13.0+cpu");
}

// Regression: a run whose diagnosis failed showed its held expectations green.
TEST(Junit, HeldExpectationsOfAnUnresolvedRunAreErrors) {
  Report r;
  r.scenario = ScenarioRef{"x", "x.toml"};
  r.verdict = Verdict::kUnresolved;
  r.problems.diagnose_error = "exception: boom";
  Expectation e;
  e.what = "root_cause";
  e.expected = nullptr;
  e.actual = nullptr;
  e.ok = true;
  e.status = ExpectationStatus::kPass;
  r.expectations = {e};
  pugi::xml_document doc;
  const std::string xml = junitForRun(r);
  ASSERT_TRUE(doc.load_string(xml.c_str())) << xml;
  auto suite = doc.child("testsuites").child("testsuite");
  EXPECT_EQ(suite.attribute("errors").as_int(), 1);
  EXPECT_TRUE(suite.child("testcase").child("error")) << xml;
}

TEST(Junit, SuiteHasOneTestsuitePerScenario) {
  Suite s;
  s.entries = {{"a", "builtin", "a", hostileReport()}, {"b", "torchrun", "b", hostileReport()}};
  s.entries[1].report.verdict = Verdict::kUnsupported;
  s.entries[1].report.problems.unsupported_reason = "no python";
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(junitForSuite(s).c_str()));
  int suites = 0;
  for (auto ts : doc.child("testsuites").children("testsuite")) {
    ++suites;
    (void)ts;
  }
  EXPECT_EQ(suites, 2);
  auto b = doc.child("testsuites").find_child_by_attribute("testsuite", "name", "b [torchrun]");
  EXPECT_EQ(b.attribute("skipped").as_int(), 3);
}

TEST(Html, TrainerTextIsEscapedNeverMarkup) {
  const std::string html = htmlForRun(hostileReport());
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("id=\"root-cause\""), std::string::npos);
  EXPECT_NE(html.find("data-rank=\"0\""), std::string::npos);
  EXPECT_NE(html.find("data-rank=\"1\""), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  Report dumped = hostileReport();
  dumped.extra["stack_dumps"]["1"] = "Thread 1 <main>\n#0 pause()";
  EXPECT_NE(htmlForRun(dumped).find("<pre class=\"stacks\" id=\"rank-1-stacks\">Thread 1 &lt;main&gt;"), std::string::npos);
  // The page is well-formed enough for an XML parser once the doctype is dropped.
  pugi::xml_document doc;
  EXPECT_TRUE(doc.load_string(html.substr(html.find("<html")).c_str()));
}

TEST(Markdown, RootCauseFirstAndHostileTextContained) {
  const std::string md = markdownForRun(hostileReport());
  const size_t cause = md.find("**rank 1: NameError:");
  ASSERT_NE(cause, std::string::npos);
  EXPECT_LT(cause, md.find("### Ranks"));
  // Table cells escape markup; raw text appears only inside fenced blocks.
  EXPECT_NE(md.find("| straggler | 1 | warning | &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << md;
  // The stderr tail contains ``` and still cannot close the fence around it.
  EXPECT_NE(md.find("````text"), std::string::npos);
  EXPECT_NE(md.find("<details>"), std::string::npos);
}

// Issue 18: who is to blame, and each side of a collective, in every format.
Report ambiguousReport() {
  Report r;
  r.stack = {"torchrun", {"torchrun"}, 2, "2.13.0+cpu"};
  RootCause rc;
  rc.kind = Kind::kCollectiveMismatch;
  rc.blame = Blame::kAmbiguous;
  rc.ranks = {0, 1};
  rc.summary = "collective mismatch: ranks disagree at collective #6; ambiguous";
  CollectiveSide a{{1}, "allreduce", 1, "/app/sync.py:36", {"/app/train.py:80"}, ""};
  CollectiveSide b{{0}, "broadcast", 2, "/app/sync.py:39", {}, "/app/sync.py:33: if rank == 0"};
  rc.sides = {a, b};
  r.root_cause = rc;
  r.verdict = Verdict::kDiagnosed;
  return r;
}

TEST(Blame, EveryRendererShowsTheBlameAndTheSides) {
  const Report r = ambiguousReport();
  const auto lines = blameLines(*r.root_cause);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "blame: ambiguous, one of ranks 0,1 (no majority, and no evidence for one side)");
  EXPECT_EQ(lines[1], "rank 1: allreduce of 1 elements at sync.py:36, from train.py:80");
  EXPECT_EQ(lines[2], "rank 0: broadcast of 2 elements at sync.py:39, under `sync.py:33: if rank == 0`");
  EXPECT_NE(markdownForRun(r).find("- blame: ambiguous"), std::string::npos);
  const std::string html = htmlForRun(r);
  EXPECT_NE(html.find("<ul id=\"blame\">"), std::string::npos);
  EXPECT_NE(html.find("rank 1: allreduce of 1 elements at sync.py:36"), std::string::npos);
  EXPECT_NE(junitForRun(r).find("blame: ambiguous"), std::string::npos);
  // One rank to blame and no sides: nothing extra to say.
  RootCause one;
  one.blame = Blame::kRank;
  one.rank = 2;
  one.ranks = {2};
  EXPECT_TRUE(blameLines(one).empty());
  RootCause all;
  all.blame = Blame::kAllRanks;
  all.ranks = {0, 1, 2};
  EXPECT_EQ(blameLines(all), std::vector<std::string>{"blame: no primary rank, every rank failed the same way (ranks 0,1,2)"});
}

TEST(Markdown, WhatTheShimCouldNotObserveIsListed) {
  Report r = hostileReport();
  r.extra["instruments"] = nlohmann::json::parse(R"({"python_shim": "/s", "preload": null, "ranks": {
    "0": {"torch": "2.13.0", "patches": {"dist.all_reduce": true}, "failed": {}},
    "1": {"torch": "2.13.0", "patches": {"dist.all_reduce": false}, "failed": {"dist.all_reduce": "TypeError: <x>"}}}})");
  r.extra["unchecked_findings"] = nlohmann::json::parse(
      R"([{"kind": "straggler", "ranks": [1], "reason": "rank 1: patch dist.all_reduce failed: TypeError: <x>"}, 7])");
  const std::string md = markdownForRun(r);
  EXPECT_NE(md.find("### Not observed"), std::string::npos) << md;
  EXPECT_NE(md.find("| finding straggler | not checked | rank 1: patch dist.all_reduce failed: TypeError: &lt;x&gt; |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| rank 1 | patch dist.all_reduce failed | TypeError: &lt;x&gt; |"), std::string::npos) << md;
  EXPECT_EQ(markdownForRun(hostileReport()).find("### Not observed"), std::string::npos);
  r.extra["instruments"]["ranks"] = "not an object";
  EXPECT_NO_THROW(markdownForRun(r));
}

TEST(Markdown, HarnessNotesAreShownInBothPages) {
  Report r = hostileReport();
  r.extra["harness_notes"] = nlohmann::json::parse(
      R"(["no stack dump of ranks 0,1: neither eu-stack nor gdb is installed <x>", 3])");
  const std::string md = markdownForRun(r);
  EXPECT_NE(md.find("| harness | note | no stack dump of ranks 0,1: neither eu-stack nor gdb is installed &lt;x&gt; |"),
            std::string::npos)
      << md;
  const std::string html = htmlForRun(r);
  EXPECT_NE(html.find("<ul id=\"harness-notes\"><li>no stack dump of ranks 0,1: neither eu-stack nor gdb is installed "
                      "&lt;x&gt;</li></ul>"),
            std::string::npos)
      << html;
  EXPECT_EQ(htmlForRun(hostileReport()).find("harness-notes"), std::string::npos);
  r.extra["harness_notes"] = "not a list";
  EXPECT_NO_THROW(markdownForRun(r));
  EXPECT_NO_THROW(htmlForRun(r));
}

// A launcher that restarted the job: the recovery verdict and each attempt,
// in both pages, the attempt's text escaped.
TEST(Markdown, RecoveryAndAttemptsAreShownInBothPages) {
  Report r = hostileReport();
  AttemptReport a;
  a.attempt = 0;
  a.start_ms = 10;
  a.end_ms = 20;
  a.ended = "rank 1 exited with code 1: <b>x</b>";
  r.attempts = {a};
  Recovery v;
  v.summary = "not recovered: the launcher made no restart (max_restarts 1)";
  r.recovery = v;
  const std::string md = markdownForRun(r);
  EXPECT_NE(md.find("### Recovery\n\nnot recovered: the launcher made no restart (max_restarts 1)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | 10 ms | 20 ms | - | rank 1 exited with code 1: &lt;b&gt;x&lt;/b&gt; |"), std::string::npos) << md;
  const std::string html = htmlForRun(r);
  EXPECT_NE(html.find("<div id=\"recovery\" class=\"bad\">not recovered"), std::string::npos) << html;
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);
  EXPECT_EQ(markdownForRun(hostileReport()).find("### Recovery"), std::string::npos);
}

TEST(Suite, JsonCountsAndHeadlines) {
  Suite s;
  s.entries = {{"a", "builtin", "a", hostileReport()}};
  s.entries[0].report.verdict = Verdict::kPass;
  auto j = suiteJson(s);
  EXPECT_EQ(j["schema"], "faultline.suite/1");
  EXPECT_EQ(j["counts"]["pass"], 1);
  EXPECT_EQ(j["scenarios"][0]["root_cause_rank"], 1);
  EXPECT_EQ(j["scenarios"][0]["expectations_failed"], 2);
  EXPECT_EQ(j["scenarios"][0]["tags"], nlohmann::json::array());
  s.entries[0].tags = {"hang", "core"};
  EXPECT_EQ(suiteJson(s)["scenarios"][0]["tags"], (nlohmann::json{"hang", "core"}));
}

TEST(Catalog, ComparesWhatEachStackBlamed) {
  Suite builtin, torchrun;
  builtin.entries = {{"name-error", "builtin", "name-error", hostileReport()}};
  builtin.entries[0].report.stack.launcher = "builtin";
  torchrun.entries = {{"name-error", "torchrun", "name-error", hostileReport()}};
  torchrun.entries[0].report.launcher.exit_code = 1;
  torchrun.entries[0].report.extra["launcher_root_cause_rank"] = 0;  // torchrun blamed rank 0; rank 1 did it
  torchrun.entries[0].report.teardown.survivors = {{77, "sleep"}};
  const std::string md = failureModeCatalog({{"builtin", builtin}, {"torchrun", torchrun}}, "faultline suite --catalog x.md");
  EXPECT_NE(md.find("| name-error | builtin | fail |"), std::string::npos) << md;
  EXPECT_NE(md.find("(faultline's own launcher)"), std::string::npos);
  EXPECT_NE(md.find("exit 1, blamed rank 0 (**wrong**)"), std::string::npos);
  EXPECT_NE(md.find("**1 survivor(s)**"), std::string::npos);
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  EXPECT_NE(md.find("| torchrun | 1 | 0 | 1 | 0 | 0 | 0/1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| builtin | 1 | 0 | 1 | 0 | 0 | – |"), std::string::npos) << "faultline's own launcher has no own report";
}

// Three stacks: two GPU scenarios nowhere, one scenario on builtin only, one everywhere.
std::vector<std::pair<std::string, Suite>> unsupportedCatalog() {
  const std::vector<std::string> stacks = {"builtin@2.13", "torchrun@2.13", "launch@2.13"};
  std::vector<std::pair<std::string, Suite>> out;
  for (const auto& stack : stacks) {
    Suite s;
    for (const std::string gpu : {"gpu-cuda-oom", "gpu-device-assert"}) {
      Report r;
      r.stack.launcher = stack;
      r.verdict = Verdict::kUnsupported;
      r.problems.unsupported_reason = "scenario '" + gpu + "' needs 1 GPU(s), this machine has 0 (no /dev/nvidiaN)";
      s.entries.push_back({gpu, stack, gpu, r});
    }
    Report only = hostileReport();
    only.stack.launcher = stack;
    if (stack != "builtin@2.13") {
      only.verdict = Verdict::kUnsupported;
      only.problems.unsupported_reason = "scenario 'only-builtin' applies to the stacks builtin, not " + stack;
    }
    s.entries.push_back({"only-builtin", stack, "only-builtin", only});
    Report odd = hostileReport();
    odd.stack.launcher = stack;
    if (stack == "launch@2.13") {
      odd.verdict = Verdict::kUnsupported;
      odd.problems.unsupported_reason = "launch cannot <script>|x|</script> [link](javascript:1)";
    } else if (stack == "torchrun@2.13") {
      odd.launcher.exit_code = 1;
      odd.launcher.blamed_rank = 1;
      odd.launcher.blamed_correctly = true;
    }
    s.entries.push_back({"odd", stack, "odd", odd});
    out.emplace_back(stack, s);
  }
  return out;
}

TEST(Catalog, UnsupportedCellsAreADotAndTheirReasonsAListedOnce) {
  const std::string md = failureModeCatalog(unsupportedCatalog(), "faultline suite --catalog x.md");
  EXPECT_NE(md.find("| gpu-cuda-oom | · | · | · |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| only-builtin | fail | · | · |\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| odd | fail | fail ✓ | · |\n"), std::string::npos) << md;
  // The matrix never says "unsupported"; the detail table still does.
  const std::string matrix = md.substr(md.find("| scenario | builtin@2.13"), md.find("\n\n", md.find("| scenario | builtin@2.13")) - md.find("| scenario | builtin@2.13"));
  EXPECT_EQ(matrix.find("unsupported"), std::string::npos) << matrix;
  EXPECT_NE(md.find("| gpu-cuda-oom | launch@2.13 | unsupported |"), std::string::npos);
  // Each reason once, sorted, without "scenario 'NAME' " or ", not STACK".
  const std::string list =
      "### Unsupported cells and why\n\n"
      "- applies to the stacks builtin: only-builtin on torchrun@2.13, launch@2.13\n"
      "- launch cannot &lt;script&gt;\\|x\\|&lt;/script&gt; \\[link\\](javascript:1): odd on launch@2.13\n"
      "- needs 1 GPU(s), this machine has 0 (no /dev/nvidiaN): gpu-cuda-oom, gpu-device-assert on every stack\n\n";
  EXPECT_NE(md.find(list), std::string::npos) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos);
  // Below the matrix, above the detail table.
  EXPECT_LT(md.find("| gpu-cuda-oom | · |"), md.find(list));
  EXPECT_LT(md.find(list), md.find("| scenario | stack | verdict |"));
  // Totals: the stack's own report right over the cells it could be checked on.
  EXPECT_NE(md.find("| stack | scenarios | pass | fail | unsupported | other | own report right | wall |"), std::string::npos);
  EXPECT_NE(md.find("| torchrun@2.13 | 4 | 0 | 1 | 3 | 0 | 1/1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| launch@2.13 | 4 | 0 | 0 | 4 | 0 | – |"), std::string::npos) << md;
  EXPECT_NE(md.find("| builtin@2.13 | 4 | 0 | 2 | 2 | 0 | – |"), std::string::npos) << md;
  // Deterministic: the same input, the same text.
  EXPECT_EQ(md, failureModeCatalog(unsupportedCatalog(), "faultline suite --catalog x.md"));
}

TEST(Catalog, AStackTheMachineLackedIsNamedWithWhyNotDroppedUnsaid) {
  const std::string md = failureModeCatalog(unsupportedCatalog(), "x", {{"slurm@2.13", "no Slurm controller answers (sinfo)"}});
  EXPECT_NE(md.find("**Not in this catalog** (the machine that generated it lacked them):\n\n"
                    "- slurm@2.13: no Slurm controller answers (sinfo)\n"),
            std::string::npos)
      << md;
  EXPECT_LT(md.find("**Not in this catalog**"), md.find("| scenario | builtin@2.13"));
  EXPECT_EQ(failureModeCatalog(unsupportedCatalog(), "x").find("Not in this catalog"), std::string::npos);
}

TEST(Catalog, ScenariosOnDifferentStacksShareTheirReasonsLine) {
  auto stacks = unsupportedCatalog();
  // gpu-device-assert now runs on builtin: same reason, two groups of stacks.
  stacks[0].second.entries[1].report = hostileReport();
  const std::string md = failureModeCatalog(stacks, "x");
  EXPECT_NE(md.find("- needs 1 GPU(s), this machine has 0 (no /dev/nvidiaN): gpu-cuda-oom on every stack; "
                    "gpu-device-assert on torchrun@2.13, launch@2.13\n"),
            std::string::npos)
      << md;
}

// --- security: every trainer-controlled field, every hostile string ------------

// Strings a rank (or a hand-edited report.json) can put in any text field.
const std::vector<std::string> kHostileSet = {
    "</script><script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned'\">",
    "<svg onload=alert(1)>",
    "javascript:alert(1)",
    "[click](javascript:alert(1)) ![img](http://x.invalid/t.png) <http://x.invalid>",
    "]]><!-- --><![CDATA[",
    "\"'&amp;&",
    std::string("ctl\x01\x02\x08\x0b\x0c\x1b[31m\x7f nul:") + std::string(1, '\0') + "end",
    "line\xe2\x80\xa8sep\xe2\x80\xa9para",
    "bad\xff\xfe\xc0\xaf\xed\xa0\x80\xe0\x80\x80\xf4\x90\x80\x80\xef\xbf\xbe\xc3",
    "cell | break\n| forged | row |\r\n",
    "``` fence ````",
    "\\| escaped pipe \\",
    "$(touch /tmp/fl-pwned) `touch /tmp/fl-pwned` %s%n%x {{7*7}} ${HOME}",
};

std::string allHostile() {
  std::string s;
  for (const auto& h : kHostileSet) s += h + " ~ ";
  return s;
}

// A report with the hostile set in every field that a rank or a report.json controls.
Report hostileEverywhere() {
  const std::string h = allHostile();
  const std::string very_long = std::string(100000, 'A') + h;
  Report r;
  r.scenario = ScenarioRef{h, h};
  r.stack = {h, {h, h}, 2, h};
  r.launcher.exit_code = 1;
  r.launcher.signal = h;
  RootCause rc;
  rc.kind = Kind::kPythonException;
  rc.rank = 1;
  rc.summary = "rank 1: " + h;
  rc.exception_type = h;
  rc.message = very_long;
  rc.location = Location{h, 7};
  rc.symbol = h;
  rc.signal = h;
  rc.collective = CollectiveRef{h, 3};
  rc.layers = {{h, h}, {"error", very_long}};
  r.root_cause = rc;
  r.ranks = {{0, 10, std::nullopt, h, RankRole::kCollateral, h, very_long},
             {1, 11, 1, std::nullopt, RankRole::kRootCause, h, "Traceback\n" + h}};
  r.findings = {{Kind::kStraggler, {1}, h, h, very_long, "", std::nullopt}};
  r.teardown.clean = false;
  r.teardown.survivors = {{12, h}};
  r.teardown.leaks = {h};
  r.expectations = {{h, h, h, false, ExpectationStatus::kFail, h}, {h, 1, nlohmann::json{{h, h}}, false, ExpectationStatus::kUnresolved, h}};
  r.timeline = {{0.5, 1, h}, {1.5, std::nullopt, h}, {2.5, 7, h}};
  r.verdict = Verdict::kFail;
  r.extra["stack_dumps"]["1"] = h;
  r.extra["stack_dumps"]["0"] = very_long;
  r.harness = {h, 10};
  return r;
}

// Independent strict UTF-8 check (tests/support/utf8_oracle.h).
bool strictUtf8(const std::string& s) { return testing::wellFormedUtf8(s); }

// No byte that XML 1.0 forbids (C0 controls but tab, newline, CR), no U+FFFE/U+FFFF.
bool xmlCharsOnly(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return s.find("\xef\xbf\xbe") == std::string::npos && s.find("\xef\xbf\xbf") == std::string::npos;
}

// "](target" with an unescaped "]": a live Markdown link or image.
bool hasMarkdownLinkTo(const std::string& text, const std::string& target) {
  const std::string needle = "](" + target;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    size_t slashes = 0;
    while (at > slashes && text[at - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return true;
  }
  return false;
}

TEST(XmlText, RejectsEveryIllFormedUtf8Sequence) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(stripForbidden("\xed\xa0\x80"), fffd + fffd + fffd);         // a UTF-16 surrogate
  EXPECT_EQ(stripForbidden("\xe0\x80\xaf"), fffd + fffd + fffd);         // overlong '/'
  EXPECT_EQ(stripForbidden("\xf0\x80\x80\xaf"), fffd + fffd + fffd + fffd);  // overlong, 4 bytes
  EXPECT_EQ(stripForbidden("\xf4\x90\x80\x80"), fffd + fffd + fffd + fffd);  // above U+10FFFF
  EXPECT_EQ(stripForbidden("a\xc3"), "a" + fffd);                          // truncated
  EXPECT_EQ(stripForbidden("\xe2\x80\xa8\xf0\x9f\x92\xa5\xed\x9f\xbf"), "\xe2\x80\xa8\xf0\x9f\x92\xa5\xed\x9f\xbf");
  EXPECT_TRUE(strictUtf8(stripForbidden(allHostile())));
}

TEST(XmlText, Utf8TailStartsOnACharacter) {
  const std::string s = "\xc3\xa9\xe2\x82\xac\xf0\x9f\x92\xa5";  // é € 💥: 2 + 3 + 4 bytes
  for (size_t max = 0; max <= s.size(); ++max) {
    const std::string t = utf8Tail(s, max);
    EXPECT_LE(t.size(), max);
    EXPECT_TRUE(strictUtf8(t)) << max;
  }
}

TEST(XmlText, UrlPathLeavesNoSchemeOrSyntax) {
  EXPECT_EQ(urlPath("name-error--torchrun/x_y.z~"), "name-error--torchrun/x_y.z~");
  EXPECT_EQ(urlPath("javascript:alert(1)"), "javascript%3Aalert%281%29");
  EXPECT_EQ(urlPath("a\" onclick=\"x"), "a%22%20onclick%3D%22x");
}

TEST(XmlText, MarkdownCellNeutralisesTableAndLinkSyntax) {
  EXPECT_EQ(markdownCell("a | b\nsecond line"), "a \\| b");
  EXPECT_EQ(markdownCell("[x](javascript:alert(1))"), "\\[x\\](javascript:alert(1))");
  EXPECT_EQ(markdownCell("\\|"), "\\\\\\|");
  EXPECT_EQ(markdownCell("<b>`c`</b>\x01\r"), "&lt;b&gt;'c'&lt;/b&gt; ");
}

// --- the suite's matrix (index.html) ---------------------------------------------

const std::string kHostileName = "<script>alert('x')</script> \"q\" & 'a'";

Report withVerdict(Verdict v) {
  Report r = hostileReport();
  r.verdict = v;
  return r;
}

Report unsupportedReport(const std::string& why) {
  Report r;
  r.verdict = Verdict::kUnsupported;
  r.problems.unsupported_reason = why;
  return r;
}

// Two stacks, three scenarios: every kind of cell and both answers of the
// stack's own report; the hostile text in a scenario, a tag and a reason.
Suite matrixSuite() {
  Suite s;
  Report pass = withVerdict(Verdict::kPass);
  pass.launcher.exit_code = 1;
  pass.launcher.blamed_rank = 1;
  pass.launcher.blamed_correctly = true;
  Report fail = withVerdict(Verdict::kFail);
  fail.launcher.exit_code = 1;
  fail.launcher.blamed_rank = 0;
  fail.launcher.blamed_correctly = false;
  s.entries = {{"alpha", "torchrun@2.13", "t/alpha", pass, {"hang", "core"}},
               {"alpha", "launch@2.13", "l/alpha", fail, {"hang", "core"}},
               {"beta", "torchrun@2.13", "t/beta", unsupportedReport("scenario 'beta' needs 1 GPU(s) " + kHostileName), {"gpu"}},
               {"beta", "launch@2.13", "l/beta", withVerdict(Verdict::kError), {"gpu"}},
               {kHostileName, "torchrun@2.13", "t/h", withVerdict(Verdict::kUnresolved), {kHostileName}}};
  return s;
}

struct SuitePage {
  std::string html;
  pugi::xml_document doc;
  explicit SuitePage(const Suite& s) : html(htmlForSuite(s)) {
    const auto parsed = doc.load_string(html.substr(html.find("<html")).c_str());
    EXPECT_TRUE(parsed) << parsed.description();
  }
  // The cell of a scenario (row) on the stack in column `c`.
  pugi::xml_node cell(const std::string& scenario, int c) const {
    for (auto tr : doc.select_nodes("//table[@id='matrix']/tr")) {
      if (std::string(tr.node().child("th").child_value()) != scenario) continue;
      return tr.node().find_child([&](pugi::xml_node n) {
        return std::string(n.name()) == "td" && (" " + std::string(n.attribute("class").value()) + " ").find(" c" + std::to_string(c) + " ") != std::string::npos;
      });
    }
    return {};
  }
  static std::string text(pugi::xml_node n) {
    std::string out;
    for (auto t : n.select_nodes(".//text()")) out += t.node().value();
    return out;
  }
};

TEST(Suite, EachCellIsAMarkAndAtMostOneShortLine) {
  const SuitePage p(matrixSuite());
  // Pass: ✓, the headline cut to one short line, the whole of it on hover.
  const auto pass = p.cell("alpha", 0);
  ASSERT_TRUE(pass);
  EXPECT_STREQ(pass.select_node(".//span[contains(@class,'verdict')]").node().child_value(), "\u2713");
  EXPECT_STREQ(pass.select_node(".//span[contains(@class,'verdict')]").node().attribute("title").value(), "pass");
  EXPECT_EQ(std::string(pass.child("a").attribute("href").value()), "t/alpha/report.html");
  const std::string line = pass.select_node("div[@class='line']").node().child_value();
  const std::string cause = headline(matrixSuite().entries[0].report);
  EXPECT_EQ(line.rfind("rank 1: NameError: <script>alert(1)</script>", 0), 0u) << line;
  EXPECT_EQ(line, shortLine(cause, 80));
  EXPECT_EQ(pass.select_nodes("div").size(), 1u);
  EXPECT_EQ(pass.select_node("div[@class='line']").node().attribute("title").value(), shortLine(cause, 600));
  // Fail: ✗ and what differs from the expectation (the first failed one, not the unresolved).
  const auto fail = p.cell("alpha", 1);
  EXPECT_STREQ(fail.select_node(".//span[contains(@class,'verdict')]").node().child_value(), "\u2717");
  const std::string differs = fail.select_node("div[@class='line']").node().child_value();
  EXPECT_EQ(differs.rfind("root_cause.kind: expected \"python_exception\", got \"<script>", 0), 0u) << differs;
  // Error and another verdict.
  EXPECT_STREQ(p.cell("beta", 1).select_node(".//span[contains(@class,'verdict')]").node().child_value(), "!");
  EXPECT_STREQ(p.cell(kHostileName, 0).select_node(".//span[contains(@class,'verdict')]").node().child_value(), "\u2026");
  // Every cell keeps its verdict's colour class and links to its run.
  EXPECT_TRUE(p.cell("beta", 1).select_node(".//span[contains(@class,'v-error')]"));
  EXPECT_EQ(p.doc.select_nodes("//td[contains(@class,'cell')]/a[substring(@href, string-length(@href) - 11) = '/report.html']").size(), 5u);
}

TEST(Suite, CutLinesAreShortAndEndWithAnEllipsis) {
  Suite s;
  Report r = withVerdict(Verdict::kPass);
  r.root_cause->summary = std::string(200, 'x') + "\u00e9\u00e9\u00e9\nsecond line";
  s.entries = {{"long", "builtin", "long", r}};
  const SuitePage p(s);
  const std::string line = p.cell("long", 0).select_node("div[@class='line']").node().child_value();
  EXPECT_EQ(line, std::string(79, 'x') + "\u2026");
  EXPECT_EQ(p.html.find("second line"), std::string::npos);
}

TEST(Suite, UnsupportedCellSaysWhyOnlyOnHover) {
  const SuitePage p(matrixSuite());
  const auto cell = p.cell("beta", 0);
  ASSERT_TRUE(cell);
  const auto mark = cell.select_node(".//span[contains(@class,'verdict')]").node();
  EXPECT_STREQ(mark.attribute("class").value(), "verdict v-unsupported blank");
  EXPECT_EQ(std::string(mark.attribute("title").value()), "unsupported: scenario 'beta' needs 1 GPU(s) " + kHostileName);
  EXPECT_EQ(SuitePage::text(cell), "\u2013") << "no visible reason";
  EXPECT_FALSE(cell.select_node("div"));
  EXPECT_TRUE(cell.child("a")) << "the run's report is still a click away";
}

TEST(Suite, StacksOwnReportIsATinyMarkWithItsSentenceOnHover) {
  const SuitePage p(matrixSuite());
  const auto right = p.cell("alpha", 0).child("sup");
  EXPECT_STREQ(right.attribute("class").value(), "own own-right");
  EXPECT_STREQ(right.child_value(), "\u2713");
  EXPECT_STREQ(right.attribute("title").value(), "stack's own report: launcher: exit 1, blamed rank 1 (right)");
  const auto wrong = p.cell("alpha", 1).child("sup");
  EXPECT_STREQ(wrong.attribute("class").value(), "own own-wrong");
  EXPECT_STREQ(wrong.child_value(), "\u2717");
  EXPECT_FALSE(p.cell("beta", 0).child("sup")) << "no launcher ran";
  EXPECT_EQ(p.html.find("launcher: exit 1, blamed rank 1 (right)</div>"), std::string::npos) << "a line of text";
}

TEST(Suite, TotalsRowCountsVerdictsAndOwnReportRightPerStack) {
  const SuitePage p(matrixSuite());
  const auto totals = p.doc.select_node("//table[@id='matrix']/tr[@class='totals']").node();
  ASSERT_TRUE(totals);
  EXPECT_EQ(SuitePage::text(totals.select_node("td[contains(@class,'c0')]").node()),
            "1 pass \u00b7 0 fail \u00b7 1 unsupported \u00b7 1 otherown report right 1/1");
  EXPECT_EQ(SuitePage::text(totals.select_node("td[contains(@class,'c1')]").node()),
            "0 pass \u00b7 1 fail \u00b7 0 unsupported \u00b7 1 otherown report right 0/1");
  Suite none;
  none.entries = {{"a", "builtin", "a", withVerdict(Verdict::kPass)}};
  const SuitePage q(none);
  EXPECT_EQ(SuitePage::text(q.doc.select_node("//tr[@class='totals']/td").node()),
            "1 pass \u00b7 0 fail \u00b7 0 unsupportedown report right n/a");
}

TEST(Suite, FiltersByStackAndTagAreRadioButtonsAndCssOnly) {
  const SuitePage p(matrixSuite());
  const std::string style = p.doc.select_node("//head/style").node().child_value();
  // Stacks by their column index, "all" checked at first.
  EXPECT_STREQ(p.doc.select_node("//input[@id='st-all']").node().attribute("checked").value(), "checked");
  const std::vector<std::string> stacks = {"torchrun@2.13", "launch@2.13"};
  for (size_t i = 0; i < stacks.size(); ++i) {
    const std::string id = "st-" + std::to_string(i);
    const auto input = p.doc.select_node(("//input[@id='" + id + "']").c_str()).node();
    EXPECT_STREQ(input.attribute("type").value(), "radio");
    EXPECT_STREQ(input.attribute("name").value(), "stack");
    EXPECT_EQ(std::string(p.doc.select_node(("//label[@for='" + id + "']").c_str()).node().child_value()), stacks[i]);
    const std::string rule = "#" + id + ":checked ~ table .c:not(.c" + std::to_string(i) + "){display:none}";
    EXPECT_NE(style.find(rule), std::string::npos) << rule << "\n" << style;
  }
  // Tags sorted, by index; each row carries its tags' classes.
  const std::vector<std::string> tags = {kHostileName, "core", "gpu", "hang"};
  EXPECT_TRUE(p.doc.select_node("//input[@id='tg-all'][@name='tag'][@checked='checked']"));
  for (size_t i = 0; i < tags.size(); ++i) {
    const std::string id = "tg-" + std::to_string(i);
    EXPECT_TRUE(p.doc.select_node(("//input[@id='" + id + "'][@type='radio'][@name='tag']").c_str())) << id;
    EXPECT_EQ(std::string(p.doc.select_node(("//label[@for='" + id + "']").c_str()).node().child_value()), tags[i]);
    const std::string rule = "#" + id + ":checked ~ table tr.r:not(.t" + std::to_string(i) + "){display:none}";
    EXPECT_NE(style.find(rule), std::string::npos) << rule;
  }
  EXPECT_TRUE(p.doc.select_node("//tr[@class='r t1 t3'][th='alpha']"));
  EXPECT_TRUE(p.doc.select_node("//tr[@class='r t2'][th='beta']"));
  // The inputs come before the table: CSS's `~` reaches later siblings only.
  const auto table = p.doc.select_node("//table[@id='matrix']").node();
  EXPECT_EQ(p.doc.select_nodes("//table[@id='matrix']/preceding-sibling::input").size(), 2u + 1 + 4 + 1);
  EXPECT_EQ(table.parent(), p.doc.select_node("//input[@id='st-0']").node().parent());
  // No name reaches the stylesheet; no script anywhere, and the CSP forbids one.
  EXPECT_EQ(style.find("script"), std::string::npos) << style;
  EXPECT_EQ(style.find("torchrun"), std::string::npos);
  EXPECT_EQ(p.html.find("<script"), std::string::npos);
  EXPECT_NE(p.html.find("content=\"default-src 'none'; style-src 'unsafe-inline'\""), std::string::npos);
  // A suite without tags has no tag filter.
  Suite untagged;
  untagged.entries = {{"a", "builtin", "a", withVerdict(Verdict::kPass)}};
  EXPECT_EQ(htmlForSuite(untagged).find("name=\"tag\""), std::string::npos);
}

TEST(Suite, PageHasOnlyItsOwnMarkupForHostileNamesTagsAndReasons) {
  Suite s = matrixSuite();
  s.entries.push_back({allHostile(), allHostile(), "x", hostileEverywhere(), {allHostile()}});
  s.entries.push_back({"u", allHostile(), "u", unsupportedReport(allHostile()), {allHostile()}});
  const SuitePage p(s);
  EXPECT_TRUE(strictUtf8(p.html));
  EXPECT_TRUE(xmlCharsOnly(p.html));
  const std::set<std::string> allowed = {"html", "head", "meta", "title", "style", "body", "h1", "div", "span", "table",
                                         "tr", "td", "th", "a", "sup", "input", "label"};
  std::function<void(pugi::xml_node)> walk = [&](pugi::xml_node n) {
    for (auto c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      EXPECT_TRUE(allowed.count(c.name())) << "element <" << c.name() << "> in the page";
      for (auto a : c.attributes()) {
        EXPECT_NE(std::string(a.name()).rfind("on", 0), 0u) << "attribute " << a.name() << " on <" << c.name() << ">";
        EXPECT_NE(std::string(a.name()), "style") << "on <" << c.name() << ">";
      }
      walk(c);
    }
  };
  walk(p.doc);
  EXPECT_EQ(p.doc.select_nodes("//style").size(), 1u);
  EXPECT_EQ(p.html.find("<script"), std::string::npos);
  EXPECT_EQ(p.html.find("<img"), std::string::npos);
  // Names and tags are text: a label holds the tag as written.
  EXPECT_TRUE(p.doc.select_node("//label[@for='tg-0']"));
  bool found = false;
  for (auto l : p.doc.select_nodes("//label")) found = found || std::string(l.node().child_value()) == kHostileName;
  EXPECT_TRUE(found);
  const std::string line = SuitePage::text(p.cell(kHostileName, 0).select_node("div").node());
  EXPECT_EQ(line.rfind("rank 1: NameError: <script>", 0), 0u) << line;
}

TEST(XmlText, ShortLineCutsOnACharacterWithAnEllipsis) {
  EXPECT_EQ(shortLine("short", 80), "short");
  EXPECT_EQ(shortLine("first\nsecond", 80), "first");
  EXPECT_EQ(shortLine("\u00e9\u00e9\u00e9\u00e9", 3), "\u00e9\u00e9\u2026");
  EXPECT_EQ(shortLine("\u00e9\u00e9\u00e9", 3), "\u00e9\u00e9\u00e9");
  EXPECT_EQ(shortLine("ab\x01\xff", 80), "ab\ufffd");
}

TEST(Security, HtmlHasOnlyItsOwnMarkupForEveryHostileField) {
  const std::string html = htmlForRun(hostileEverywhere());
  EXPECT_TRUE(strictUtf8(html));
  EXPECT_TRUE(xmlCharsOnly(html));
  pugi::xml_document doc;
  const auto parsed = doc.load_string(html.substr(html.find("<html")).c_str());
  ASSERT_TRUE(parsed) << parsed.description();
  // Every element is one the renderer writes; no attribute is an event handler
  // and no link goes anywhere but a relative path.
  const std::set<std::string> allowed = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "div", "span", "table",
                                         "tr", "td", "th", "svg", "g", "text", "line", "circle", "rect", "polygon", "details",
                                         "summary", "pre", "a", "mark"};
  int elements = 0;
  std::function<void(pugi::xml_node)> walk = [&](pugi::xml_node n) {
    for (auto c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      ++elements;
      EXPECT_TRUE(allowed.count(c.name())) << "element <" << c.name() << "> in the page";
      for (auto a : c.attributes()) {
        EXPECT_NE(std::string(a.name()).rfind("on", 0), 0u) << "attribute " << a.name() << " on <" << c.name() << ">";
      }
      walk(c);
    }
  };
  walk(doc);
  EXPECT_GT(elements, 50);
  // The hostile text is there, as text: the root cause and a stack dump read it back literally.
  const std::string cause = doc.select_node("//div[@id='root-cause']").node().child_value();
  EXPECT_NE(cause.find("</script><script>document.title='pwned'</script>"), std::string::npos) << cause;
  EXPECT_NE(cause.find("<img src=x onerror=\"document.title='pwned'\">"), std::string::npos);
  // (An XML parser reads CR LF and CR as LF.)
  std::string title = "faultline: " + stripForbidden(allHostile());
  for (size_t at; (at = title.find("\r\n")) != std::string::npos;) title.erase(at, 1);
  std::replace(title.begin(), title.end(), '\r', '\n');
  EXPECT_EQ(doc.select_node("//title").node().child_value(), title);
  const std::string dump = doc.select_node("//pre[@class='stacks']").node().child_value();
  EXPECT_NE(dump.find("]]><!-- --><![CDATA["), std::string::npos);
  EXPECT_NE(html.find(std::string(100000, 'A')), std::string::npos) << "a very long field was cut";
}

TEST(Security, SuiteLinksCannotCarryAScheme) {
  Suite s;
  s.entries = {{allHostile(), allHostile(), "javascript:alert(1)//", hostileEverywhere()}};
  const std::string html = htmlForSuite(s);
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(html.substr(html.find("<html")).c_str()));
  const std::string href = doc.select_node("//a").node().attribute("href").value();
  EXPECT_EQ(href, "javascript%3Aalert%281%29//" "/report.html");
  const std::string md = markdownForSuite(s);
  EXPECT_NE(md.find("](javascript%3Aalert%281%29///report.md)"), std::string::npos) << md;
  EXPECT_FALSE(hasMarkdownLinkTo(md, "javascript:")) << md;
}

TEST(Security, JunitIsValidXmlWithTheHostileTextAsData) {
  const std::string xml = junitForRun(hostileEverywhere());
  EXPECT_TRUE(strictUtf8(xml));
  EXPECT_TRUE(xmlCharsOnly(xml));
  pugi::xml_document doc;
  const auto parsed = doc.load_string(xml.c_str());
  ASSERT_TRUE(parsed) << parsed.description();
  auto suite = doc.child("testsuites").child("testsuite");
  const std::string name = suite.attribute("name").value();
  EXPECT_NE(name.find("]]><!-- --><![CDATA["), std::string::npos) << name;
  EXPECT_NE(name.find("\"'&amp;&"), std::string::npos) << name;
  const std::string out = suite.child("testcase").child("system-out").child_value();
  EXPECT_NE(out.find("</script><script>"), std::string::npos);
  EXPECT_NE(out.find("$(touch /tmp/fl-pwned)"), std::string::npos);
}

TEST(Security, MarkdownRowsStayRowsAndFencesStayClosed) {
  const std::string md = markdownForRun(hostileEverywhere());
  EXPECT_TRUE(strictUtf8(md));
  for (unsigned char c : md) EXPECT_FALSE(c < 0x20 && c != '\n' && c != '\t') << "control byte " << int(c);
  std::istringstream in(md);
  bool in_fence = false;
  std::string fence;
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (!in_fence && line.rfind("```", 0) == 0) {
      in_fence = true;
      fence = line.substr(0, line.find_first_not_of('`'));
      continue;
    }
    if (in_fence) {
      if (line == fence) in_fence = false;
      continue;
    }
    // Outside fences: no raw HTML of the trainer's, no link, no forged row.
    EXPECT_EQ(line.find("<script"), std::string::npos) << line;
    EXPECT_EQ(line.find("<img"), std::string::npos) << line;
    EXPECT_FALSE(hasMarkdownLinkTo(line, "javascript:")) << line;
    EXPECT_NE(line.rfind("| forged", 0), 0u) << line;
    if (line.rfind("| ", 0) != 0) continue;
    ++rows;
    // Unescaped pipes: as many as the table's header has.
    int pipes = 0;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '\\') {
        ++i;
      } else if (line[i] == '|') {
        ++pipes;
      }
    }
    // 2, 4 or 6 columns: the layers, the findings (kind .. fix), the expectations.
    EXPECT_TRUE(pipes == 3 || pipes == 5 || pipes == 7) << pipes << " cells in: " << line.substr(0, 200);
  }
  EXPECT_FALSE(in_fence) << "a fence was left open";
  EXPECT_GT(rows, 6);
}

}  // namespace
}  // namespace faultline::reports

namespace faultline::reports {
namespace {

// The Trace Event format's required fields (the "JSON Object Format" and each
// phase's own: X needs dur, i a scope of g/p/t, M a name and args), checked
// event by event, as Perfetto's and chrome://tracing's importers read them.
void expectValidTrace(const nlohmann::json& t) {
  ASSERT_TRUE(t.is_object());
  ASSERT_TRUE(t.contains("traceEvents") && t["traceEvents"].is_array());
  EXPECT_EQ(t.value("displayTimeUnit", ""), "ms");
  for (const auto& ev : t["traceEvents"]) {
    SCOPED_TRACE(ev.dump());
    ASSERT_TRUE(ev.is_object());
    ASSERT_TRUE(ev.contains("ph") && ev["ph"].is_string());
    ASSERT_TRUE(ev.contains("name") && ev["name"].is_string());
    ASSERT_TRUE(ev.contains("pid") && ev["pid"].is_number_integer());
    ASSERT_TRUE(ev.contains("tid") && ev["tid"].is_number_integer());
    const std::string ph = ev["ph"];
    if (ph == "M") {
      EXPECT_TRUE(ev.contains("args") && ev["args"].is_object());
      continue;
    }
    ASSERT_TRUE(ev.contains("ts") && ev["ts"].is_number()) << "every non-metadata event has a timestamp";
    EXPECT_GE(ev["ts"].get<double>(), 0);
    if (ph == "X") {
      ASSERT_TRUE(ev.contains("dur") && ev["dur"].is_number());
      EXPECT_GE(ev["dur"].get<double>(), 0);
    } else if (ph == "i") {
      ASSERT_TRUE(ev.contains("s"));
      EXPECT_NE(std::string("gpt").find(ev["s"].get<std::string>()), std::string::npos);
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
}

Report spannedReport() {
  Report r = hostileReport();
  r.timeline = {{1.0, 0, "started (pid 10)", TimelineKind::kStart},
                {1.2, 1, "started (pid 11)", TimelineKind::kStart},
                {30.0, 1, "fault hung_collective injected at step 2", TimelineKind::kFault},
                {5030.0, std::nullopt, "first trigger: hang: rank 1 missing", TimelineKind::kTrigger},
                {5040.0, std::nullopt, "SIGTERM to 2 process(es)", TimelineKind::kSignal}};
  r.spans = {{0, "step", "step 1", 1, 10.0, 8.0, -1, ""},
             {0, "collective", "allreduce", 1, 12.0, 3.0, 2048, "float32"},
             {1, "step", "step 1", 1, 10.5, 7.5, -1, ""},
             {1, "collective", "allreduce", 1, 12.5, 2.5, 2048, "float32"},
             {0, "collective", "allreduce", 2, 20.0, std::nullopt, 2048, "float32"}};
  return r;
}

TEST(Trace, HasTheFormatsRequiredFieldsOneProcessPerRankAndAHarnessLane) {
  const nlohmann::json t = traceForRun(spannedReport());
  expectValidTrace(t);
  std::map<int, std::string> processes;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "process_name") processes[ev["pid"]] = ev["args"]["name"];
  }
  EXPECT_EQ(processes.size(), 3u);
  EXPECT_EQ(processes[0], "faultline (harness)");
  EXPECT_EQ(processes[1], "rank 0");
  EXPECT_EQ(processes[2], "rank 1");
}

TEST(Trace, StepsAndCollectivesAreCompleteEventsAndAHungOneRunsToTheEnd) {
  const nlohmann::json t = traceForRun(spannedReport());
  std::vector<nlohmann::json> complete;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] == "X") complete.push_back(ev);
  }
  ASSERT_EQ(complete.size(), 5u);
  const auto hung = std::find_if(complete.begin(), complete.end(), [](const nlohmann::json& ev) {
    return ev["args"]["ended"] == false;
  });
  ASSERT_NE(hung, complete.end());
  EXPECT_EQ((*hung)["name"], "allreduce #2 (never ended)");
  EXPECT_EQ((*hung)["cat"], "collective");
  EXPECT_EQ((*hung)["pid"], 1);                             // rank 0
  EXPECT_DOUBLE_EQ((*hung)["ts"].get<double>(), 20000.0);  // microseconds
  EXPECT_DOUBLE_EQ((*hung)["dur"].get<double>(), (5040.0 - 20.0) * 1000);  // to the last mark
  EXPECT_EQ((*hung)["args"]["numel"], 2048);
  // Steps and collectives on their own threads, so neither has to nest in the other.
  std::set<std::pair<std::string, int>> threads;
  for (const auto& ev : complete) threads.insert({ev["cat"].get<std::string>(), ev["tid"].get<int>()});
  EXPECT_EQ(threads, (std::set<std::pair<std::string, int>>{{"collective", 2}, {"step", 1}}));
}

TEST(Trace, MarksAreInstantsWithTheirKindAndHostileTextStaysData) {
  Report r = spannedReport();
  r.timeline.push_back({40.0, 1, kHostile, TimelineKind::kFailure});
  const nlohmann::json t = traceForRun(r);
  expectValidTrace(t);
  int instants = 0;
  bool hostile = false;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] != "i") continue;
    ++instants;
    EXPECT_EQ(ev["cat"], ev["args"]["kind"]);
    if (ev["args"]["kind"] == "trigger" || ev["args"]["kind"] == "signal") {
      EXPECT_EQ(ev["pid"], 0);  // harness lane
    }
    if (ev["name"] == kHostile) hostile = ev["pid"] == 2 && ev["cat"] == "failure";
  }
  EXPECT_EQ(instants, 6);
  EXPECT_TRUE(hostile);
  // The file as written is one JSON document that parses back to the same value.
  EXPECT_EQ(nlohmann::json::parse(jsonText(t)), t);
}

TEST(Trace, ReportRoundTripKeepsSpansAndTimelineKinds) {
  const Report r = spannedReport();
  auto back = reportFromJson(toJson(r));
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->spans.size(), r.spans.size());
  EXPECT_FALSE(back->spans.back().dur_ms.has_value());
  EXPECT_EQ(back->spans[1].numel, 2048);
  EXPECT_EQ(back->spans[1].dtype, "float32");
  ASSERT_EQ(back->timeline.size(), r.timeline.size());
  EXPECT_EQ(back->timeline[3].kind, TimelineKind::kTrigger);
  // A report written before timeline kinds reads each mark as a note.
  nlohmann::json old = toJson(r);
  for (auto& t : old["timeline"]) t.erase("kind");
  old.erase("spans");
  auto older = reportFromJson(old);
  ASSERT_TRUE(older);
  EXPECT_EQ(older->timeline[0].kind, TimelineKind::kNote);
  EXPECT_TRUE(older->spans.empty());
}

}  // namespace
}  // namespace faultline::reports

namespace faultline::reports {
namespace {

// Multi-node (docs/MULTINODE.md): ranks 0-1 on n1, 2-3 on n2, n2 lost.
Report multiNodeReport() {
  Report r;
  r.stack = {"torchrun-multinode", {"torchrun"}, 4, "2.13.0+cpu"};
  RootCause rc;
  rc.kind = Kind::kNodeLost;
  rc.node = "n2";
  rc.blame = Blame::kNode;
  rc.ranks = {2, 3};
  rc.summary = "node n2 lost at t=4.2 s (every process of it killed at once): its ranks 2-3 lost";
  r.root_cause = rc;
  for (int k = 0; k < 4; ++k) {
    RankReport rk;
    rk.rank = k;
    rk.role = k < 2 ? RankRole::kCollateral : RankRole::kLost;
    rk.diagnosis = k < 2 ? "Connection closed by peer" : "lost with node n2: killed by SIGKILL";
    rk.node = k < 2 ? "n1" : "n2";
    rk.host = k < 2 ? "h1" : "h2";
    r.ranks.push_back(rk);
  }
  NodeReport n1{"n1", "h1", {0, 1}, false, std::nullopt, {}, 1};
  NodeReport n2{"n2", "h2", {2, 3}, true, std::nullopt, {}, std::nullopt};
  r.nodes = {n1, n2};
  r.timeline = {{10, 0, "started", TimelineKind::kStart}, {4200, std::nullopt, "root cause: node n2 lost", TimelineKind::kRootCause}};
  r.spans = {{2, "step", "step 1", 1, 100, 50, -1, ""}};
  r.verdict = Verdict::kDiagnosed;
  return r;
}

TEST(MultiNode, ReportJsonRoundTripsNodesAndRankNodes) {
  const Report r = multiNodeReport();
  const nlohmann::json j = toJson(r);
  ASSERT_TRUE(j.contains("nodes"));
  EXPECT_EQ(j["nodes"][1]["name"], "n2");
  EXPECT_EQ(j["nodes"][1]["lost"], true);
  EXPECT_TRUE(j["nodes"][1]["agent_exit_code"].is_null());
  EXPECT_EQ(j["ranks"][2]["node"], "n2");
  EXPECT_EQ(j["ranks"][2]["host"], "h2");
  EXPECT_EQ(j["ranks"][2]["role"], "lost");
  EXPECT_EQ(j["root_cause"]["node"], "n2");
  EXPECT_EQ(j["root_cause"]["kind"], "node_lost");
  EXPECT_EQ(j["root_cause"]["blame"], "node");
  auto back = reportFromJson(j);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(toJson(*back), j);
  EXPECT_FALSE(back->extra.contains("nodes"));
  // One node: no node fields at all.
  const nlohmann::json single = toJson(hostileReport());
  EXPECT_FALSE(single.contains("nodes"));
  EXPECT_FALSE(single["ranks"][0].contains("node"));
  EXPECT_FALSE(single["root_cause"].contains("node"));
}

TEST(MultiNode, HtmlGroupsLanesByNodeAndMarksLostRanks) {
  const std::string html = htmlForRun(multiNodeReport());
  const size_t n1 = html.find("class=\"node-lane\" data-node=\"n1\"");
  const size_t n2 = html.find("class=\"node-lane lost\" data-node=\"n2\"");
  ASSERT_NE(n1, std::string::npos);
  ASSERT_NE(n2, std::string::npos);
  EXPECT_NE(html.find("node n2 (h2) \u2014 lost"), std::string::npos);
  EXPECT_NE(html.find("class=\"lane lost\" data-rank=\"2\" data-node=\"n2\""), std::string::npos);
  EXPECT_NE(html.find("rank 2 (lost)"), std::string::npos);
  EXPECT_NE(html.find("<table id=\"nodes\">"), std::string::npos);
  EXPECT_NE(html.find("rank 3 on n2"), std::string::npos);
  // A single-node report draws no node lane.
  EXPECT_EQ(htmlForRun(hostileReport()).find("node-lane"), std::string::npos);
}

TEST(MultiNode, TraceNamesEachRankByItsNodeAndSortsThemTogether) {
  const nlohmann::json t = traceForRun(multiNodeReport());
  expectValidTrace(t);
  std::map<int, std::string> names, labels;
  std::map<int, int> sort;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] != "M") continue;
    if (ev["name"] == "process_name") names[ev["pid"]] = ev["args"]["name"];
    if (ev["name"] == "process_labels") labels[ev["pid"]] = ev["args"]["labels"];
    if (ev["name"] == "process_sort_index") sort[ev["pid"]] = ev["args"]["sort_index"];
  }
  EXPECT_EQ(names[1], "rank 0 (n1)");
  EXPECT_EQ(names[3], "rank 2 (n2) lost");
  EXPECT_EQ(labels[3], "node n2, host h2");
  EXPECT_LT(sort[2], sort[3]);  // n1's ranks before n2's
  EXPECT_LT(sort[0], sort[1]);  // the harness first
}

TEST(MultiNode, MarkdownListsNodesThenRanksByNode) {
  const std::string md = markdownForRun(multiNodeReport());
  const size_t nodes = md.find("### Nodes");
  const size_t by_node = md.find("### Ranks by node");
  ASSERT_NE(nodes, std::string::npos);
  ASSERT_NE(by_node, std::string::npos);
  EXPECT_NE(md.find("| n2 | h2 | 2,3 | **lost** | none (agent gone) |"), std::string::npos);
  EXPECT_LT(md.find("| n1 | 0 |"), md.find("| n2 | 2 | lost |"));
  EXPECT_EQ(markdownForRun(hostileReport()).find("### Nodes"), std::string::npos);
}

}  // namespace
}  // namespace faultline::reports
