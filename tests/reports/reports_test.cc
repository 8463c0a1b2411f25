// Renderers: JUnit parses as XML with the structure CI servers read, and all
// trainer-controlled text is escaped in every format.
#include "reports/render.h"

#include <gtest/gtest.h>
#include <pugixml.hpp>

#include "reports/xml_text.h"

namespace faultline::reports {
namespace {

const std::string kHostile = "<script>alert(1)</script> & \"quotes\" \x01\x0b bell\x07 ```\n| pipe";

Report hostileReport() {
  Report r;
  r.scenario = ScenarioRef{"name-error <b>", "s.toml"};
  r.stack = {"torchrun", {"torchrun"}, 2};
  RootCause rc;
  rc.kind = Kind::kPythonException;
  rc.rank = 1;
  rc.summary = "rank 1: NameError: " + kHostile;
  rc.layers = {{"launcher", "ChildFailedError " + kHostile}, {"error", "NameError"}};
  r.root_cause = rc;
  r.ranks = {{0, 10, 1, std::nullopt, RankRole::kCollateral, "peer closed", kHostile},
             {1, 11, 1, std::nullopt, RankRole::kRootCause, kHostile, "Traceback...\n" + kHostile}};
  r.findings = {{Kind::kStraggler, {1}, "warning", kHostile, kHostile}};
  r.expectations = {{"root_cause.rank", 1, 1, true, "pass", ""},
                    {"root_cause.kind", "python_exception", kHostile, false, "fail", ""},
                    {"teardown.clean", nlohmann::json{{"max", 1}}, true, false, "unresolved", "needs a number"}};
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

TEST(Junit, SuiteHasOneTestsuitePerScenario) {
  Suite s;
  s.entries = {{"a", "builtin", "a", hostileReport()}, {"b", "torchrun", "b", hostileReport()}};
  s.entries[1].report.verdict = Verdict::kUnsupported;
  s.entries[1].report.extra["unsupported_reason"] = "no python";
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
  EXPECT_NE(htmlForRun(dumped).find("<pre class=\"stacks\">Thread 1 &lt;main&gt;"), std::string::npos);
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

TEST(Suite, JsonCountsAndHeadlines) {
  Suite s;
  s.entries = {{"a", "builtin", "a", hostileReport()}};
  s.entries[0].report.verdict = Verdict::kPass;
  auto j = suiteJson(s);
  EXPECT_EQ(j["schema"], "faultline.suite/1");
  EXPECT_EQ(j["counts"]["pass"], 1);
  EXPECT_EQ(j["scenarios"][0]["root_cause_rank"], 1);
  EXPECT_EQ(j["scenarios"][0]["expectations_failed"], 2);
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
  EXPECT_NE(md.find("| torchrun | 1 | 0 | 1 | 0 | 0 |"), std::string::npos);
}

}  // namespace
}  // namespace faultline::reports
