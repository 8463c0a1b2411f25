// The HTML reports in a real browser: headless Chromium loads the report of a
// real hung-collective run and of a suite; the DOM must show the root-cause
// summary and one timeline lane per rank, and a screenshot is taken. And a
// report with markup in every field, re-rendered by `faultline report`, runs
// no script even with its Content-Security-Policy taken out.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "reports/xml_text.h"
#include "tests/support/files.h"

namespace faultline::reports {
namespace {

namespace fs = std::filesystem;

using faultline::testing::readFile;

const char* kChromium = "/usr/bin/chromium";

std::string shellQuoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Headless Chromium as root on a closed network: no sandbox, no background
// networking, a fresh profile (the flags the machine's notes say work).
std::string chromium(const fs::path& profile) {
  return std::string(kChromium) + " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
         profile.string();
}

class Browser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#ifndef FL_HAVE_TRAINER
    return;  // SetUp skips every test
#endif
    if (::access(kChromium, X_OK) != 0) return;
    dir_ = fs::temp_directory_path() / ("fl_browser_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // One real run through the whole pipeline: a suite of the hung-collective scenario.
    const std::string cmd = std::string(FL_FAULTLINE) + " suite " FL_SOURCE_DIR "/scenarios/reference/hung-collective.toml -o " +
                            (dir_ / "suite").string() + " > " + (dir_ / "suite.log").string() + " 2>&1";
    suite_status_ = std::system(cmd.c_str());
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
#ifndef FL_HAVE_TRAINER
    GTEST_SKIP() << "unsupported: faultline-trainer is not built (FAULTLINE_BUILD_TRAINER=OFF)";
#endif
    if (::access(kChromium, X_OK) != 0) GTEST_SKIP() << "unsupported: " << kChromium << " is not installed (ci/deps installs it)";
    ASSERT_EQ(suite_status_, 0) << readFile(dir_ / "suite.log");
  }
  std::string dumpDom(const fs::path& page) {
    const fs::path out = dir_ / (page.stem().string() + ".dom");
    const std::string cmd = chromium(dir_ / "profile") + " --dump-dom file://" + page.string() + " > " + out.string() +
                            " 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return readFile(out);
  }
  static fs::path dir_;
  static int suite_status_;
};

fs::path Browser::dir_;
int Browser::suite_status_ = -1;

TEST_F(Browser, RunReportShowsRootCauseAndOneLanePerRank) {
  const fs::path run = dir_ / "suite" / "hung-collective";
  const auto report = nlohmann::json::parse(readFile(run / "report.json"));
  ASSERT_FALSE(report["root_cause"].is_null());
  const std::string summary = report["root_cause"]["summary"];
  const std::string dom = dumpDom(run / "report.html");
  // The root cause is the first thing on the page, as the browser parsed it.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<div id=\"root-cause\" class=\"cause\">([^<]*)</div>"))) << dom.substr(0, 2000);
  EXPECT_EQ(m[1].str(), escapeXml(summary));
  EXPECT_LT(dom.find("id=\"root-cause\""), dom.find("id=\"timeline\""));
  // One timeline lane per rank.
  const int world = report["stack"]["world_size"];
  int lanes = 0;
  const std::regex lane("<g class=\"lane\" data-rank=\"(\\d+)\">");
  for (std::sregex_iterator it(dom.begin(), dom.end(), lane), end; it != end; ++it) {
    EXPECT_EQ(std::stoi((*it)[1].str()), lanes);
    ++lanes;
  }
  EXPECT_EQ(lanes, world);
  // A legend, and steps and collectives drawn as bars; the hung collective's
  // waiting ranks have a bar that never ended, the missing rank none.
  EXPECT_NE(dom.find("<div id=\"legend\" class=\"legend\">"), std::string::npos);
  EXPECT_NE(dom.find("class=\"span step\""), std::string::npos);
  EXPECT_NE(dom.find("class=\"span collective\""), std::string::npos);
  const auto& waiting = report["root_cause"]["waiting_ranks"];
  ASSERT_FALSE(waiting.empty());
  int open_bars = 0;
  for (std::string::size_type at = 0; (at = dom.find("class=\"span collective open\"", at)) != std::string::npos; ++at) {
    ++open_bars;
  }
  EXPECT_EQ(open_bars, static_cast<int>(waiting.size()));
  // Every mark links to its row of the events table, which exists.
  EXPECT_NE(dom.find("<a href=\"#ev-0\" class=\"mark\""), std::string::npos);
  EXPECT_NE(dom.find("<tr id=\"ev-0\">"), std::string::npos);
  // The root cause links to its evidence: the rank's stderr (cause marked) and stack dump.
  const int root = report["root_cause"]["rank"];
  const std::string stderr_id = "rank-" + std::to_string(root) + "-stderr";
  EXPECT_NE(dom.find("href=\"#" + stderr_id + "\""), std::string::npos);
  EXPECT_NE(dom.find("id=\"" + stderr_id + "\""), std::string::npos);
  if (report.contains("stack_dumps") && report["stack_dumps"].contains(std::to_string(root))) {
    EXPECT_NE(dom.find("id=\"rank-" + std::to_string(root) + "-stacks\""), std::string::npos);
  }
  // Screenshots at two widths, for people.
  for (const char* size : {"1280,1000", "760,1000"}) {
    const fs::path png = dir_ / ("hung-collective-" + std::string(size).substr(0, std::string(size).find(',')) + ".png");
    const std::string cmd = chromium(dir_ / "profile") + " --window-size=" + size + " --screenshot=" + png.string() +
                            " file://" + (run / "report.html").string() + " > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    ASSERT_TRUE(fs::exists(png));
    EXPECT_GT(fs::file_size(png), 10'000u);
    if (const char* keep = std::getenv("FAULTLINE_SCREENSHOT_DIR")) {
      fs::copy_file(png, fs::path(keep) / png.filename(), fs::copy_options::overwrite_existing);
    }
  }
}

TEST_F(Browser, TraceJsonOfARealRunHasEveryRankAndItsSpans) {
  const fs::path run = dir_ / "suite" / "hung-collective";
  const auto report = nlohmann::json::parse(readFile(run / "report.json"));
  const auto trace = nlohmann::json::parse(readFile(run / "trace.json"));
  std::set<int> pids;
  int complete = 0, never_ended = 0;
  for (const auto& ev : trace["traceEvents"]) {
    pids.insert(ev["pid"].get<int>());
    if (ev["ph"] == "X") {
      ++complete;
      never_ended += ev["cat"] == "collective" && ev["args"]["ended"] == false;
    }
  }
  EXPECT_EQ(static_cast<int>(pids.size()), report["stack"]["world_size"].get<int>() + 1);  // + the harness
  EXPECT_EQ(complete, static_cast<int>(report["spans"].size()));
  EXPECT_EQ(never_ended, static_cast<int>(report["root_cause"]["waiting_ranks"].size()));  // the waiting ranks' collective
}

TEST_F(Browser, SuitePageListsAndLinksEachScenario) {
  const std::string dom = dumpDom(dir_ / "suite" / "index.html");
  // The stack x scenario matrix: a row per scenario, a column per stack, the cell linking to the run.
  EXPECT_NE(dom.find("<table id=\"matrix\">"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("<th class=\"scenario\">hung-collective</th>"), std::string::npos);
  EXPECT_NE(dom.find("<a href=\"hung-collective/report.html\"><span class=\"verdict v-pass\" title=\"pass\">\u2713</span></a>"),
            std::string::npos);
}

// --- hostile text in every field --------------------------------------------------

// Each payload would change document.title if the browser ran it.
const char* kPayload =
    "</script><script>document.title='pwned-script'</script>"
    "<img src=x onerror=\"document.title='pwned-img'\">"
    "<svg onload=\"document.title='pwned-svg'\"></svg>"
    "<a href=\"javascript:document.title='pwned-href'\">x</a>"
    "<iframe srcdoc=\"<script>parent.document.title='pwned-frame'</script>\"></iframe>"
    "]]> \"'& \xe2\x80\xa8 \x01\x1b[31m \xed\xa0\x80 | row\n| forged |";

Report hostileReport() {
  const std::string h = kPayload;
  Report r;
  r.scenario = ScenarioRef{h, h};
  r.stack = {h, {h}, 2, h};
  RootCause rc;
  rc.kind = Kind::kPythonException;
  rc.rank = 1;
  rc.summary = "rank 1: " + h;
  rc.exception_type = h;
  rc.message = h;
  rc.location = Location{h, 3};
  rc.layers = {{h, h}, {"error", h}};
  r.root_cause = rc;
  r.ranks = {{0, 10, std::nullopt, "SIGTERM", RankRole::kCollateral, h, h}, {1, 11, 1, std::nullopt, RankRole::kRootCause, h, h}};
  r.findings = {{Kind::kStraggler, {1}, h, h, h}};
  r.teardown.survivors = {{12, h}};
  r.teardown.leaks = {h};
  r.expectations = {{h, h, h, false, ExpectationStatus::kFail, h}};
  r.timeline = {{1.0, 0, h}, {2.0, 1, h}, {3.0, std::nullopt, h}};
  r.verdict = Verdict::kFail;
  r.extra["stack_dumps"]["1"] = h;
  r.harness = {h, 1};
  return r;
}

class HostileBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kChromium, X_OK) != 0) GTEST_SKIP() << "unsupported: " << kChromium << " is not installed (ci/deps installs it)";
    dir_ = fs::temp_directory_path() / ("fl_browser_hostile_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // The DOM after the page loaded and ran whatever it would run.
  std::string dumpDom(const fs::path& page) {
    const fs::path out = dir_ / (page.filename().string() + ".dom");
    const std::string cmd = chromium(dir_ / "profile") + " --dump-dom " + shellQuoted("file://" + page.string()) + " > " +
                            shellQuoted(out) + " 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return readFile(out);
  }
  static std::string title(const std::string& dom) {
    std::smatch m;
    return std::regex_search(dom, m, std::regex("<title>([^<]*)</title>")) ? m[1].str() : "<no title>";
  }
  // The same page without its Content-Security-Policy: escaping alone must hold.
  fs::path withoutCsp(const fs::path& page) {
    std::string html = readFile(page);
    const size_t at = html.find("<meta http-equiv=\"Content-Security-Policy\"");
    EXPECT_NE(at, std::string::npos);
    if (at != std::string::npos) html.erase(at, html.find("/>", at) + 2 - at);
    const fs::path out = page.parent_path() / ("nocsp-" + page.filename().string());
    std::ofstream(out) << html;
    return out;
  }
  // Nothing ran, nothing of the payload became an element, and the text shows literally.
  void expectInert(const std::string& dom, const std::string& expected_title_start) {
    EXPECT_EQ(title(dom).rfind(expected_title_start, 0), 0u) << "title is now: " << title(dom);
    // In the serialized DOM a "<" of text is "&lt;": a literal "<" opens a real element.
    for (const char* tag : {"<script", "<img", "<iframe"}) {
      EXPECT_EQ(dom.find(tag), std::string::npos) << tag << " in the DOM: " << dom.substr(dom.find(tag) > 200 ? dom.find(tag) - 200 : 0, 400);
    }
    // Attribute names only: a title (the suite page's hover text) holds the
    // payload as data, and the serializer quotes every value with '"' inside it as &quot;.
    EXPECT_FALSE(std::regex_search(
        dom, std::regex("<[a-zA-Z][a-zA-Z0-9-]*(\\s+[^\\s=>/\"]+(=\"[^\"]*\")?)*\\s+on[a-z]+\\s*=")))
        << "an element with an event handler";
    EXPECT_FALSE(std::regex_search(dom, std::regex("<a\\s[^>]*href\\s*=\\s*\"javascript:"))) << "a javascript: link";
    EXPECT_NE(dom.find("&lt;img src=x onerror=\"document.title='pwned-img'\"&gt;"), std::string::npos) << dom.substr(0, 3000);
  }
  fs::path dir_;
};

TEST_F(HostileBrowser, DetectsAScriptThatRuns) {
  // The check below is live: a page that does run a script shows it in the dumped title.
  const fs::path control = dir_ / "control.html";
  std::ofstream(control) << "<!DOCTYPE html><html><head><title>t</title></head><body>"
                            "<script>document.title='pwned-control'</script></body></html>";
  EXPECT_EQ(title(dumpDom(control)), "pwned-control");
}

TEST_F(HostileBrowser, ReRenderedRunReportRunsNoScript) {
  const fs::path run = dir_ / "run";
  fs::create_directories(run);
  ASSERT_TRUE(writeReport(hostileReport(), (run / "report.json").string()));
  const std::string cmd = std::string(FL_FAULTLINE) + " report " + shellQuoted(run) + " > " + shellQuoted(dir_ / "log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << readFile(dir_ / "log");
  const std::string dom = dumpDom(run / "report.html");
  expectInert(dom, "faultline: &lt;/script&gt;");
  // The root cause reads as the text the trainer wrote (controls and the surrogate replaced).
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<div id=\"root-cause\" class=\"cause\">([^<]*)</div>")));
  EXPECT_NE(m[1].str().find("&lt;/script&gt;&lt;script&gt;document.title='pwned-script'&lt;/script&gt;"), std::string::npos)
      << m[1].str();
  expectInert(dumpDom(withoutCsp(run / "report.html")), "faultline: &lt;/script&gt;");
}

TEST_F(HostileBrowser, SuitePageRunsNoScriptAndLinksNoScheme) {
  // A run directory named like a javascript: URL is a relative path on disk;
  // the link to it must stay one.
  const fs::path suite = dir_ / "suite";
  const std::string run_dir = "javascript:document.title='pwned-link'";
  fs::create_directories(suite / run_dir);
  ASSERT_TRUE(writeReport(hostileReport(), (suite / run_dir / "report.json").string()));
  const nlohmann::json j = {{"schema", "faultline.suite/1"},
                            {"scenarios", {{{"name", kPayload}, {"stack", kPayload}, {"run_dir", run_dir}}}},
                            {"wall_ms", 1}};
  std::ofstream(suite / "report.json") << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::string cmd = std::string(FL_FAULTLINE) + " report " + shellQuoted(suite) + " > " + shellQuoted(dir_ / "log") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << readFile(dir_ / "log");
  for (const fs::path& page : {suite / "index.html", withoutCsp(suite / "index.html")}) {
    const std::string dom = dumpDom(page);
    expectInert(dom, "faultline suite");
    EXPECT_NE(dom.find("href=\"javascript%3Adocument.title%3D%27pwned-link%27/report.html\""), std::string::npos)
        << dom.substr(0, 3000);
  }
}

}  // namespace
}  // namespace faultline::reports
