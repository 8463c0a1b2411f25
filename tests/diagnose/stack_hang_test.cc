// Hangs read from stack dumps: py-spy's format (real dumps, torch 1.13 and
// 2.13, tests/fixtures/stacks), where each main thread stands, and the
// stack_dump_hang rule on hand-built runs.
#include "harness/diagnose/stack_hang.h"

#include <gtest/gtest.h>

#include "harness/diagnose/analyze.h"
#include "tests/diagnose/event_builder.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

using testing::addRank;

std::vector<StackThread> dump(const std::string& name) {
  return parseStackDump(testing::readFile(testing::sourceDir() + "/tests/fixtures/stacks/" + name));
}

TEST(PySpyDump, ThreadsAndFramesInnermostFirst) {
  const auto threads = dump("pyspy113_native_queue_stalled.txt");
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_TRUE(threads[0].current) << "the thread whose id is the pid is the main thread";
  EXPECT_EQ(threads[0].header, "Thread 10808 (idle): \"MainThread\"");
  ASSERT_EQ(threads[0].frames.size(), 9u);
  EXPECT_EQ(threads[0].frames[0].function, "0x7f4d800d8f16");
  EXPECT_EQ(threads[0].frames[0].file, "") << "a native frame has no file:line";
  EXPECT_EQ(threads[0].frames[4].function, "Queue.get");
  EXPECT_EQ(threads[0].frames[4].file, "/usr/lib/python3.11/queue.py");
  EXPECT_EQ(threads[0].frames[4].line, 171);
  const PyFrame* f = userFrame(threads);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->file, "/work/wt-hangs/scenarios/python/diagnosis/rhythm.py");
  EXPECT_EQ(f->line, 67);
  EXPECT_EQ(f->function, "Prefetcher.next_batch");
}

TEST(PySpyDump, ShortFilenamesWithoutNative) {
  const auto threads = dump("pyspy113_python_allreduce_waiting.txt");
  ASSERT_EQ(threads.size(), 1u);
  ASSERT_EQ(threads[0].frames.size(), 2u);
  EXPECT_EQ(threads[0].frames[0].file, "torch/distributed/distributed_c10d.py");
  EXPECT_EQ(threads[0].frames[0].line, 1541);
  EXPECT_EQ(threads[0].frames[1].function, "<module>");
}

TEST(ReadDump, DdpBackwardWaitsInTheReducerOnBothTorches) {
  for (const char* name : {"pyspy113_native_ddp_waiting.txt", "pyspy213_native_ddp_waiting.txt"}) {
    const DumpReading d = readDump(dump(name));
    EXPECT_EQ(d.place, DumpPlace::kInCollective) << name;
    EXPECT_EQ(d.collective, "c10d::Reducer::finalize_backward") << name;
  }
}

TEST(ReadDump, NativeRanksFromEuStack) {
  DumpReading d = readDump(dump("eustack213_reference_allreduce_waiting.txt"));
  EXPECT_EQ(d.place, DumpPlace::kInCollective);
  EXPECT_EQ(d.collective, "c10d::Work::wait");
  d = readDump(dump("eustack213_reference_sleeping.txt"));
  EXPECT_EQ(d.place, DumpPlace::kElsewhere);
  ASSERT_TRUE(d.user);
  EXPECT_NE(d.user->file.find("reference-trainer/faults.cc"), std::string::npos) << d.user->file;
  EXPECT_EQ(d.user->function, "faultline::trainer::sleepForever()");
}

TEST(ReadDump, APythonAllReduceWaits) {
  const DumpReading d = readDump(dump("pyspy113_python_allreduce_waiting.txt"));
  EXPECT_EQ(d.place, DumpPlace::kInCollective);
  EXPECT_EQ(d.collective, "all_reduce (distributed_c10d.py:1541)");
}

TEST(ReadDump, ALockOrQueueWaitInUserCodeIsElsewhere) {
  DumpReading d = readDump(dump("pyspy113_native_queue_stalled.txt"));
  EXPECT_EQ(d.place, DumpPlace::kElsewhere);
  ASSERT_TRUE(d.user);
  EXPECT_EQ(d.user->line, 67);
  d = readDump(dump("pyspy213_native_event_stalled.txt"));
  EXPECT_EQ(d.place, DumpPlace::kElsewhere);
  ASSERT_TRUE(d.user);
  EXPECT_EQ(d.user->file, "/tmp/pyspy/t2.py");
  EXPECT_EQ(d.user->line, 9);
}

// faulthandler shows no native frames: under torch's autograd, DDP's wait in
// c10d::Reducer is invisible, so the place is unknown, not "elsewhere".
TEST(ReadDump, InsideTorchWithoutNativeFramesIsUnknown) {
  const auto threads = parseStackDump(
      "Current thread 0x00007f34be109740 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/autograd/__init__.py\", line 197 in backward\n"
      "  File \"/usr/lib/python3/dist-packages/torch/_tensor.py\", line 488 in backward\n"
      "  File \"/app/train.py\", line 40 in main\n");
  const DumpReading d = readDump(threads);
  EXPECT_EQ(d.place, DumpPlace::kUnknown);
  EXPECT_NE(d.why.find("inside torch at __init__.py:197 in backward"), std::string::npos) << d.why;
  EXPECT_EQ(readDump({}).place, DumpPlace::kUnknown);
  EXPECT_EQ(readDump({}).why, "no stack dump");
}

TEST(ReadDump, UserCodeInsideACollectiveWrapperIsElsewhere) {
  // The innermost user frame comes before any torch.distributed frame: the
  // user's code is what runs (a callback), not the collective's wait.
  const auto threads = parseStackDump(
      "Current thread 0x00007f34be109740 (most recent call first):\n"
      "  File \"/app/hooks.py\", line 7 in on_reduce\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 in all_reduce\n"
      "  File \"/app/train.py\", line 40 in main\n");
  const DumpReading d = readDump(threads);
  EXPECT_EQ(d.place, DumpPlace::kElsewhere);
  EXPECT_EQ(d.user->file, "/app/hooks.py");
}

// A run as the supervisor leaves an uninstrumented hang: every rank torn
// down, its dump in `stacks`.
RunInput hungRun(const std::vector<std::string>& dumps) {
  RunInput in;
  SupervisorRecord rec;
  rec.trigger.kind = TriggerKind::kHang;
  rec.trigger.detail = "no output and no exit from any rank for 5000 ms";
  in.supervisor = rec;
  for (size_t r = 0; r < dumps.size(); ++r) {
    RankInput& ri = addRank(in, static_cast<int>(r), std::nullopt, std::string("SIGTERM"));
    ri.killed_by_teardown = true;
    if (!dumps[r].empty()) ri.stacks = dump(dumps[r]);
  }
  return in;
}

TEST(StackDumpHang, NamesTheOneRankOutsideTheCollective) {
  const RunInput in = hungRun({"pyspy113_native_ddp_waiting.txt", "pyspy113_native_queue_stalled.txt",
                               "pyspy213_native_ddp_waiting.txt"});
  const Analysis a = analyse(in);
  auto c = stackDumpHang(a);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kHungCollective);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_EQ(c->root_rank, 1);
  EXPECT_EQ(c->cause.waiting_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1}));
  ASSERT_TRUE(c->cause.location);
  EXPECT_EQ(c->cause.location->line, 67);
  EXPECT_FALSE(c->cause.collective) << "a dump has no seq";
  EXPECT_EQ(c->cause.summary,
            "rank 1: hung collective: ranks 0, 2 wait in c10d::Reducer::finalize_backward (stack dumps); rank 1 is "
            "not in it (stack: rhythm.py:67 in Prefetcher.next_batch)");
  // The whole diagnosis: roles follow.
  const Diagnosis d = analyzeRun(in);
  ASSERT_TRUE(d.root_cause);
  EXPECT_EQ(d.root_cause->rank, 1);
}

TEST(StackDumpHang, ARankThatExitedCleanlyIsTheOneMissing) {
  RunInput in = hungRun({"pyspy113_native_ddp_waiting.txt", "", "pyspy213_native_ddp_waiting.txt"});
  in.ranks[1].killed_by_teardown = false;
  in.ranks[1].exit_code = 0;
  in.ranks[1].signal.reset();
  auto c = stackDumpHang(analyse(in));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.rank, 1);
  EXPECT_NE(c->cause.summary.find("rank 1 exited cleanly without entering it"), std::string::npos) << c->cause.summary;
}

TEST(StackDumpHang, EveryRankWaitingIsATimeoutThatSaysSo) {
  auto c = stackDumpHang(analyse(hungRun({"pyspy113_native_ddp_waiting.txt", "pyspy213_native_ddp_waiting.txt"})));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kTimeout);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_NE(c->cause.summary.find("every rank waits in a collective, none is elsewhere"), std::string::npos)
      << c->cause.summary;
}

TEST(StackDumpHang, TwoRanksElsewhereIsAmbiguous) {
  auto c = stackDumpHang(analyse(hungRun({"pyspy113_native_ddp_waiting.txt", "pyspy113_native_queue_stalled.txt",
                                          "pyspy213_native_event_stalled.txt"})));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kHungCollective);
  EXPECT_FALSE(c->cause.rank) << "no side without evidence";
  EXPECT_FALSE(c->root_rank);
  EXPECT_EQ(c->cause.missing_ranks, (std::vector<int>{1, 2}));
  EXPECT_NE(c->cause.summary.find("ambiguous, ranks 1, 2 are all outside the collective rank 0 waits in"),
            std::string::npos)
      << c->cause.summary;
}

TEST(StackDumpHang, AMissingDumpIsAmbiguousNotAGuess) {
  auto c = stackDumpHang(
      analyse(hungRun({"pyspy113_native_ddp_waiting.txt", "pyspy113_native_queue_stalled.txt", ""})));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kTimeout);
  EXPECT_FALSE(c->cause.rank);
  EXPECT_NE(c->cause.summary.find("ambiguous, rank 2 cannot be read"), std::string::npos) << c->cause.summary;
  EXPECT_NE(c->cause.summary.find("rank 2 unknown (no stack dump)"), std::string::npos) << c->cause.summary;
}

TEST(StackDumpHang, NoRankWaitingSaysWhereEachStands) {
  auto c = stackDumpHang(
      analyse(hungRun({"pyspy113_native_queue_stalled.txt", "pyspy213_native_event_stalled.txt"})));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->cause.kind, Kind::kTimeout);
  EXPECT_NE(c->cause.summary.find("no rank waits in a collective (rank 0 is at rhythm.py:67 in Prefetcher.next_batch; "
                                  "rank 1 is at t2.py:9 in <module>)"),
            std::string::npos)
      << c->cause.summary;
}

TEST(StackDumpHang, PassesWithoutAHangDumpsOrPeers) {
  RunInput in = hungRun({"pyspy113_native_ddp_waiting.txt", "pyspy113_native_queue_stalled.txt"});
  in.supervisor->trigger.kind = TriggerKind::kNone;
  EXPECT_FALSE(stackDumpHang(analyse(in)));
  EXPECT_FALSE(stackDumpHang(analyse(hungRun({"", ""}))));
  EXPECT_FALSE(stackDumpHang(analyse(hungRun({"pyspy113_native_queue_stalled.txt"})))) << "one rank: no collective";
}

}  // namespace
}  // namespace faultline::diagnose
