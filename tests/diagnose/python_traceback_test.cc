// Python tracebacks and stack dumps, on real captured output and edge cases.
#include "harness/diagnose/python_traceback.h"

#include <gtest/gtest.h>

#include "harness/diagnose/rank_log.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

using testing::fixture;
using testing::readFile;

TEST(PythonTraceback, NameErrorFromRealRank) {
  // Rank 1 of a real torchrun run (its per-rank log file, byte for byte).
  const std::string text = readFile(fixture("builtin_name_error/ranks/1/stderr"));
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  const PyTraceback& tb = chains[0].final();
  EXPECT_EQ(tb.type, "NameError");
  EXPECT_EQ(tb.message, "name 'c' is not defined");
  ASSERT_NE(tb.innermost(), nullptr);
  EXPECT_EQ(tb.innermost()->line, 20);
  EXPECT_EQ(tb.innermost()->function, "main");
  EXPECT_EQ(tb.innermost()->source, "b = c  # noqa: F821  the one-line bug");
  EXPECT_FALSE(tb.truncated);
}

TEST(PythonTraceback, EvidenceUsesInnermostUserFrame) {
  // Rank 0 dies inside torch's backward; the user frame is ddp_common.py.
  auto chains = parsePythonTracebacks(readFile(fixture("builtin_name_error/ranks/0/stderr")));
  ASSERT_EQ(chains.size(), 1u);
  Evidence e = evidenceFromChain(chains[0]);
  EXPECT_EQ(e.type, "RuntimeError");
  EXPECT_TRUE(e.collateral);
  ASSERT_TRUE(e.location);
  EXPECT_NE(e.location->file.find("ddp_common.py"), std::string::npos);
  EXPECT_EQ(e.location->line, 95);
}

TEST(PythonTraceback, ChainedDirectCause) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 10, in load\n"
      "    x = cfg['lr']\n"
      "KeyError: 'lr'\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 20, in <module>\n"
      "    load()\n"
      "  File \"/app/train.py\", line 12, in load\n"
      "    raise RuntimeError('bad config') from e\n"
      "RuntimeError: bad config\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  ASSERT_EQ(chains[0].tracebacks.size(), 2u);
  EXPECT_EQ(chains[0].original().type, "KeyError");
  EXPECT_EQ(chains[0].final().type, "RuntimeError");
  Evidence e = evidenceFromChain(chains[0]);
  EXPECT_EQ(e.type, "KeyError");
  EXPECT_EQ(e.message, "'lr'");
  EXPECT_EQ(e.location->line, 10);
  ASSERT_EQ(e.chain.size(), 1u);
  EXPECT_EQ(e.chain[0], "RuntimeError: bad config (/app/train.py:12)");  // each wrapper with its own line
}

TEST(PythonTraceback, ChainedDuringHandlingKeepsCollateralOrigin) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 5, in step\n"
      "    dist.all_reduce(t)\n"
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Connection reset by peer\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 9, in main\n"
      "    cleanup()\n"
      "ValueError: cleanup failed\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  Evidence e = evidenceFromChain(chains[0]);
  EXPECT_EQ(e.type, "RuntimeError");
  EXPECT_TRUE(e.collateral);
}

TEST(PythonTraceback, SeparateTracebacksAreSeparateChains) {
  const std::string text =
      "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nValueError: one\n"
      "some other output\n"
      "Traceback (most recent call last):\n  File \"b.py\", line 2, in <module>\nTypeError: two\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 2u);
  EXPECT_EQ(chains[1].final().type, "TypeError");
}

TEST(PythonTraceback, TruncatedHasNoType) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 20, in <module>\n"
      "    main()\n"
      "  File \"/app/train.py\", line 1";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_TRUE(chains[0].final().truncated);
  EXPECT_TRUE(chains[0].final().type.empty());
  EXPECT_TRUE(scanRankLog(text).errors.empty());  // nothing to name
}

TEST(PythonTraceback, NonUtf8AndGarbageDoNotBreakIt) {
  const std::string text =
      std::string("\xFF\xFE garbage \x00 bytes\n", 19) +
      "Traceback (most recent call last):\n"
      "  File \"/app/tr\xE9in.py\", line 3, in <module>\n"
      "ValueError: bad \xFF value\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].final().type, "ValueError");
  EXPECT_EQ(chains[0].final().innermost()->line, 3);
}

TEST(PythonTraceback, SyntaxErrorLocation) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/run.py\", line 3, in <module>\n"
      "    import train\n"
      "  File \"/app/train.py\", line 7\n"
      "    def f(:\n"
      "          ^\n"
      "SyntaxError: invalid syntax\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].final().type, "SyntaxError");
  EXPECT_EQ(chains[0].final().innermost()->file, "/app/train.py");
  EXPECT_EQ(chains[0].final().innermost()->line, 7);
}

TEST(PythonTraceback, MultiLineMessageOfChildFailedError) {
  auto chains = parsePythonTracebacks(readFile(fixture("torchrun_name_error/launcher/stderr")));
  ASSERT_FALSE(chains.empty());
  const PyTraceback& tb = chains.back().final();
  EXPECT_EQ(tb.shortType(), "ChildFailedError");
  EXPECT_NE(tb.message.find("FAILED"), std::string::npos);
  EXPECT_NE(tb.full_message.find("Root Cause (first observed failure):"), std::string::npos);
}

TEST(PythonTraceback, SpawnProcessIndex) {
  EXPECT_EQ(spawnProcessIndex("-- Process 1 terminated with the following error:"), 1);
  EXPECT_EQ(spawnProcessIndex("-- Process 12 terminated with the following error:"), 12);
  EXPECT_FALSE(spawnProcessIndex("-- Process x terminated"));
}

TEST(StackDump, FaulthandlerFromRealHang) {
  // SIGUSR1 -> faulthandler.dump_traceback of the rank that never entered the collective.
  auto threads = parseStackDump(readFile(fixture("builtin_hang/ranks/1/stacks.txt")));
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_TRUE(threads[0].current);
  ASSERT_EQ(threads[0].frames.size(), 4u);
  EXPECT_EQ(threads[0].frames[0].function, "wait");  // innermost first
  const PyFrame* f = userFrame(threads);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->file.find("hang.py"), std::string::npos);
  EXPECT_EQ(f->line, 23);
}

TEST(StackDump, GdbBacktrace) {
  const std::string text =
      "Thread 2 (Thread 0x7f00 (LWP 12)):\n"
      "#0  0x00007f in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "Thread 1 (Thread 0x7f01 (LWP 11)):\n"
      "#0  0x00007f in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6\n"
      "#1  0x0000 in gloo::transport::tcp::UnboundBuffer::waitRecv (this=0x1) at gloo/unbound_buffer.cc:81\n"
      "#2  0x0000 in trainer::Step::run (this=0x2) at /src/trainer/step.cc:42\n";
  auto threads = parseStackDump(text);
  ASSERT_EQ(threads.size(), 2u);
  ASSERT_EQ(threads[1].frames.size(), 3u);
  EXPECT_EQ(threads[1].frames[2].function, "trainer::Step::run");
  EXPECT_EQ(threads[1].frames[2].line, 42);
  const PyFrame* f = userFrame(threads);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->file, "/src/trainer/step.cc");  // gloo is library code
}

TEST(StackDump, EuStackBacktrace) {
  // `eu-stack -s -p PID` of a reference-trainer rank waiting in a Gloo allreduce.
  const std::string text =
      "PID 28617 - process\n"
      "TID 28617:\n"
      "#0  0x00007f51d6ca3f16 __futex_abstimed_wait_common\n"
      "    ./nptl/futex-internal.c:57:12\n"
      "#1  0x00007f51d6ca65d8 pthread_cond_wait@@GLIBC_2.3.2\n"
      "    ./nptl/pthread_cond_wait.c:503:10\n"
      "#2  0x00007f51db2c2843 c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >)\n"
      "#3  0x00005645df4b7bb5 faultline::trainer::(anonymous namespace)::C10dComm<c10d::ProcessGroupGloo>::"
      "allreduceSum(at::Tensor&)\n"
      "    ../reference-trainer/comm.cc:70:19\n"
      "#4  0x00005645df4bcb02 faultline::trainer::runTraining(faultline::trainer::Options const&, "
      "faultline::trainer::RankEnv const&)\n"
      "    ../reference-trainer/trainer.cc:328:26\n"
      "#5  0x00005645df4b5bda main\n"
      "    ../reference-trainer/main.cc:38:33\n"
      "TID 28620:\n"
      "#0  0x00007f51d6d1a26f __poll\n"
      "#1  0x00007f51db27e8f3\n";
  auto threads = parseStackDump(text);
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_TRUE(threads[0].current);  // the main thread: TID == PID
  EXPECT_FALSE(threads[1].current);
  ASSERT_EQ(threads[0].frames.size(), 6u);
  EXPECT_EQ(threads[0].frames[1].function, "pthread_cond_wait@@GLIBC_2.3.2");
  EXPECT_EQ(threads[0].frames[2].function,
            "c10d::Work::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >)");
  EXPECT_TRUE(threads[0].frames[2].file.empty());
  EXPECT_EQ(threads[0].frames[3].file, "../reference-trainer/comm.cc");
  EXPECT_EQ(threads[0].frames[3].line, 70);
  EXPECT_EQ(threads[1].frames[1].function, "0x00007f51db27e8f3");  // no symbol
  const PyFrame* f = userFrame(threads);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->file, "../reference-trainer/comm.cc");  // nptl is library code
  EXPECT_EQ(f->line, 70);
}

TEST(StackDump, EmptyAndGarbage) {
  EXPECT_TRUE(parseStackDump("").empty());
  EXPECT_TRUE(parseStackDump("\xFF\xFE\n  File \"x\", line 1 in f\n").empty());  // frames before any thread
  EXPECT_EQ(userFrame({}), nullptr);
}

}  // namespace
}  // namespace faultline::diagnose
