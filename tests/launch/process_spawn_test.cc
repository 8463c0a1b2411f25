// spawnProcess with real children: what the child starts with (default signal
// dispositions, an empty mask, its own process group, files as stdio), that
// the harness's own mask survives the spawn, and that a failed exec comes back
// as an error naming the step.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "harness/launch/process_spawn.h"
#include "tests/support/files.h"

namespace faultline::launch {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/fl-spawn-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)!std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

using faultline::testing::readFile;

// The value of a "Key:\tvalue" line of /proc/PID/status text.
std::string statusField(const std::string& status, const std::string& key) {
  std::istringstream in(status);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      const size_t v = line.find_first_not_of(" \t", key.size() + 1);
      return v == std::string::npos ? "" : line.substr(v);
    }
  }
  return "";
}

int waitExit(pid_t pid) {
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ProcessSpawn, ChildStartsWithDefaultSignalsEmptyMaskAndOwnGroup) {
  TempDir dir;
  // A harness state the child must not inherit: SIGTERM ignored, SIGUSR1 blocked.
  struct sigaction ign{}, old_term{};
  ign.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGTERM, &ign, &old_term), 0);
  sigset_t usr1, old_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &usr1, &old_mask), 0);

  SpawnSpec spec;
  spec.executable = "/bin/sh";
  spec.argv = {"sh", "-c", "cat /proc/self/status; echo pgid $(cut -d' ' -f5 /proc/$$/stat) pid $$; echo err >&2"};
  spec.stdout_path = dir / "out";
  spec.stderr_path = dir / "err";
  Placement placement;
  placement.pdeath_signal = SIGKILL;
  auto pid = spawnProcess(spec, placement);

  sigset_t now;
  ASSERT_EQ(::pthread_sigmask(SIG_SETMASK, &old_mask, &now), 0);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ASSERT_TRUE(pid) << pid.error().str();
  EXPECT_EQ(waitExit(*pid), 0);
  EXPECT_TRUE(sigismember(&now, SIGUSR1)) << "the spawn changed the harness's signal mask";
  EXPECT_FALSE(sigismember(&now, SIGTERM)) << "the spawn left signals blocked in the harness";

  const std::string out = readFile(dir / "out");
  EXPECT_EQ(statusField(out, "SigBlk"), "0000000000000000") << out;
  EXPECT_EQ(statusField(out, "SigIgn"), "0000000000000000") << out;
  EXPECT_NE(out.find("pgid " + std::to_string(*pid) + " pid " + std::to_string(*pid)), std::string::npos) << out;
  EXPECT_EQ(readFile(dir / "err"), "err\n");
}

TEST(ProcessSpawn, FailedExecIsAnErrorNamingTheStepAndLeavesNoChild) {
  TempDir dir;
  // Executable by its mode, but no format the kernel can run: execve fails in the child.
  const std::string bogus = dir / "bogus";
  std::ofstream(bogus) << "\x7f" << "ELF garbage";
  ASSERT_EQ(::chmod(bogus.c_str(), 0755), 0);
  SpawnSpec spec;
  spec.executable = bogus;
  spec.argv = {bogus};
  spec.stdout_path = dir / "out";
  spec.stderr_path = dir / "out";
  auto pid = spawnProcess(spec, Placement{});
  ASSERT_FALSE(pid);
  EXPECT_EQ(pid.error().code, ErrorCode::kSystem);
  EXPECT_NE(pid.error().str().find("execve failed"), std::string::npos) << pid.error().str();
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1) << "the failed child was not reaped";
}

TEST(ProcessSpawn, ManyChildrenStartedBackToBackAllRun) {
  TempDir dir;
  std::vector<PendingSpawn> pending;
  for (int i = 0; i < 16; ++i) {
    SpawnSpec spec;
    spec.executable = "/bin/sh";
    spec.argv = {"sh", "-c", "echo " + std::to_string(i)};
    spec.stdout_path = dir / ("out" + std::to_string(i));
    spec.stderr_path = spec.stdout_path;
    auto p = startSpawn(spec, Placement{});
    ASSERT_TRUE(p) << p.error().str();
    pending.push_back(*p);
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    auto pid = finishSpawn(pending[i]);
    ASSERT_TRUE(pid) << pid.error().str();
    EXPECT_EQ(waitExit(*pid), 0);
    EXPECT_EQ(readFile(dir / ("out" + std::to_string(i))), std::to_string(i) + "\n");
  }
}

}  // namespace
}  // namespace faultline::launch
