// The layout's rules, checked on the source: no stage outside harness/launch
// branches on a launcher's name (the launcher table, model/stack_name.h, is
// where a launcher's traits live) or on its way of leaving its ranks (the
// rank trackers, supervise/rank_tracker.h, are chosen once), and
// docs/LAUNCHERS.md lists every launcher of the table.
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "harness/model/stack_name.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Places allowed to compare with a launcher's name, and why.
const std::map<std::string, std::string>& allowed() {
  static const std::map<std::string, std::string> kAllowed = {
      {"harness/cli/exec_command.cc", "`exec --launcher builtin|external`: the command's own option values"},
      {"harness/diagnose/root_cause_rules.cc",
       "supervisor.json's `launcher` is a recorded fact (builtin: faultline started the ranks), not a stack name"},
      {"harness/probe/fault_spec.cc", "the program a command runs (a `torchrun` command gets the Python shim), not a stack"},
      {"harness/supervise/node_faults.cc", "a node's torchrun agent found by its command line, not a stack"},
  };
  return kAllowed;
}

TEST(Layering, NoLauncherNameBranchOutsideTheLaunchStage) {
  std::string names;
  for (const auto& t : stackLaunchers()) names += (names.empty() ? "" : "|") + std::regex_replace(t.name, std::regex("-"), "\\-");
  // `== "torchrun"`, `"spawn" !=`, `.rfind("builtin@"`, `.find("slurm")` ...
  const std::regex branch("(==|!=)\\s*\"(" + names + ")[@\"]|\"(" + names + ")\"\\s*(==|!=)|find\\(\"(" + names + ")[@\"]");
  const fs::path root(FL_SOURCE_DIR);
  int scanned = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "harness")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    const std::string rel = fs::relative(e.path(), root).string();
    if (rel.rfind("harness/launch/", 0) == 0 || rel.rfind("harness/model/stack_name", 0) == 0) continue;
    ++scanned;
    if (allowed().count(rel)) continue;
    std::istringstream in(slurp(e.path()));
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (std::regex_search(line, branch)) {
        ADD_FAILURE() << rel << ":" << n << ": branches on a launcher's name; use its traits (model/stack_name.h): "
                      << line;
      }
    }
  }
  EXPECT_GT(scanned, 50) << "the scan found almost no sources under " << root / "harness";
}

TEST(Layering, NoRankDiscoveryBranchOutsideTheTrackerFactory) {
  const fs::path root(FL_SOURCE_DIR);
  const std::string factory = "harness/supervise/rank_tracker.cc";
  int in_factory = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "harness")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
    const std::string rel = fs::relative(e.path(), root).string();
    if (rel.rfind("harness/launch/", 0) == 0) continue;
    std::istringstream in(slurp(e.path()));
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (line.find("RankDiscovery::") == std::string::npos) continue;
      if (rel == factory) {
        ++in_factory;
        continue;
      }
      ADD_FAILURE() << rel << ":" << n << ": branches on a launcher's way of leaving its ranks; ask its RankTracker "
                    << "(supervise/rank_tracker.h): " << line;
    }
  }
  EXPECT_GE(in_factory, 3) << factory << " no longer chooses the tracker by RankDiscovery: update this test";
}

// Every stage's CMake library (harness/NAME/CMakeLists.txt, reports/) and
// the fl::X libraries it declares in DEPS, PRIVATE_DEPS included.
std::map<std::string, std::set<std::string>> declaredDeps(const fs::path& root) {
  std::map<std::string, std::set<std::string>> deps;
  std::vector<std::pair<std::string, fs::path>> libs;
  for (const auto& e : fs::directory_iterator(root / "harness")) {
    if (e.is_directory()) libs.push_back({e.path().filename().string(), e.path() / "CMakeLists.txt"});
  }
  libs.push_back({"reports", root / "reports" / "CMakeLists.txt"});
  const std::regex call("fl_add_library\\(\\s*" "([a-z_]+)([^)]*)\\)");
  const std::regex dep("fl::([a-z_]+)");
  for (const auto& [folder, cmake] : libs) {
    const std::string text = slurp(cmake);
    for (std::sregex_iterator it(text.begin(), text.end(), call), end; it != end; ++it) {
      if ((*it)[1] != folder) continue;
      auto& d = deps[folder];
      const std::string args = (*it)[2];
      for (std::sregex_iterator jt(args.begin(), args.end(), dep); jt != end; ++jt) d.insert((*jt)[1]);
    }
  }
  return deps;
}

// An include of another stage's header must be a dependency the library
// declares (directly or through one it declares). The build catches it too
// (a library's include path holds its own folder alone,
// cmake/FaultlineTargets.cmake); this says which declaration is missing.
TEST(Layering, EveryIncludeOfAnotherStageIsADeclaredDependency) {
  const fs::path root(FL_SOURCE_DIR);
  const auto deps = declaredDeps(root);
  ASSERT_GT(deps.size(), 8u) << "the CMake files were not read";
  std::function<void(const std::string&, std::set<std::string>&)> closure = [&](const std::string& lib,
                                                                                std::set<std::string>& out) {
    auto it = deps.find(lib);
    if (it == deps.end()) return;
    for (const auto& d : it->second) {
      if (out.insert(d).second) closure(d, out);
    }
  };
  const std::regex include("#include \"(harness/([a-z_]+)|(reports))/");
  for (const auto& [lib, direct] : deps) {
    std::set<std::string> reach;
    closure(lib, reach);
    const fs::path dir = lib == "reports" ? root / "reports" : root / "harness" / lib;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".c")) continue;
      std::istringstream in(slurp(e.path()));
      int n = 0;
      for (std::string line; std::getline(in, line);) {
        ++n;
        std::smatch m;
        if (!std::regex_search(line, m, include)) continue;
        const std::string other = m[2].matched ? m[2].str() : m[3].str();
        if (other == lib || reach.count(other)) continue;
        ADD_FAILURE() << fs::relative(e.path(), root).string() << ":" << n << ": includes " << other
                      << " but fl::" << lib << " does not declare fl::" << other << " among its DEPS";
      }
    }
  }
}

TEST(Layering, LaunchersDocListsEveryLauncher) {
  const std::string doc = slurp(fs::path(FL_SOURCE_DIR) / "docs/LAUNCHERS.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& t : stackLaunchers()) {
    EXPECT_NE(doc.find(std::string("`") + t.name + "`"), std::string::npos) << "docs/LAUNCHERS.md does not name " << t.name;
  }
}

// CMake finds the framework stacks installed (their conformance.* entries)
// with a list of its own: it names every framework of the launcher table.
TEST(Layering, FrameworkStacksCmakeNamesEveryFramework) {
  const std::string cmake = slurp(fs::path(FL_SOURCE_DIR) / "cmake/FaultlineStacks.cmake");
  ASSERT_FALSE(cmake.empty());
  for (const auto& t : stackLaunchers()) {
    if (!t.framework) continue;
    EXPECT_NE(cmake.find(std::string("\"") + t.framework + "\""), std::string::npos)
        << "cmake/FaultlineStacks.cmake (faultline_framework_stacks) does not name " << t.framework;
  }
}

}  // namespace
}  // namespace faultline
