// The test support library on small hostile children: every way a child ends
// is one Outcome, output is captured where asked, nothing is left behind.
#include "tests/support/process.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "tests/support/files.h"
#include "tests/support/leak_guard.h"
#include "tests/support/ports.h"
#include "tests/support/utf8_oracle.h"

namespace faultline::testing {
namespace {

SpawnOptions sh(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

TEST(SupportProcess, ExitCodeAndCapturedOutput) {
  LeakGuard guard;
  TempDir dir;
  auto o = sh("echo out; echo err >&2; exit 3");
  o.stdout_path = dir / "out";
  o.stderr_path = dir / "err";
  const Outcome r = runChild(o, std::nullopt, /*capture=*/true);
  EXPECT_TRUE(r.started());
  EXPECT_TRUE(r.exited());
  EXPECT_EQ(r.code(), 3);
  EXPECT_EQ(r.signal(), 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.str(), "exited 3");
}

TEST(SupportProcess, StderrIntoStdout) {
  LeakGuard guard;
  TempDir dir;
  auto o = sh("echo one; echo two >&2");
  o.stdout_path = dir / "log";
  o.stderr_to_stdout = true;
  EXPECT_EQ(runChild(o).code(), 0);
  EXPECT_EQ(readFile(dir / "log"), "one\ntwo\n");
}

TEST(SupportProcess, KilledBySignal) {
  LeakGuard guard;
  const Outcome r = runChild(sh("kill -SEGV $$"));
  EXPECT_FALSE(r.exited());
  EXPECT_EQ(r.code(), -1);
  EXPECT_EQ(r.signal(), SIGSEGV);
  EXPECT_NE(r.str().find("killed by"), std::string::npos) << r.str();
}

TEST(SupportProcess, AChildPastItsLimitIsKilledAndReaped) {
  LeakGuard guard;
  const auto t0 = std::chrono::steady_clock::now();
  const Outcome r = runChild(sh("trap '' TERM; exec sleep 30"), std::chrono::milliseconds(200));  // ignores SIGTERM, no grandchild
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal(), SIGKILL);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_NE(r.str().find("timed out"), std::string::npos) << r.str();
}

TEST(SupportProcess, TheEnvironmentIsOursWithChangesOrTheGivenOne) {
  LeakGuard guard;
  TempDir dir;
  ::setenv("FL_SUPPORT_DROP", "x", 1);
  ::setenv("FL_SUPPORT_KEEP", "y", 1);
  auto o = sh("echo \"$FL_SUPPORT_DROP|$FL_SUPPORT_KEEP|$FL_SUPPORT_SET|${FL_SUPPORT_EMPTY+set}\"");
  o.env = environmentWith({{"FL_SUPPORT_SET", "z"}, {"FL_SUPPORT_EMPTY", ""}},
                          [](std::string_view key) { return key == "FL_SUPPORT_DROP"; });
  o.stdout_path = dir / "out";
  EXPECT_EQ(runChild(o, std::nullopt, true).out, "|y|z|set\n");
  o.env = std::vector<std::string>{"FL_SUPPORT_SET=only"};
  EXPECT_EQ(runChild(o, std::nullopt, true).out, "||only|\n");
  ::unsetenv("FL_SUPPORT_DROP");
  ::unsetenv("FL_SUPPORT_KEEP");
}

TEST(SupportFiles, ReadFileIsBinaryAndEmptyWhenMissing) {
  TempDir dir;
  const std::string bytes("a\0\xff\r\n", 5);
  {
    auto o = sh("printf 'a\\000\\377\\r\\n'");
    o.stdout_path = dir / "bin";
    ASSERT_EQ(runChild(o).code(), 0);
  }
  EXPECT_EQ(readFile(dir / "bin"), bytes);
  EXPECT_EQ(readFile(dir / "missing"), "");
  EXPECT_TRUE(fileExists(dir / "bin"));
  EXPECT_FALSE(fileExists(dir / "missing"));
}

TEST(SupportPorts, AFreePortCanBeBound) {
  const int p = freePort();
  EXPECT_GT(p, 0);
  EXPECT_LT(p, 65536);
  EXPECT_EQ(freeTorchrunPortFlag().rfind("--master_port=", 0), 0u);
}

TEST(SupportUtf8Oracle, RejectsWhatUnicodeRejects) {
  EXPECT_TRUE(wellFormedUtf8("caf\xc3\xa9 \xf0\x9f\x98\x80"));
  EXPECT_FALSE(wellFormedUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(wellFormedUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(wellFormedUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(wellFormedUtf8("\xe2\x82"));          // truncated
}

}  // namespace
}  // namespace faultline::testing
