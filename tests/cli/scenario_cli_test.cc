// `faultline run`, `suite`, `list` and `report` as a user runs them: strict
// scenario errors (exit 2, no report), judged verdicts, every report format,
// unsupported stacks, and the core conformance suite end to end.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/process.h"
#include "tests/test_scale.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

struct Result {
  int status = -1;
  std::string out;
};

using faultline::testing::readFile;

// Runs the faultline binary through the shell, stdout and stderr together.
Result faultline(const std::string& args, const fs::path& log) {
  const std::string cmd = std::string(FL_FAULTLINE) + " " + args + " > " + log.string() + " 2>&1";
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, readFile(log)};
}

class ScenarioCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fl_scenario_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  // A scenario over the hostile fixture: rank `bad` exits 3, the others sleep until torn down.
  fs::path hostileScenario(const std::string& name, const std::string& expect, const std::string& extra = "") {
    return write(name + ".toml", "name = \"" + name + "\"\ndescription = \"d\"\ntags = [\"t\"]\n[stack]\n"
                 "trainer = \"command\"\ncommand = [\"" FL_HOSTILE "\", \"1=exit:3\", \"*=sleep:30\"]\n"
                 "world_size = 3\n" + extra + "[limits]\nhang_timeout_s = 20\ndeadline_s = 30\ngrace_s = 2\n"
                 "[expect]\n" + expect);
  }
  fs::path dir_;
};

TEST_F(ScenarioCli, BadScenarioExitsTwoNamingFileLineColumnAndWritesNoReport) {
  auto bad = write("bad.toml", "name = \"x\"\n[stack]\nworld_size = 2\n[fault]\nkind = \"segfault\"\nrank = 5\n"
                               "[expect]\n\"verdict\" = \"pass\"\n");
  auto r = faultline("run " + bad.string() + " -o " + (dir_ / "out").string(), dir_ / "log");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find(bad.string() + ":6:8: fault.rank: rank 5 is impossible with world_size 2, expected 0..1"),
            std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "report.json"));
}

TEST_F(ScenarioCli, PassingScenarioExitsZeroAndWritesEveryFormat) {
  auto s = hostileScenario("exit3", "\"root_cause.kind\" = \"exit_code\"\n\"root_cause.rank\" = 1\n"
                                    "\"root_cause.exit_code\" = 3\n\"teardown.clean\" = true\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "pass");
  EXPECT_EQ(report["scenario"]["name"], "exit3");
  ASSERT_EQ(report["expectations"].size(), 4u);
  for (const auto& e : report["expectations"]) EXPECT_TRUE(e["ok"].get<bool>()) << e.dump();
  for (const char* f : {"junit.xml", "report.md", "report.html", "supervisor.json"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
}

TEST_F(ScenarioCli, FailedExpectationExitsOneAndRecordsExpectedAndActual) {
  auto s = hostileScenario("wrong", "\"root_cause.rank\" = 2\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "fail");
  EXPECT_EQ(report["expectations"][0]["expected"], 2);
  EXPECT_EQ(report["expectations"][0]["actual"], 1);
  EXPECT_NE(r.out.find("fail: root_cause.rank expected 2, actual 1"), std::string::npos) << r.out;
}

// What the supervisor and the launcher did can be asserted (issue #16): on
// today's main these paths were rejected as outside report.json (exit 2).
TEST_F(ScenarioCli, TriggerAndWhoToreTheJobDownAreExpectations) {
  auto s = hostileScenario("who", "\"trigger.kind\" = \"rank_failure\"\n\"trigger.rank\" = 1\n"
                                  "\"teardown.by\" = \"faultline\"\n\"teardown.duration_ms\" = { max = 15000 }\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "pass") << report["expectations"].dump();
  EXPECT_EQ(report["teardown"]["by"], "faultline");
}

TEST_F(ScenarioCli, ALauncherThatEndsItsOwnJobIsPinnedByItsScenario) {
  if (::geteuid() != 0) GTEST_SKIP() << "exit statuses of a launcher's ranks need the proc connector (root)";
  // Rank 1 fails; the launcher stops rank 0 itself a second later.
  auto script = write("launch.sh", "#!/bin/sh\nRANK=0 WORLD_SIZE=2 \"$@\" & p0=$!\nRANK=1 WORLD_SIZE=2 \"$@\" & p1=$!\n"
                                   "wait $p1\nsleep 1\nkill -TERM $p0\nwait $p0\nexit 1\n");
  fs::permissions(script, fs::perms::owner_all);
  auto s = write("own.toml", "name = \"own\"\n[stack]\nlauncher = \"external\"\ntrainer = \"command\"\n"
                             "command = [\"" + script.string() + "\", \"" FL_HOSTILE "\", \"delay=0.3\", \"1=exit:3\", \"*=sleep:30\"]\n"
                             "world_size = 2\n[limits]\ndeadline_s = 60\n[expect]\n\"trigger.kind\" = \"rank_failure\"\n"
                             "\"trigger.rank\" = 1\n\"teardown.by\" = \"launcher\"\n\"teardown.duration_ms\" = { min = 900 }\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " -o " + out.string(), dir_ / "log");
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "pass") << report["expectations"].dump() << r.out;
  EXPECT_EQ(r.status, 0) << r.out;
}

TEST_F(ScenarioCli, UnsupportedStackIsReportedWithItsReason) {
  auto s = hostileScenario("builtin-only", "\"root_cause.rank\" = 1\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " --stack launch -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "unsupported");
  // The stack as resolved: a bare name is the newest torch installed.
  EXPECT_TRUE(std::regex_match(report["unsupported_reason"].get<std::string>(),
                               std::regex(R"(scenario 'builtin-only' applies to the stacks builtin, not launch@\d+\.\d+)")))
      << report["unsupported_reason"];
  EXPECT_TRUE(std::regex_match(report["stack"]["launcher"].get<std::string>(), std::regex(R"(launch@\d+\.\d+)")));
  // junit.xml says skipped, with the reason: never a failure.
  const std::string junit = readFile(out / "junit.xml");
  EXPECT_EQ(junit.find("<failure"), std::string::npos) << junit;
  EXPECT_NE(junit.find("<skipped message=\"unsupported: scenario &#39;builtin-only&#39; applies"), std::string::npos) << junit;
}

TEST_F(ScenarioCli, AScenarioThatRanOnNoStackIsSaidLoudlyAndStrictFailsIt) {
  auto s = hostileScenario("builtin-only", "\"root_cause.rank\" = 1\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " --stack launch -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("warning: scenario builtin-only ran on no stack"), std::string::npos) << r.out;
  r = faultline("run " + s.string() + " --stack launch --strict -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
  // Still a skip in junit.xml: --strict is about the exit status.
  EXPECT_NE(readFile(out / "junit.xml").find("<skipped message="), std::string::npos);
  r = faultline("suite " + s.string() + " --stack launch -o " + (dir_ / "suite").string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("warning: scenario builtin-only ran on no stack"), std::string::npos) << r.out;
  r = faultline("suite " + s.string() + " --stack launch --strict -o " + (dir_ / "suite").string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
}

TEST_F(ScenarioCli, WhatTheLauncherBlamedIsAnExpectationPath) {
  // launcher.blamed_rank / blamed_correctly are report.json fields (on main
  // the path was rejected, exit 2). The builtin launcher blames nobody.
  auto s = hostileScenario("blame", "\"root_cause.rank\" = 1\n\"launcher.blamed_rank\" = { null = true }\n"
                                    "\"launcher.blamed_correctly\" = { null = true }\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  auto report = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(report["verdict"], "pass");
  EXPECT_TRUE(report["launcher"].contains("blamed_rank"));
  EXPECT_TRUE(report["launcher"]["blamed_correctly"].is_null());
}

TEST_F(ScenarioCli, FailOnWarningFailsAPassingRunThatReportsAWarning) {
  // A rank that forms a process group and exits 0 without destroying it.
  write("nopg.sh", "printf '{\"t\":%s,\"rank\":0,\"pid\":%d,\"ev\":\"pg_init\",\"backend\":\"gloo\"}\\n' "
                   "\"$(date +%s%N)\" $$ >> \"$FAULTLINE_EVENTS\"\n");
  auto s = write("nopg.toml",
                 "name = \"nopg\"\ndescription = \"d\"\ntags = [\"t\"]\n[stack]\ntrainer = \"command\"\n"
                 "command = [\"/bin/sh\", \"nopg.sh\"]\nworld_size = 1\n"
                 "[expect]\n\"findings.kind\" = { contains = \"no_pg_destroy\" }\n\"root_cause\" = { null = true }\n");
  const fs::path out = dir_ / "out";
  auto r = faultline("run " + s.string() + " --no-instrument -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out << readFile(out / "report.json");
  EXPECT_EQ(nlohmann::json::parse(readFile(out / "report.json"))["verdict"], "pass");
  r = faultline("run " + s.string() + " --no-instrument --fail-on warning -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
}

TEST_F(ScenarioCli, ListPrintsTheCatalog) {
  auto r = faultline(std::string("list ") + FL_SOURCE_DIR "/scenarios", dir_ / "log");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("hung-collective"), std::string::npos);
  EXPECT_NE(r.out.find("python-name-error"), std::string::npos);
  EXPECT_NE(r.out.find(" scenarios\n"), std::string::npos);
}

TEST_F(ScenarioCli, ReportReRendersFromReportJsonAlone) {
  auto s = hostileScenario("rerender", "\"root_cause.rank\" = 1\n");
  const fs::path out = dir_ / "out";
  ASSERT_EQ(faultline("run " + s.string() + " -o " + out.string(), dir_ / "log").status, 0);
  fs::remove(out / "report.html");
  fs::remove(out / "junit.xml");
  auto r = faultline("report " + out.string(), dir_ / "log2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "report.html"));
  EXPECT_TRUE(fs::exists(out / "junit.xml"));
  EXPECT_EQ(faultline("report " + (dir_ / "nowhere").string(), dir_ / "log3").status, 2);
}

TEST_F(ScenarioCli, SuiteRunsInParallelAndWritesSuiteReports) {
  hostileScenario("one", "\"root_cause.rank\" = 1\n");
  hostileScenario("two", "\"root_cause.kind\" = \"exit_code\"\n");
  const fs::path out = dir_ / "suite";
  auto r = faultline("suite " + dir_.string() + " -j 2 -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 0) << r.out;
  auto suite = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(suite["schema"], "faultline.suite/1");
  EXPECT_EQ(suite["counts"]["pass"], 2);
  for (const char* f : {"junit.xml", "report.md", "index.html", "one/report.html", "two/report.json"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  EXPECT_NE(r.out.find("scenario"), std::string::npos);  // the summary table
}

// `faultline suite ... | head -c 1` (and `| true`): the suite printed its
// first line into a pipe with no reader and died of SIGPIPE (exit 141)
// before it ran a scenario. Its exit status must be the verdict's, and its
// reports complete.
// --catalog --keep: every cell already run under -o is read, not run again;
// a cell whose directory is gone (a whole stack removed, a scenario added
// since) runs, and so does one whose scenario file changed after it ran, and
// every unsupported cell; the catalog is written from all of them and says
// --keep.
TEST_F(ScenarioCli, CatalogKeepRunsOnlyTheCellsNotRunYet) {
  const fs::path scenarios = dir_ / "scenarios";
  fs::create_directories(scenarios);
  const auto write = [&](const std::string& name) {
    std::ofstream(scenarios / (name + ".toml")) << "name = \"" << name << "\"\ndescription = \"d\"\ntags = [\"t\"]\n[stack]\n"
                                                   "trainer = \"command\"\ncommand = [\"" FL_HOSTILE "\", \"*=ok\"]\n"
                                                   "stacks = [\"builtin\"]\nworld_size = 2\n[expect]\n\"root_cause\" = { null = true }\n";
  };
  write("clean");
  write("edited");
  const fs::path md = dir_ / "modes.md", out = dir_ / "out";
  const std::string args = "suite " + scenarios.string() + " --catalog " + md.string() + " -j 2 -o " + out.string();
  auto first = faultline(args, dir_ / "log1");
  ASSERT_EQ(first.status, 0) << first.out;
  ASSERT_TRUE(fs::exists(out / "builtin@2.13" / "report.json") || fs::exists(out / "builtin@1.13" / "report.json")) << first.out;
  std::vector<std::string> stacks;
  for (const auto& e : fs::directory_iterator(out)) {
    if (e.is_directory()) stacks.push_back(e.path().filename().string());
  }
  ASSERT_FALSE(stacks.empty());
  const std::string rerun = stacks.front();
  fs::remove_all(out / rerun);
  write("added");
  // Edited after its cells ran (a second later than now: file times are
  // coarser than a fast run).
  fs::last_write_time(scenarios / "edited.toml", fs::file_time_type::clock::now() + std::chrono::seconds(2));
  auto again = faultline(args + " --keep", dir_ / "log2");
  ASSERT_EQ(again.status, 0) << again.out;
  // The progress line of a cell: "[1/2] pass   clean   builtin@2.13   kept  pass".
  const auto line = [&](const std::string& name, const std::string& stack) {
    std::istringstream in(again.out);
    for (std::string l; std::getline(in, l);) {
      if (l.rfind("[", 0) == 0 && l.find(" " + name + " ") != std::string::npos && l.find(" " + stack + " ") != std::string::npos) {
        return l;
      }
    }
    return std::string();
  };
  int replanned = 0;
  for (const std::string& st : stacks) {
    const std::string clean = line("clean", st), added = line("added", st), edited = line("edited", st);
    ASSERT_FALSE(clean.empty()) << st << "\n" << again.out;
    ASSERT_FALSE(added.empty()) << st << "\n" << again.out;
    ASSERT_FALSE(edited.empty()) << st << "\n" << again.out;
    // An unsupported cell (the scenario is builtin's) is planned again: it costs nothing.
    const bool unsupported = clean.find("unsupported") != std::string::npos;
    EXPECT_EQ(unsupported, st.rfind("builtin@", 0) != 0) << clean;
    EXPECT_EQ(clean.find(" kept ") != std::string::npos, st != rerun && !unsupported) << clean;
    replanned += unsupported;
    EXPECT_EQ(added.find(" kept "), std::string::npos) << added;
    EXPECT_EQ(edited.find(" kept "), std::string::npos) << edited;
  }
  EXPECT_GT(replanned, 0) << again.out;  // torchrun's column, at least
  EXPECT_TRUE(fs::exists(out / rerun / "report.json"));
  const std::string text = readFile(md);
  EXPECT_NE(text.find("--keep"), std::string::npos);
  EXPECT_NE(text.find("| clean |"), std::string::npos);
  EXPECT_NE(text.find("| added |"), std::string::npos);
}

// A cell whose run leaves no report (here its run directory is a file, so
// it can write nothing; a scenario file edited under a catalog so that it no
// longer parses did the same) is that cell in error, naming its log: the
// stack's suite report lists it, and the catalog and the matrix are still
// written. A catalog of about a hundred minutes once ended on "report.json:
// cannot open" and wrote nothing.
TEST_F(ScenarioCli, ACellThatLeftNoReportIsAnErrorAndTheCatalogIsWritten) {
  const fs::path scenarios = dir_ / "scenarios";
  fs::create_directories(scenarios);
  for (const char* name : {"fine", "lost"}) {
    std::ofstream(scenarios / (std::string(name) + ".toml"))
        << "name = \"" << name << "\"\ndescription = \"d\"\ntags = [\"t\"]\n[stack]\n"
        << "trainer = \"command\"\ncommand = [\"" FL_HOSTILE "\", \"*=ok\"]\n"
        << "stacks = [\"builtin\"]\nworld_size = 2\n[expect]\n\"root_cause\" = { null = true }\n";
  }
  const fs::path md = dir_ / "modes.md", out = dir_ / "out";
  const std::string args = "suite " + scenarios.string() + " --catalog " + md.string() + " -j 2 -o " + out.string();
  // Which builtin columns this machine has: the run directories a first
  // catalog makes. Then "lost"'s directory on each becomes a file.
  ASSERT_EQ(faultline(args, dir_ / "log1").status, 0) << readFile(dir_ / "log1");
  std::vector<fs::path> blocked;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string stack = e.path().filename().string();
    if (!e.is_directory() || stack.rfind("builtin@", 0) != 0) continue;
    const fs::path run = e.path() / ("lost--" + stack);
    ASSERT_TRUE(fs::is_directory(run)) << run;
    fs::remove_all(run);
    std::ofstream(run) << "not a directory\n";
    blocked.push_back(run);
  }
  ASSERT_FALSE(blocked.empty());
  fs::remove(md);
  auto r = faultline(args, dir_ / "log2");
  EXPECT_EQ(r.status, 3) << r.out;  // an error verdict
  const std::string text = readFile(md);
  ASSERT_FALSE(text.empty()) << r.out;
  EXPECT_NE(text.find("| fine |"), std::string::npos) << text;
  EXPECT_NE(text.find("| lost |"), std::string::npos) << text;
  EXPECT_TRUE(fs::exists(out / "index.html"));
  for (const fs::path& run : blocked) {
    auto suite = nlohmann::json::parse(readFile(run.parent_path() / "report.json"));
    EXPECT_EQ(suite["counts"]["pass"], 1) << suite.dump();
    EXPECT_EQ(suite["counts"]["error"], 1) << suite.dump();
  }
}

TEST_F(ScenarioCli, SuiteIntoAClosedPipeKeepsItsStatusAndReports) {
  hostileScenario("one", "\"root_cause.rank\" = 1\n");
  hostileScenario("two", "\"root_cause.rank\" = 2\n");  // wrong: rank 1 fails
  for (size_t read_bytes : {0u, 1u}) {
    SCOPED_TRACE("the reader took " + std::to_string(read_bytes) + " byte(s)");
    const fs::path out = dir_ / ("suite" + std::to_string(read_bytes));
    testing::SpawnOptions o;
    o.argv = {FL_FAULTLINE, "suite", dir_.string(), "-j", "2", "-o", out.string()};
    o.stderr_path = dir_ / "log";
    auto f = testing::runIntoClosedPipe(o, read_bytes);
    EXPECT_EQ(f.code(), 1) << f.str() << "\n" << readFile(dir_ / "log");
    auto suite = nlohmann::json::parse(readFile(out / "report.json"));
    EXPECT_EQ(suite["counts"]["pass"], 1);
    EXPECT_EQ(suite["counts"]["fail"], 1);
    for (const char* file : {"junit.xml", "report.md", "index.html", "one/report.json", "two/report.json"}) {
      EXPECT_TRUE(fs::exists(out / file)) << file;
    }
  }
}

// Regression: one bad scenario file stopped the whole suite with exit 2.
TEST_F(ScenarioCli, ABadFileIsThatScenarioUnresolvedAndTheSuiteRuns) {
  hostileScenario("good", "\"root_cause.rank\" = 1\n");
  const fs::path bad = write("broken.toml", "name = \"broken\"\n[stack]\nworld_size = 0\n");
  const fs::path out = dir_ / "suite";
  auto r = faultline("suite " + dir_.string() + " -j 2 -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find(bad.string() + ":3:14: stack.world_size: 0 is out of range"), std::string::npos) << r.out;
  auto suite = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(suite["counts"]["pass"], 1);
  EXPECT_EQ(suite["counts"]["unresolved"], 1);
  auto broken = nlohmann::json::parse(readFile(out / "broken" / "report.json"));
  EXPECT_EQ(broken["verdict"], "unresolved");
  EXPECT_NE(broken["bad_input"].get<std::string>().find(":3:14: stack.world_size"), std::string::npos);
  const std::string junit = readFile(out / "junit.xml");
  EXPECT_NE(junit.find("<error message=\"unresolved: " + bad.string() + ":3:14"), std::string::npos) << junit;
  // The file alone is still bad input.
  EXPECT_EQ(faultline("run " + bad.string() + " -o " + (dir_ / "one").string(), dir_ / "log1").status, 2);
}

// Issue 16: a scenario no stack can run (external launcher, reference
// trainer) was `unsupported` and exit 0. It is bad input: `run` exits 2
// naming file:line:col, and in a suite it is that one scenario, unresolved.
TEST_F(ScenarioCli, AScenarioNoStackCanRunIsBadInput) {
  hostileScenario("good", "\"root_cause.rank\" = 1\n");
  const fs::path never = write("never.toml", "name = \"never\"\n[stack]\nlauncher = \"external\"\ncommand = [\"torchrun\"]\n"
                                             "[expect]\n\"verdict\" = \"pass\"\n");
  auto one = faultline("run " + never.string() + " -o " + (dir_ / "one").string(), dir_ / "log1");
  EXPECT_EQ(one.status, 2) << one.out;
  EXPECT_NE(one.out.find(never.string() + ":3:12: stack.launcher: no stack can run this scenario"), std::string::npos) << one.out;
  EXPECT_FALSE(fs::exists(dir_ / "one" / "report.json"));
  const fs::path out = dir_ / "suite";
  auto r = faultline("suite " + dir_.string() + " -j 2 -o " + out.string(), dir_ / "log");
  EXPECT_EQ(r.status, 1) << r.out;
  auto suite = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_EQ(suite["counts"]["pass"], 1);
  EXPECT_EQ(suite["counts"]["unresolved"], 1);
  EXPECT_EQ(suite["counts"].value("unsupported", 0), 0) << suite["counts"];
  auto report = nlohmann::json::parse(readFile(out / "never" / "report.json"));
  EXPECT_EQ(report["verdict"], "unresolved");
  EXPECT_NE(report["bad_input"].get<std::string>().find(":3:12: stack.launcher: no stack can run"), std::string::npos);
}

// The catalog to run: as written, or under `ci/test --sanitize` (every
// process several times slower) a copy in `tmp` with each time limit and
// each *_ms bound stretched by FAULTLINE_TEST_TIME_SCALE, so they keep their
// relations and the verdicts stay the ones the catalog means.
// The catalog as this build runs it: the limits scaled (testing::timeScale),
// and without the scenarios tagged with one of `skip_tags` (a CI subset); the source
// catalog itself when neither applies.
// What a suite left behind, checked from outside the harness (its own
// teardown report is what is under test): any process whose environment
// names a run directory under `out` (FAULTLINE_RUN_DIR: ranks, agents, node
// agents), and any network namespace or link of a multi-node run
// (OUT/nodes/network.json's tag). One line each; empty: nothing left.
std::vector<std::string> leftBehind(const fs::path& out) {
  std::vector<std::string> left;
  const std::string needle = "FAULTLINE_RUN_DIR=" + out.string() + "/";
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    const std::string pid = p.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid == std::to_string(::getpid())) continue;
    std::ifstream env(p.path() / "environ", std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    if (text.find(needle) == std::string::npos) continue;
    std::ifstream cmd(p.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    left.push_back("process " + pid + ": " + cmdline);
  }
  auto lines = [](const std::string& command) {
    std::string text;
    if (FILE* f = ::popen(command.c_str(), "r")) {
      char buf[4096];
      for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
      ::pclose(f);
    }
    return text;
  };
  std::string netns, links;
  for (const auto& run : fs::directory_iterator(out, ec)) {
    const fs::path net = run.path() / "nodes" / "network.json";
    if (!fs::exists(net)) continue;
    const std::string tag = nlohmann::json::parse(readFile(net), nullptr, false).value("tag", "");
    if (tag.empty()) continue;
    if (netns.empty()) netns = lines("ip netns list 2>/dev/null"), links = lines("ip -o link show 2>/dev/null");
    std::istringstream ns(netns);
    for (std::string l; std::getline(ns, l);) {
      if (l.rfind(tag, 0) == 0) left.push_back("network namespace of " + run.path().filename().string() + ": " + l);
    }
    if (links.find(": " + tag) != std::string::npos) left.push_back("network link " + tag + " of " + run.path().filename().string());
  }
  return left;
}

// skip_tags: comma-separated tags whose scenarios are left out ("adaptive,checkpoint-fault").
fs::path catalogForThisBuild(const fs::path& tmp, const std::string& skip_tags = "", const std::string& skip_names = "",
                             const std::string& skip_trainer = "") {
  const fs::path src = fs::path(FL_SOURCE_DIR) / "scenarios";
  const double scale = testing::timeScale();
  if (scale == 1.0 && skip_tags.empty() && skip_names.empty() && skip_trainer.empty()) return src;
  const fs::path dst = tmp / "scenarios";
  fs::remove_all(dst);
  fs::create_directories(tmp);
  fs::copy(src, dst, fs::copy_options::recursive);
  static const std::regex limit(R"(^(\s*(?:hang_timeout_s|deadline_s|grace_s)\s*=\s*)([0-9.]+))");
  static const std::regex bound(R"((_ms"\s*=\s*\{\s*max\s*=\s*)([0-9.]+))");
  std::string any;  // "adaptive|checkpoint-fault": tags are names, no regex characters
  for (char c : skip_tags) any += c == ',' ? '|' : c;
  const std::regex tagged(R"x(^tags\s*=\s*\[[^\]]*"()x" + any + R"x()")x");
  std::string names;  // "multinode-clean|multinode-partition": names, no regex characters
  for (char c : skip_names) names += c == ',' ? '|' : c;
  const std::regex named(R"x(^name\s*=\s*"()x" + names + R"x()")x");
  const std::regex trained(R"x(^trainer\s*=\s*"()x" + skip_trainer + R"x()")x");
  std::vector<fs::path> skipped;
  for (const auto& e : fs::recursive_directory_iterator(dst)) {
    if (e.path().extension() != ".toml") continue;
    const std::string text = readFile(e.path());
    if (!skip_tags.empty() || !skip_names.empty() || !skip_trainer.empty()) {
      std::istringstream lines(text);
      bool skip = false;
      for (std::string line; !skip && std::getline(lines, line);) {
        skip = (!skip_tags.empty() && std::regex_search(line, tagged)) || (!skip_names.empty() && std::regex_search(line, named)) ||
               (!skip_trainer.empty() && std::regex_search(line, trained));
      }
      if (skip) {
        skipped.push_back(e.path());
        continue;
      }
    }
    std::istringstream in(text);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, limit) || std::regex_search(line, m, bound)) {
        line = m.prefix().str() + m[1].str() + std::to_string(std::stod(m[2].str()) * scale) + m.suffix().str();
      }
      out += line + "\n";
    }
    std::ofstream(e.path(), std::ios::trunc) << out;
  }
  for (const auto& p : skipped) fs::remove(p);
  return dst;
}

// The core tag of the conformance catalog against the builtin stack, end to
// end with the reference trainer and real Python DDP trainers.
TEST(Conformance, CoreSuitePassesOnTheBuiltinStack) {
  const fs::path out = fs::temp_directory_path() / ("fl_conformance_core_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const fs::path catalog = catalogForThisBuild(out.string() + "_catalog");
  auto r = faultline("suite " + catalog.string() + " --tag core --stack builtin -j 2 -o " + out.string(),
                     fs::temp_directory_path() / ("fl_conformance_core_" + std::to_string(::getpid()) + ".log"));
  EXPECT_EQ(r.status, 0) << r.out;
  auto suite = nlohmann::json::parse(readFile(out / "report.json"));
  EXPECT_GE(suite["scenarios"].size(), 10u);
  for (const auto& s : suite["scenarios"]) EXPECT_EQ(s["verdict"], "pass") << s.dump();
}

// The last n lines of a file ("" when there is none): what a failed cell's
// launcher said, in CI's log, where the run directory is out of reach.
std::string lastLines(const fs::path& file, size_t n) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

// One stack (FL_CONFORMANCE_STACK, set by the CTest entry conformance.STACK):
// every scenario of the catalog that applies to it passes; the others are
// unsupported with their reason. The scenario failing is named with the stack.
TEST(Conformance, CatalogOnOneStack) {
  const char* stack_env = std::getenv("FL_CONFORMANCE_STACK");
  if (!stack_env || !*stack_env) GTEST_SKIP() << "FL_CONFORMANCE_STACK not set (the conformance.STACK CTest entries set it)";
  const std::string stack = stack_env;
  const std::string tag = "fl_conformance_" + std::to_string(::getpid());
  const fs::path out = fs::temp_directory_path() / tag;
  fs::remove_all(out);
  // A declared subset (FL_CONFORMANCE_SKIP_TAG, tests/cli/CMakeLists.txt): the
  // scenarios of those tags are left to ci/catalog on this stack.
  const char* skip_tag = std::getenv("FL_CONFORMANCE_SKIP_TAG");
  // And scenarios by name (FL_CONFORMANCE_SKIP_NAME, a comma list), or by
  // their trainer (FL_CONFORMANCE_SKIP_TRAINER: "reference").
  const char* skip_name = std::getenv("FL_CONFORMANCE_SKIP_NAME");
  const char* skip_trainer = std::getenv("FL_CONFORMANCE_SKIP_TRAINER");
  const fs::path catalog = catalogForThisBuild(out.string() + "_catalog", skip_tag ? skip_tag : "", skip_name ? skip_name : "",
                                               skip_trainer ? skip_trainer : "");
  // Or the scenarios of these tags only (FL_CONFORMANCE_TAG, a comma list).
  std::string only;
  if (const char* tags = std::getenv("FL_CONFORMANCE_TAG")) {
    std::stringstream list(tags);
    for (std::string t; std::getline(list, t, ',');) {
      if (!t.empty()) only += " --tag " + t;
    }
  }
  auto r = faultline("suite " + catalog.string() + only + " --stack " + stack + " -j 2 -o " + out.string(),
                     fs::temp_directory_path() / (tag + ".log"));
  auto suite = nlohmann::json::parse(readFile(out / "report.json"));
  int passed = 0;
  for (const auto& s : suite["scenarios"]) {
    const std::string verdict = s["verdict"];
    passed += verdict == "pass";
    EXPECT_TRUE(verdict == "pass" || verdict == "unsupported")
        << s["name"].get<std::string>() << " on " << stack << ": " << verdict << "\n" << s.dump(1)
        << "\nthe end of its launcher's stderr:\n" << lastLines(out / s.value("run_dir", "") / "launcher" / "stderr", 40);
  }
  EXPECT_GE(passed, 1) << "no scenario of the catalog ran on " << stack << "\n" << r.out;
  // Nothing of any run is left: no process, no namespace, no link (the
  // multi-node runs' outside check, for every stack).
  for (const std::string& l : leftBehind(out)) ADD_FAILURE() << "left behind by the suite on " << stack << ": " << l;
  EXPECT_EQ(r.status, 0) << r.out;
  if (!HasFailure()) fs::remove_all(out);  // kept for a look when something failed
}

}  // namespace
}  // namespace faultline
