// The launch stage's pure parts: rank environment, PATH lookup, free port, run layout.
#include <gtest/gtest.h>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/run_layout.h"

namespace faultline::launch {
namespace {

TEST(RankEnv, CarriesTheContractVariables) {
  RunLayout layout("/runs/a");
  Environment base{{"PATH", "/usr/bin"}, {"FAULTLINE_EVENTS_DIR", "/stale"}, {"RANK", "9"}};
  auto env = rankEnvironment(base, layout, {2, 4, 29500, "id-1"});
  EXPECT_EQ(env["RANK"], "2");
  EXPECT_EQ(env["LOCAL_RANK"], "2");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(env["GROUP_RANK"], "0");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(env["TORCHELASTIC_ERROR_FILE"], "/runs/a/ranks/2/error.json");
  EXPECT_EQ(env["FAULTLINE_RUN_DIR"], "/runs/a");
  EXPECT_EQ(env["FAULTLINE_EVENTS"], "/runs/a/ranks/2/events.jsonl");
  EXPECT_EQ(env["FAULTLINE_RUN_ID"], "id-1");
  EXPECT_EQ(env["PATH"], "/usr/bin");
  EXPECT_FALSE(env.count("FAULTLINE_EVENTS_DIR"));
}

TEST(RankEnv, LauncherGetsEventsDirAndNoRankOfItsOwn) {
  RunLayout layout("/runs/b");
  Environment base{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"HOME", "/root"}};
  auto env = launcherEnvironment(base, layout, "id-2");
  EXPECT_FALSE(env.count("RANK"));
  EXPECT_FALSE(env.count("WORLD_SIZE"));
  EXPECT_EQ(env["FAULTLINE_RUN_DIR"], "/runs/b");
  EXPECT_EQ(env["FAULTLINE_EVENTS_DIR"], "/runs/b/ranks");
  EXPECT_EQ(env["HOME"], "/root");
}

TEST(RankEnv, InstrumentsGoFirstAndKeepWhatTheUserHad) {
  const Instruments in{"/fl/python", "/fl/libfaultline_preload.so"};
  auto env = withInstruments({{"PYTHONPATH", "/mine:/theirs"}, {"LD_PRELOAD", "libjemalloc.so libx.so"}}, in);
  EXPECT_EQ(env["PYTHONPATH"], "/fl/python:/mine:/theirs");
  EXPECT_EQ(env["LD_PRELOAD"], "/fl/libfaultline_preload.so:libjemalloc.so libx.so");
  // Unset before: just ours. Already first (a nested faultline): not twice.
  auto fresh = withInstruments({}, in);
  EXPECT_EQ(fresh["PYTHONPATH"], "/fl/python");
  EXPECT_EQ(fresh["LD_PRELOAD"], "/fl/libfaultline_preload.so");
  EXPECT_EQ(withInstruments(fresh, in), fresh);
  // An instrument that is off leaves its variable alone.
  auto off = withInstruments({{"PYTHONPATH", "/mine"}}, Instruments{});
  EXPECT_EQ(off["PYTHONPATH"], "/mine");
  EXPECT_FALSE(off.count("LD_PRELOAD"));
  EXPECT_FALSE(Instruments{}.any());
  EXPECT_TRUE(in.any());
}

TEST(RankEnv, FreePortIsAUsablePort) {
  auto port = findFreePort();
  ASSERT_TRUE(port) << port.error().str();
  EXPECT_GT(*port, 0);
  EXPECT_LT(*port, 65536);
}

TEST(ProcessSpawn, ResolvesThroughPathAndRejectsMissing) {
  auto sh = resolveExecutable("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh) << sh.error().str();
  EXPECT_EQ(sh->front(), '/');
  auto missing = resolveExecutable("faultline-no-such-tool", "/bin:/usr/bin");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::kBadUsage);
  EXPECT_FALSE(resolveExecutable("/etc/passwd", ""));  // not executable
}

TEST(RunLayout, NamesTheContractPaths) {
  RunLayout l("/o");
  EXPECT_EQ(l.rankStdout(3), "/o/ranks/3/stdout");
  EXPECT_EQ(l.rankStderr(3), "/o/ranks/3/stderr");
  EXPECT_EQ(l.rankStacks(0), "/o/ranks/0/stacks.txt");
  EXPECT_EQ(l.launcherStderr(), "/o/launcher/stderr");
  EXPECT_EQ(l.reportPath(), "/o/report.json");
  EXPECT_EQ(l.supervisorPath(), "/o/supervisor.json");
}

}  // namespace
}  // namespace faultline::launch
