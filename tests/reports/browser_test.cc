// The HTML reports in a real browser: headless Chromium loads the report of a
// real hung-collective run and of a suite; the DOM must show the root-cause
// summary and one timeline lane per rank, and a screenshot is taken.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "reports/xml_text.h"

namespace faultline::reports {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kChromium = "/usr/bin/chromium";

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
    if (::access(kChromium, X_OK) != 0) GTEST_SKIP() << "unsupported: " << kChromium << " is not installed (ci/deps installs it)";
    ASSERT_EQ(suite_status_, 0) << slurp(dir_ / "suite.log");
  }
  std::string dumpDom(const fs::path& page) {
    const fs::path out = dir_ / (page.stem().string() + ".dom");
    const std::string cmd = chromium(dir_ / "profile") + " --dump-dom file://" + page.string() + " > " + out.string() +
                            " 2>/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return slurp(out);
  }
  static fs::path dir_;
  static int suite_status_;
};

fs::path Browser::dir_;
int Browser::suite_status_ = -1;

TEST_F(Browser, RunReportShowsRootCauseAndOneLanePerRank) {
  const fs::path run = dir_ / "suite" / "hung-collective";
  const auto report = nlohmann::json::parse(slurp(run / "report.json"));
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
  // A screenshot, for people.
  const fs::path png = dir_ / "hung-collective.png";
  const std::string cmd = chromium(dir_ / "profile") + " --window-size=1280,1000 --screenshot=" + png.string() +
                          " file://" + (run / "report.html").string() + " > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 10'000u);
  if (const char* keep = std::getenv("FAULTLINE_SCREENSHOT_DIR")) fs::copy_file(png, fs::path(keep) / png.filename(), fs::copy_options::overwrite_existing);
}

TEST_F(Browser, SuitePageListsAndLinksEachScenario) {
  const std::string dom = dumpDom(dir_ / "suite" / "index.html");
  EXPECT_NE(dom.find("<table id=\"scenarios\">"), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("<a href=\"hung-collective/report.html\">hung-collective</a>"), std::string::npos);
  EXPECT_NE(dom.find("v-pass"), std::string::npos);
}

}  // namespace
}  // namespace faultline::reports
