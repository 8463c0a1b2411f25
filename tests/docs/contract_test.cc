// docs/CONTRACT.md against the code: every name a user scripts against (a
// command-line option, a variable faultline reads, an event field, a
// report.json field, a verdict, role or kind, a scenario key) is written down
// in the section that promises it. A name added to the code without its line
// in the contract fails here.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "reports/finding_fixes.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

std::string slurpFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string contract() { return slurpFile(fs::path(FL_SOURCE_DIR) / "docs/CONTRACT.md"); }

// The text of section "## N." up to the next "## " heading.
std::string section(int n) {
  const std::string all = contract();
  const std::string head = "\n## " + std::to_string(n) + ".";
  const size_t b = all.find(head);
  if (b == std::string::npos) return "";
  const size_t e = all.find("\n## ", b + head.size());
  return all.substr(b, e == std::string::npos ? std::string::npos : e - b);
}

bool mentions(const std::string& text, const std::string& name) { return text.find(name) != std::string::npos; }

// Every match of group 1 of `re` in the files under `dirs` with these extensions.
std::set<std::string> scanSources(std::initializer_list<const char*> dirs, const std::regex& re,
                                  std::initializer_list<const char*> exts) {
  std::set<std::string> found;
  for (const char* d : dirs) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(FL_SOURCE_DIR) / d)) {
      if (!entry.is_regular_file()) continue;
      const std::string ext = entry.path().extension().string();
      bool wanted = false;
      for (const char* x : exts) wanted = wanted || ext == x;
      if (!wanted) continue;
      const std::string text = slurpFile(entry.path());
      for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) found.insert((*it)[1]);
    }
  }
  return found;
}

std::string helpOf(const std::string& sub) {
  const std::string cmd = std::string(FL_FAULTLINE) + " " + sub + " --help 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  return out;
}

TEST(Contract, EverySubcommandOptionIsInSectionOne) {
  const std::string s1 = section(1);
  ASSERT_FALSE(s1.empty()) << "docs/CONTRACT.md has no section 1";
  const std::regex option(R"((?:^|[\s,])(--[a-z][a-z-]+))");
  for (const char* sub : {"exec", "run", "suite", "list", "stacks", "explain", "report", "agent"}) {
    const std::string help = helpOf(sub);
    ASSERT_NE(help.find("Usage"), std::string::npos) << sub << " --help printed:\n" << help;
    EXPECT_TRUE(mentions(s1, std::string("faultline ") + sub)) << "the synopsis lacks `faultline " << sub << "`";
    std::set<std::string> options;
    for (std::sregex_iterator it(help.begin(), help.end(), option), end; it != end; ++it) options.insert((*it)[1]);
    options.erase("--help");
    for (const auto& o : options) {
      EXPECT_TRUE(mentions(s1, "`" + o) || mentions(s1, "[" + o) || mentions(s1, " " + o + " "))
          << "`faultline " << sub << " " << o << "` is not in docs/CONTRACT.md section 1";
    }
  }
}

TEST(Contract, EveryVariableFaultlineReadsIsInSectionTwo) {
  const std::string s2 = section(2);
  ASSERT_FALSE(s2.empty());
  const auto c_reads = scanSources({"harness", "reference-trainer"}, std::regex(R"re(getenv\("(FAULTLINE_[A-Z0-9_]+)"\))re"),
                                   {".cc", ".c", ".h"});
  const auto py_reads = scanSources({"harness/probe/python"},
                                    std::regex(R"re(environ(?:\.get\(|\[|\.pop\(|\.setdefault\()\s*["'](FAULTLINE_[A-Z0-9_]+)["'])re"),
                                    {".py"});
  ASSERT_GE(c_reads.size(), 5u) << "the scan found almost nothing: has the source moved?";
  for (const auto* reads : {&c_reads, &py_reads}) {
    for (const auto& v : *reads) {
      EXPECT_TRUE(mentions(s2, "`" + v + "`")) << v << " is read by the code but not in docs/CONTRACT.md section 2";
    }
  }
}

TEST(Contract, EveryEventFieldTheReaderKnowsIsInSectionThree) {
  const std::string s3 = section(3);
  ASSERT_FALSE(s3.empty());
  const auto fields = scanSources({"harness/diagnose"}, std::regex(R"re(\{"([a-z_]+)",\s*&Event::)re"), {".cc"});
  ASSERT_GE(fields.size(), 20u) << "the scan of harness/diagnose/events.cc found almost nothing";
  for (const auto& f : fields) {
    EXPECT_TRUE(mentions(s3, "`" + f + "`")) << "event field " << f << " is read but not in section 3";
  }
}

// Every key of a report with every optional part present.
void keysOf(const nlohmann::json& j, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      out.insert(k);
      keysOf(v, out);
    }
  } else if (j.is_array()) {
    for (const auto& v : j) keysOf(v, out);
  }
}

TEST(Contract, EveryReportFieldIsInSectionFour) {
  const std::string s4 = section(4);
  ASSERT_FALSE(s4.empty());
  Report r;
  r.scenario = ScenarioRef{"x", "x.toml"};
  RootCause rc;
  rc.rank = 1;
  rc.exception_type = "T";
  rc.message = "m";
  rc.location = Location{"f.py", 1};
  rc.native_location = Location{"x.cpp", 2};
  rc.native_function = "fn";
  rc.symbol = "s";
  rc.signal = "SIGSEGV";
  rc.exit_code = 1;
  rc.collective = CollectiveRef{"allreduce", 1};
  rc.waiting_ranks = {0};
  rc.missing_ranks = {1};
  rc.layers = {{"error", "e"}};
  rc.node = "n2";
  r.root_cause = rc;
  RankReport rank;
  rank.pid = 1;
  rank.exit_code = 0;
  rank.signal = "SIGKILL";
  rank.node = "n2";
  rank.host = "h2";
  r.ranks = {rank};
  r.nodes = {NodeReport{"n2", "h2", {1}, true, 5, {Survivor{1, "x"}}, 0}};
  r.findings = {Finding{}};
  AttemptReport attempt;
  attempt.ranks = {AttemptRank{}};
  r.attempts = {attempt};
  r.recovery = Recovery{};
  r.teardown.survivors = {Survivor{1, "x"}};
  r.teardown.leaks = {"l"};
  Expectation e;
  e.what = "root_cause.kind";
  r.expectations = {e};
  r.timeline = {TimelineEntry{0, 1, "w"}};
  std::set<std::string> keys;
  keysOf(toJson(r), keys);
  ASSERT_GE(keys.size(), 30u);
  for (const auto& k : keys) {
    EXPECT_TRUE(mentions(s4, "\"" + k + "\"") || mentions(s4, "`" + k + "`") || mentions(s4, "." + k + "`"))
        << "report.json field " << k << " is not in docs/CONTRACT.md section 4";
  }
}

// A closed set: walks the enum from 0 while its name reads back to it.
template <typename E, typename Name, typename From>
std::vector<std::string> closedSet(Name name, From from) {
  std::vector<std::string> names;
  for (int i = 0; i < 64; ++i) {
    const E v = static_cast<E>(i);
    const std::string n = name(v);
    const auto back = from(n);
    if (!back || *back != v) break;
    names.push_back(n);
  }
  return names;
}

TEST(Contract, EveryVerdictRoleKindAndEscalationHasItsRow) {
  const std::string s4 = section(4);
  const auto row = [&](const std::string& n) { return mentions(s4, "| `" + n + "` "); };
  const auto verdicts = closedSet<Verdict>(verdictName, verdictFromName);
  const auto roles = closedSet<RankRole>(roleName, roleFromName);
  const auto kinds = closedSet<Kind>(kindName, kindFromName);
  EXPECT_GE(verdicts.size(), 8u);
  EXPECT_GE(roles.size(), 5u);
  EXPECT_GE(kinds.size(), 19u);
  for (const auto* set : {&verdicts, &roles, &kinds}) {
    for (const auto& n : *set) EXPECT_TRUE(row(n)) << "`" << n << "` has no row in docs/CONTRACT.md section 4";
  }
  for (const auto& n : closedSet<Escalation>(escalationName, escalationFromName)) {
    EXPECT_TRUE(mentions(s4, "\"" + n + "\"")) << "escalation " << n << " is not in section 4";
  }
}

// Every kind section 4 calls a finding has its fix (reports/finding_fixes.cc),
// shown beside its evidence in report.md and report.html, and docs/USING.md
// lists it in its reference of report values.
TEST(Contract, EveryFindingKindHasAFixAndIsInUsing) {
  const std::string s4 = section(4);
  const std::string using_md = slurpFile(fs::path(FL_SOURCE_DIR) / "docs/USING.md");
  const std::regex finding_row(R"re(\| `([a-z_]+)`(?: \*\(added\)\*)? \| finding \|)re");
  int findings = 0;
  for (std::sregex_iterator it(s4.begin(), s4.end(), finding_row), end; it != end; ++it) {
    const std::string name = (*it)[1].str();
    ++findings;
    const auto k = kindFromName(name);
    ASSERT_TRUE(k) << name;
    EXPECT_FALSE(reports::findingFix(*k).empty()) << "finding " << name << " has no fix in reports/finding_fixes.cc";
    EXPECT_TRUE(mentions(using_md, "| `" + name + "` |")) << "finding " << name << " is not in docs/USING.md";
  }
  EXPECT_GE(findings, 7);
}

// docs/USING.md's reference of report values: a row, with what to do, for
// every role and every root-cause kind (every kind section 4 does not call a finding).
TEST(Contract, EveryRoleAndRootCauseKindIsInUsing) {
  const std::string using_md = slurpFile(fs::path(FL_SOURCE_DIR) / "docs/USING.md");
  const std::string s4 = section(4);
  for (const auto& n : closedSet<RankRole>(roleName, roleFromName)) {
    EXPECT_TRUE(mentions(using_md, "| `" + n + "` |")) << "role " << n << " has no row in docs/USING.md";
  }
  int kinds = 0;
  for (const auto& n : closedSet<Kind>(kindName, kindFromName)) {
    const std::regex finding("\\| `" + n + "`(?: \\*\\(added\\)\\*)? \\| finding \\|");
    if (std::regex_search(s4, finding)) continue;
    ++kinds;
    EXPECT_TRUE(mentions(using_md, "| `" + n + "` |")) << "root-cause kind " << n << " has no row in docs/USING.md";
  }
  EXPECT_GE(kinds, 15);
}

TEST(Contract, EveryScenarioKeyIsInSectionFive) {
  const std::string s5 = section(5);
  ASSERT_FALSE(s5.empty());
  const std::string parser = slurpFile(fs::path(FL_SOURCE_DIR) / "harness/scenario/scenario.cc");
  // c.onlyKeys(t, {"a", "b"}, "[stack]") lists the keys a table accepts.
  const std::regex call(R"re(onlyKeys\([^{]*\{([^}]*)\},\s*"([^"]*)"\))re");
  const std::regex key(R"re("([a-z_]+)")re");
  int tables = 0;
  for (std::sregex_iterator it(parser.begin(), parser.end(), call), end; it != end; ++it) {
    ++tables;
    const std::string keys = (*it)[1], where = (*it)[2];
    const std::string table = where.size() > 2 && where.front() == '[' ? where.substr(1, where.size() - 2) : "";
    for (std::sregex_iterator k(keys.begin(), keys.end(), key), kend; k != kend; ++k) {
      const std::string name = (*k)[1];
      const std::string dotted = table.empty() ? name : table + "." + name;
      EXPECT_TRUE(mentions(s5, "| `" + dotted) || mentions(s5, "`" + dotted + "`") || mentions(s5, "`" + table + ".*`"))
          << "scenario key " << dotted << " is accepted by the parser but not in docs/CONTRACT.md section 5";
    }
  }
  EXPECT_GE(tables, 4) << "the scan of harness/scenario/scenario.cc found no key lists";
}

}  // namespace
}  // namespace faultline
