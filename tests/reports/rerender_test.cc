// `faultline report RUN_DIR` over a hostile report.json: shell syntax, format
// strings and markup in every field execute nothing, and the renderers read
// report.json alone (checked under strace: one execve, no child process, no
// other file of the run opened, writes only to the three reports).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/test_scale.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

using faultline::testing::readFile;

// Runs argv directly (no shell between the test and the hostile paths); the
// exit code, or -1 when it did not exit.
int run(const std::vector<std::string>& args, const fs::path& log) {
  testing::SpawnOptions o;
  o.argv = args;
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::runChild(o).code();
}

class ReRender : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fl_rerender_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    run_ = dir_ / "run";
    fs::create_directories(run_ / "ranks" / "1");
    // A rank log beside the report: re-rendering must not read it.
    std::ofstream(run_ / "ranks" / "1" / "stderr") << "Traceback: from the log, not from report.json\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Each payload would create dir_/pwned-<n> if any shell, format or template engine ran it.
  std::string payload() const {
    const std::string p = (dir_ / "pwned").string();
    return "$(touch " + p + "-1) `touch " + p + "-2` ; touch " + p + "-3 ; | touch " + p + "-4 && touch " + p +
           "-5 %s%s%n%x {{7*7}} ${HOME} '\"; exec touch " + p + "-6 #</script><img src=x onerror=alert(1)>";
  }

  void writeHostileReport() const {
    const std::string h = payload();
    Report r;
    r.scenario = ScenarioRef{h, h};
    r.stack = {h, {"/bin/sh", "-c", "touch " + (dir_ / "pwned-7").string()}, 2, ""};
    RootCause rc;
    rc.kind = Kind::kPythonException;
    rc.rank = 1;
    rc.summary = h;
    rc.exception_type = h;
    rc.message = h;
    rc.location = Location{h, 1};
    rc.layers = {{h, h}};
    r.root_cause = rc;
    r.ranks = {{0, 1, 0, std::nullopt, RankRole::kClean, h, h}, {1, 2, 1, std::nullopt, RankRole::kRootCause, h, h}};
    r.findings = {{Kind::kStraggler, {1}, h, h, h, h, std::nullopt}};
    r.teardown.survivors = {{3, h}};
    r.teardown.leaks = {h};
    r.expectations = {{h, h, h, false, ExpectationStatus::kFail, h}};
    r.timeline = {{1.0, 1, h}};
    r.verdict = Verdict::kFail;
    r.extra["stack_dumps"]["1"] = h;
    r.problems.harness_error = h;
    r.harness = {h, 1};
    ASSERT_TRUE(writeReport(r, (run_ / "report.json").string()));
  }

  std::vector<std::string> pwned() const {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      if (e.path().filename().string().rfind("pwned", 0) == 0) found.push_back(e.path().string());
    }
    return found;
  }

  fs::path dir_, run_;
};

TEST_F(ReRender, HostileReportJsonExecutesNothing) {
  writeHostileReport();
  EXPECT_EQ(run({FL_FAULTLINE, "report", run_.string()}, dir_ / "log"), 0) << readFile(dir_ / "log");
  EXPECT_TRUE(pwned().empty()) << pwned().front();
  // The payload is in every report, as inert text.
  for (const char* name : {"junit.xml", "report.md", "report.html"}) {
    EXPECT_NE(readFile(run_ / name).find("$(touch "), std::string::npos) << name;
  }
  // (Markdown keeps raw text only inside code fences; reports_test checks that.)
  for (const char* name : {"junit.xml", "report.html"}) EXPECT_EQ(readFile(run_ / name).find("<img"), std::string::npos) << name;
  EXPECT_NE(readFile(run_ / "report.md").find("%s%s%n%x"), std::string::npos);
}

// `faultline ARGS...` under strace: the trace's lines, or none when strace
// cannot run here (the caller skips).
std::vector<std::string> strace(const fs::path& dir, const std::vector<std::string>& args, int* rc) {
  const fs::path trace = dir / "trace";
  // LeakSanitizer cannot run under ptrace and fails the traced process at
  // exit in an ASan build (ci/test --sanitize address); elsewhere it is unset.
  std::vector<std::string> cmd = {"/usr/bin/strace", "-f", "-qq", "-o", trace.string(), "-E", "LSAN_OPTIONS=detect_leaks=0",
                                  "-e", "trace=process,open,openat,creat,rename,renameat,renameat2,unlink,unlinkat",
                                  FL_FAULTLINE};
  cmd.insert(cmd.end(), args.begin(), args.end());
  *rc = run(cmd, dir / "log");
  std::vector<std::string> lines;
  std::istringstream in(readFile(trace));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string firstPath(const std::string& line) {
  static const std::regex path_arg("\"([^\"]*)\"");
  std::smatch m;
  return std::regex_search(line, m, path_arg) ? m[1].str() : "";
}

// One execve (faultline itself) and no new process (threads aside): the
// first step of running anything would be a fork, a clone or another execve.
void expectNothingStarted(const std::vector<std::string>& trace) {
  int execs = 0;
  for (const auto& line : trace) {
    if (line.find("execve(") != std::string::npos) {
      ++execs;
      EXPECT_EQ(firstPath(line), FL_FAULTLINE) << line;
    }
    const bool spawn = line.find("fork(") != std::string::npos ||
                       ((line.find("clone(") != std::string::npos || line.find("clone3(") != std::string::npos) &&
                        line.find("CLONE_THREAD") == std::string::npos);
    EXPECT_FALSE(spawn) << line;
  }
  EXPECT_EQ(execs, 1);
}

TEST_F(ReRender, RenderersReadOnlyReportJsonAndStartNothing) {
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "unsupported: /usr/bin/strace is not installed (ci/deps installs it)";
  writeHostileReport();
  int rc = 0;
  const auto trace = strace(dir_, {"report", run_.string()}, &rc);
  if (rc != 0 && readFile(dir_ / "log").find("ptrace") != std::string::npos) {
    GTEST_SKIP() << "unsupported: strace cannot trace here: " << readFile(dir_ / "log");
  }
  ASSERT_EQ(rc, 0) << readFile(dir_ / "log");
  EXPECT_TRUE(pwned().empty());
  expectNothingStarted(trace);
  const std::string run_prefix = run_.string() + "/";
  const std::set<std::string> outputs = {"junit.xml", "report.md", "report.html", "trace.json"};
  for (const auto& line : trace) {
    const std::string path = firstPath(line);
    const bool writes = line.find("O_WRONLY") != std::string::npos || line.find("O_RDWR") != std::string::npos ||
                        line.find("O_CREAT") != std::string::npos || line.find("creat(") != std::string::npos;
    const bool opens = line.find("open") != std::string::npos || line.find("creat(") != std::string::npos;
    // TSan's runtime maps a file of its own at start (/tmp/tsan.rodata.PID).
    if (testing::kSanitizerBuild && path.rfind("/tmp/tsan.", 0) == 0) continue;
    if (opens && writes) {
      // Writes only to the temp files of the four renderings.
      ASSERT_EQ(path.rfind(run_prefix, 0), 0u) << "a write outside the run directory: " << line;
      const std::string name = path.substr(run_prefix.size());
      EXPECT_TRUE(name.size() > 4 && name.substr(name.size() - 4) == ".tmp" && outputs.count(name.substr(0, name.size() - 4)))
          << line;
    } else if (opens && path.rfind(run_prefix, 0) == 0) {
      EXPECT_EQ(path, run_prefix + "report.json") << "read a file of the run other than report.json: " << line;
    }
    if (line.find("rename") != std::string::npos) {
      EXPECT_NE(line.find(".tmp\""), std::string::npos) << line;
    }
    if (line.find("unlink") != std::string::npos) ADD_FAILURE() << "removed a file: " << line;
  }
}

TEST_F(ReRender, ExplainDiagnosesAgainAndStartsNothing) {
  // explain reads the run's logs too (that is its job), and runs nothing either.
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "unsupported: /usr/bin/strace is not installed (ci/deps installs it)";
  writeHostileReport();
  int rc = 0;
  const auto trace = strace(dir_, {"explain", run_.string(), "--json"}, &rc);
  if (rc != 0 && readFile(dir_ / "log").find("ptrace") != std::string::npos) {
    GTEST_SKIP() << "unsupported: strace cannot trace here: " << readFile(dir_ / "log");
  }
  EXPECT_TRUE(rc == 0 || rc == 1) << rc << " " << readFile(dir_ / "log");  // 1: a failure is diagnosed
  EXPECT_TRUE(pwned().empty());
  expectNothingStarted(trace);
}

TEST_F(ReRender, ExecWritesReportJsonOncePerRun) {
  // One assembly, one write (on main report.json was written before the
  // diagnosis and again after it). The provisional report (CONTRACT.md,
  // exit statuses) is written before the rank starts, and only then.
  if (::access("/usr/bin/strace", X_OK) != 0) GTEST_SKIP() << "unsupported: /usr/bin/strace is not installed (ci/deps installs it)";
  const fs::path out = dir_ / "exec";
  int rc = 0;
  const auto trace = strace(dir_, {"exec", "--no-instrument", "-o", out.string(), "--", "/bin/true"}, &rc);
  if (rc != 0 && readFile(dir_ / "log").find("ptrace") != std::string::npos) {
    GTEST_SKIP() << "unsupported: strace cannot trace here: " << readFile(dir_ / "log");
  }
  ASSERT_EQ(rc, 0) << readFile(dir_ / "log");
  const std::string target = (out / "report.json").string() + "\"";
  int before_rank = 0, after_rank = 0;
  bool rank_started = false;
  for (const auto& line : trace) {
    if (line.find("execve(\"/bin/true\"") != std::string::npos) rank_started = true;
    if (line.find("rename") != std::string::npos && line.find(target) != std::string::npos) {
      ++(rank_started ? after_rank : before_rank);
    }
  }
  EXPECT_TRUE(rank_started) << readFile(dir_ / "trace");
  EXPECT_EQ(before_rank, 1) << readFile(dir_ / "trace");  // the provisional report
  EXPECT_EQ(after_rank, 1) << readFile(dir_ / "trace");
}

TEST_F(ReRender, SuiteTagsAreReadBackForTheTagFilter) {
  // A suite's report.json keeps each scenario's tags, so a re-rendered
  // index.html filters by them as the first one did; anything but a string
  // there is skipped, and a suite without tags renders without the filter.
  writeHostileReport();
  for (const auto& [tags, labels] : std::vector<std::pair<nlohmann::json, std::vector<std::string>>>{
           {{"hang", 7, "core", nullptr}, {"core", "hang"}}, {"not a list", {}}, {nullptr, {}}}) {
    nlohmann::json entry = {{"name", "x"}, {"stack", "builtin"}, {"run_dir", "run"}};
    if (!tags.is_null()) entry["tags"] = tags;
    std::ofstream(dir_ / "report.json") << nlohmann::json{{"schema", "faultline.suite/1"}, {"scenarios", {entry}}, {"wall_ms", 1}}.dump();
    ASSERT_EQ(run({FL_FAULTLINE, "report", dir_.string()}, dir_ / "log"), 0) << readFile(dir_ / "log");
    const std::string html = readFile(dir_ / "index.html");
    for (size_t i = 0; i < labels.size(); ++i) {
      EXPECT_NE(html.find("<label for=\"tg-" + std::to_string(i) + "\">" + labels[i] + "</label>"), std::string::npos) << html;
    }
    EXPECT_EQ(html.find("name=\"tag\"") != std::string::npos, !labels.empty()) << tags.dump();
    const auto rewritten = nlohmann::json::parse(readFile(dir_ / "report.json"));
    EXPECT_EQ(rewritten["scenarios"][0]["tags"], (tags.is_array() ? nlohmann::json{"hang", "core"} : nlohmann::json::array()));
  }
}

TEST_F(ReRender, SuiteRunDirectoriesCannotLeaveTheSuite) {
  // A suite report.json pointing a run directory outside the suite: refused
  // (exit 2) before anything is read there or written.
  fs::create_directories(dir_ / "outside");
  writeHostileReport();
  fs::copy_file(run_ / "report.json", dir_ / "outside" / "report.json");
  const fs::path suite = dir_ / "suite";
  fs::create_directories(suite);
  for (const std::string& run_dir : std::vector<std::string>{"../outside", (dir_ / "outside").string()}) {
    nlohmann::json j = {{"schema", "faultline.suite/1"},
                        {"scenarios", {{{"name", "x"}, {"stack", "builtin"}, {"run_dir", run_dir}}}},
                        {"wall_ms", 1}};
    std::ofstream(suite / "report.json") << j.dump();
    EXPECT_EQ(run({FL_FAULTLINE, "report", suite.string()}, dir_ / "log"), 2) << readFile(dir_ / "log");
    const std::string log = readFile(dir_ / "log");
    EXPECT_NE(log.find((suite / "report.json").string()), std::string::npos) << log;
    EXPECT_NE(log.find("scenarios[0].run_dir"), std::string::npos) << log;
    EXPECT_FALSE(fs::exists(dir_ / "outside" / "report.html"));
  }
}

}  // namespace
}  // namespace faultline
