// `faultline stacks` and the versioned stacks as a user meets them: every
// torch install on this machine gives builtin, torchrun, launch and spawn
// stacks that work, and the builtin launcher gives a rank every variable the
// real torchrun of each version gives it.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/supervise/test_support.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;

using faultline::testing::freePort;
using faultline::testing::readFile;

int shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class StacksCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fl_stacks_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // `faultline stacks --json`, asked once for the tests that read it (it
  // starts a job on every stack: 18 s on 2 cores).
  nlohmann::json stacks() {
    static const nlohmann::json list = [this] {
      const fs::path log = dir_ / "stacks.json";
      const int rc = shell(std::string(FL_FAULTLINE) + " stacks --json > " + log.string() + " 2>" + (dir_ / "stacks.err").string());
      EXPECT_EQ(rc, 0) << readFile(dir_ / "stacks.err");
      return nlohmann::json::parse(readFile(log));
    }();
    return list;
  }

  fs::path dir_;
};

// ci/deps installs Debian's torch and the current 2.x side by side: both are stacks under test.
TEST_F(StacksCli, EveryTorchGivesFourWorkingStacks) {
  const auto list = stacks();
  std::set<std::string> versions;
  for (const auto& s : list) {
    if (s["torch"].is_string()) versions.insert(s["torch"].get<std::string>());
  }
  ASSERT_GE(versions.size(), 2u) << "expected Debian's torch and the venv's (run ci/deps): " << list.dump(2);
  for (const auto& s : list) {
    const std::string name = s["stack"];
    if (name == "external") continue;
    if (name.rfind("launch@", 0) == 0 && !s["works"].get<bool>()) {
      // Allowed only for the stated reason: that torch no longer ships the module.
      EXPECT_NE(s["problem"].get<std::string>().find("no longer ships torch.distributed.launch"), std::string::npos) << s.dump();
      continue;
    }
    EXPECT_TRUE(s["works"].get<bool>()) << s.dump();
  }
  for (const char* launcher : {"builtin@", "torchrun@", "spawn@"}) {
    int n = 0;
    for (const auto& s : list) n += s["stack"].get<std::string>().rfind(launcher, 0) == 0;
    EXPECT_EQ(n, static_cast<int>(versions.size())) << launcher;
  }
}

TEST_F(StacksCli, TableNamesEachStackAndABadStackNameIsAUsageError) {
  EXPECT_EQ(shell(std::string(FL_FAULTLINE) + " stacks > " + (dir_ / "t").string() + " 2>&1"), 0);
  const std::string table = readFile(dir_ / "t");
  EXPECT_NE(table.find("torchrun@"), std::string::npos) << table;
  EXPECT_NE(table.find("external"), std::string::npos) << table;
  EXPECT_EQ(shell(std::string(FL_FAULTLINE) + " run x.toml --stack torchrun@2 > " + (dir_ / "u").string() + " 2>&1"), 2);
  EXPECT_NE(readFile(dir_ / "u").find("not a torch version MAJOR.MINOR"), std::string::npos) << readFile(dir_ / "u");
}

// Every variable torchrun sets for its workers, the builtin launcher sets too,
// so a script that reads ROLE_RANK or TORCHELASTIC_RUN_ID runs unchanged.
TEST_F(StacksCli, BuiltinGivesEveryVariableEachTorchrunGives) {
  const std::string script = std::string(FL_SOURCE_DIR) + "/tests/fixtures/python/dump_env.py";
  const fs::path builtin = dir_ / "builtin";
  fs::create_directories(builtin);
  ASSERT_EQ(shell("DUMP_DIR=" + builtin.string() + " " + FL_FAULTLINE + " exec --nproc 2 -o " + (dir_ / "b").string() +
                  " -- /usr/bin/python3 " + script + " > " + (dir_ / "b.log").string() + " 2>&1"),
            0)
      << readFile(dir_ / "b.log");
  const auto builtin_env = nlohmann::json::parse(readFile(builtin / "rank1.json"));
  int checked = 0;
  for (const auto& s : stacks()) {
    const std::string name = s["stack"];
    if (name.rfind("torchrun@", 0) != 0 || !s["works"].get<bool>()) continue;
    const fs::path out = dir_ / name;
    fs::create_directories(out);
    // torchrun straight, not under faultline: its own environment is the reference.
    const std::string cmd = "env -u RANK -u WORLD_SIZE DUMP_DIR=" + out.string() + " " + s["program"].get<std::string>() +
                            " --nproc_per_node=2 --master_port=" + std::to_string(freePort()) + " --redirects 2 --tee 2 --log_dir " + (out / "logs").string() +
                            " " + script + " > " + (out / "log").string() + " 2>&1";
    ASSERT_EQ(shell(cmd), 0) << name << ": " << readFile(out / "log");
    const auto env = nlohmann::json::parse(readFile(out / "rank1.json"));
    for (auto it = env.begin(); it != env.end(); ++it) {
      if (std::getenv(it.key().c_str())) continue;  // inherited, not torchrun's
      EXPECT_TRUE(builtin_env.contains(it.key())) << name << " sets " << it.key() << "=" << it.value().dump()
                                                  << ", the builtin launcher does not";
    }
    for (const char* k : {"ROLE_RANK", "ROLE_WORLD_SIZE", "RANK", "LOCAL_RANK", "GROUP_RANK"}) {
      if (env.contains(k)) {
        EXPECT_EQ(env[k], builtin_env[k]) << name << " " << k;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 2) << "expected a torchrun of each installed torch";
}

// docs/failure-modes.md is generated (`faultline suite scenarios --catalog`)
// and committed: it must have a row for every scenario of the catalog and a
// column for every stack this machine drives. Timing cells may differ from run
// to run; the rows and columns may not.
TEST_F(StacksCli, FailureModeCatalogHasEveryScenarioAndEveryStack) {
  const std::string doc = readFile(fs::path(FL_SOURCE_DIR) / "docs/failure-modes.md");
  ASSERT_FALSE(doc.empty()) << "docs/failure-modes.md is missing";
  std::set<std::string> columns, rows;
  std::istringstream lines(doc);
  bool in_matrix = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| scenario | builtin", 0) == 0 || (line.rfind("| scenario |", 0) == 0 && line.find('@') != std::string::npos)) {
      in_matrix = true;
      std::istringstream cells(line);
      for (std::string cell; std::getline(cells, cell, '|');) {
        const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
        if (b != std::string::npos) columns.insert(cell.substr(b, e - b + 1));
      }
      continue;
    }
    if (!in_matrix) continue;
    if (line.rfind("|", 0) != 0) break;  // the matrix ends at its first non-table line
    const auto end = line.find(" |", 2);
    if (line.rfind("|---", 0) != 0 && end != std::string::npos) rows.insert(line.substr(2, end - 2));
  }
  ASSERT_FALSE(columns.empty()) << "no stack x scenario matrix in docs/failure-modes.md";
  for (const auto& s : stacks()) {
    const std::string name = s["stack"];
    if (name == "external") continue;
    EXPECT_TRUE(columns.count(name)) << "docs/failure-modes.md has no column " << name;
  }
  const fs::path list = dir_ / "list";
  ASSERT_EQ(shell(std::string(FL_FAULTLINE) + " list " + FL_SOURCE_DIR + "/scenarios > " + list.string() + " 2>&1"), 0);
  std::istringstream names(readFile(list));
  int scenarios = 0;
  for (std::string line; std::getline(names, line);) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.empty() || line.find(" scenarios") == line.size() - 10) continue;  // the closing count
    ++scenarios;
    EXPECT_TRUE(rows.count(name)) << "docs/failure-modes.md has no row for " << name
                                  << " (regenerate: faultline suite scenarios --catalog docs/failure-modes.md)";
  }
  EXPECT_GE(scenarios, 20);
}

}  // namespace
}  // namespace faultline
