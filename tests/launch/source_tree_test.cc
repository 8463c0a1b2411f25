// Process spawning lives in harness/launch: no posix_spawn elsewhere in the
// harness, the probe or the reference trainer (issue #15; tests may).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

TEST(SourceTree, NoPosixSpawnOutsideTheLaunchStage) {
  const char* src = std::getenv("FAULTLINE_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::vector<std::string> offenders;
  for (const char* top : {"harness", "reference-trainer"}) {
    for (const auto& e : fs::recursive_directory_iterator(fs::path(src) / top)) {
      if (!e.is_regular_file()) continue;
      const auto ext = e.path().extension();
      if (ext != ".cc" && ext != ".h" && ext != ".c" && ext != ".cpp") continue;
      const auto rel = fs::relative(e.path(), src).string();
      if (rel.rfind("harness/launch/", 0) == 0) continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      if (ss.str().find("posix_spawn") != std::string::npos) offenders.push_back(rel);
    }
  }
  EXPECT_TRUE(offenders.empty()) << "posix_spawn in " << ::testing::PrintToString(offenders);
}

}  // namespace
