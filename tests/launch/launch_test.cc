// The launch stage's pure parts: rank environment, PATH lookup, free port, run layout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include <gtest/gtest.h>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/run_layout.h"

namespace faultline::launch {
namespace {

TEST(RankEnv, CarriesTheContractVariables) {
  RunLayout layout("/runs/a");
  Environment base{{"PATH", "/usr/bin"}, {"FAULTLINE_EVENTS_DIR", "/stale"}, {"RANK", "9"}, {"FAULTLINE_RANK", "9"}};
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
  EXPECT_FALSE(env.count("FAULTLINE_RANK"));
}

TEST(RankEnv, CarriesTorchrunTwoXWorkerVariables) {
  RunLayout layout("/runs/a");
  auto env = rankEnvironment({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"}}, layout, {1, 3, 29500, "id-7"});
  EXPECT_EQ(env["ROLE_NAME"], "default");
  EXPECT_EQ(env["ROLE_RANK"], "1");
  EXPECT_EQ(env["ROLE_WORLD_SIZE"], "3");
  EXPECT_EQ(env["GROUP_WORLD_SIZE"], "1");
  EXPECT_EQ(env["TORCHELASTIC_RUN_ID"], "id-7");
  EXPECT_EQ(env["TORCHELASTIC_RESTART_COUNT"], "0");
  EXPECT_EQ(env["TORCHELASTIC_MAX_RESTARTS"], "0");
  // rank 0 hosts the store itself: "True" would make every rank a client.
  EXPECT_EQ(env["TORCHELASTIC_USE_AGENT_STORE"], "False");
  EXPECT_EQ(env["TORCH_NCCL_ASYNC_ERROR_HANDLING"], "3");  // the user's value stays
  EXPECT_EQ(env["NCCL_ASYNC_ERROR_HANDLING"], "1");
  EXPECT_EQ(env["OMP_NUM_THREADS"], "1");
  EXPECT_EQ(rankEnvironment({{"OMP_NUM_THREADS", "4"}}, layout, {0, 2, 1, "x"})["OMP_NUM_THREADS"], "4");
  EXPECT_FALSE(rankEnvironment({}, layout, {0, 1, 1, "x"}).count("OMP_NUM_THREADS"));
}

TEST(RankEnv, LauncherGetsEventsDirAndNoRankOfItsOwn) {
  RunLayout layout("/runs/b");
  Environment base{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"ROLE_RANK", "3"}, {"HOME", "/root"}};
  auto env = launcherEnvironment(base, layout, "id-2");
  EXPECT_FALSE(env.count("RANK"));
  EXPECT_FALSE(env.count("WORLD_SIZE"));
  EXPECT_FALSE(env.count("ROLE_RANK"));
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

// Two faultline runs at once never get the same port: each holds it until it
// ends (a catalog once ran two slurm jobs on one master port, each rank 0
// seeing the other's store). Another process's reservation is honoured too.
TEST(RankEnv, AFreePortIsReservedUntilTheRunEnds) {
  auto port = findFreePort();
  ASSERT_TRUE(port) << port.error().str();
  EXPECT_FALSE(reservePort(*port)) << "held by this process's findFreePort";
  auto again = findFreePort();
  ASSERT_TRUE(again);
  EXPECT_NE(*again, *port);
  // A child (another run) cannot take either; after it ends, its own are free again.
  int child_port = 0;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const bool took_ours = reservePort(*port) || reservePort(*again);
    auto own = findFreePort();
    const int msg[2] = {took_ours ? 1 : 0, own ? *own : 0};
    (void)!::write(fds[1], msg, sizeof msg);
    ::_exit(0);
  }
  ::close(fds[1]);
  int msg[2] = {-1, 0};
  ASSERT_EQ(::read(fds[0], msg, sizeof msg), static_cast<ssize_t>(sizeof msg));
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(msg[0], 0) << "the child reserved a port this process holds";
  child_port = msg[1];
  ASSERT_GT(child_port, 0);
  EXPECT_TRUE(reservePort(child_port)) << "the child's reservation ended with it";
}

// Below the kernel's ephemeral range, so that no bind(0) (Gloo's pairs) or
// connect() of a run beside this one takes it before the rendezvous listens:
// a CI run once lost its master port that way (EADDRINUSE in TCPStore).
TEST(RankEnv, FreePortIsBelowTheEphemeralRangeAndCanBeListenedOn) {
  int low = 32768, high = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> low >> high;
  std::set<int> seen;
  for (int i = 0; i < 20; ++i) {
    auto port = findFreePort();
    ASSERT_TRUE(port) << port.error().str();
    EXPECT_GE(*port, 20000);
    EXPECT_LT(*port, low);
    seen.insert(*port);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(*port));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << *port;
    EXPECT_EQ(::listen(fd, 1), 0);
    ::close(fd);
  }
  EXPECT_GT(seen.size(), 10u) << "picked at random, so two runs at once rarely ask for the same one";
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
