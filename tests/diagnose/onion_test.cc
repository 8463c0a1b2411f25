// Errors inside errors (docs/DIAGNOSIS.md section 1): the innermost error of
// every shape Python and torch print, and every wrapper kept as a layer. The
// texts are as torch 1.13 and 2.13 print them for scenarios/python/diagnosis/onion.py
// (whole captured runs: tests/fixtures/diagnose/onion_*, checked by fixture_test).
#include <gtest/gtest.h>

#include "harness/diagnose/error_file.h"
#include "harness/diagnose/native_error.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

using testing::fixture;
using testing::readFile;

// torch 2.13's rank 1 (the "[rank1]: " prefix), a DataLoader worker's chained error.
constexpr const char* kDataLoader213 =
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"/w/onion.py\", line 157, in train\n"
    "[rank1]:     for step, (xb, yb) in enumerate(loader):\n"
    "[rank1]:   File \"/opt/t/lib/python3.11/site-packages/torch/_utils.py\", line 794, in reraise\n"
    "[rank1]:     raise exception\n"
    "[rank1]: ValueError: Caught ValueError in DataLoader worker process 1.\n"
    "[rank1]: Original Traceback (most recent call last):\n"
    "[rank1]:   File \"/w/onion.py\", line 93, in decode\n"
    "[rank1]:     return raw.decode(\"utf-8\")\n"
    "[rank1]:            ^^^^^^^^^^^^^^^^^^^\n"
    "[rank1]: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte\n"
    "[rank1]: \n"
    "[rank1]: The above exception was the direct cause of the following exception:\n"
    "[rank1]: \n"
    "[rank1]: Traceback (most recent call last):\n"
    "[rank1]:   File \"/opt/t/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py\", line 374, in _worker_loop\n"
    "[rank1]:     data = fetcher.fetch(index)\n"
    "[rank1]:   File \"/w/onion.py\", line 83, in __getitem__\n"
    "[rank1]:     return self.decode(idx, b\"\\xff\\xfe record\")\n"
    "[rank1]:   File \"/w/onion.py\", line 95, in decode\n"
    "[rank1]:     raise ValueError(\"record %d is corrupt\" % idx) from e\n"
    "[rank1]: ValueError: record 67 is corrupt\n"
    "[rank1]: \n"
    "[rank0]: Traceback (most recent call last):\n";

// torch 2.13 saving a checkpoint onto a full disk: the first cause is
// raised and caught inside torch (its traceback has no user frame); the
// user's line is the torch.save call the outer layers pass through.
TEST(Onion, AFirstCauseInsideALibraryIsPlacedWhereTheUsersCodeWas) {
  const RankLog log = scanRankLog(
      "Traceback (most recent call last):\n"
      "  File \"/opt/t/lib/python3.11/site-packages/torch/serialization.py\", line 1003, in save\n"
      "    _save(\n"
      "  File \"/opt/t/lib/python3.11/site-packages/torch/serialization.py\", line 1312, in _save\n"
      "    zip_file.write_record(name, storage, num_bytes)\n"
      "OSError: [Errno 28] No space left on device\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/checkpoint_resume.py\", line 57, in save\n"
      "    torch.save(state, f)\n"
      "  File \"/opt/t/lib/python3.11/site-packages/torch/serialization.py\", line 1002, in save\n"
      "    with _open_zipfile_writer(f) as opened_zipfile:\n"
      "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 4096 vs 4048\n");
  ASSERT_EQ(log.errors.size(), 1u);
  const Evidence& e = log.errors[0];
  EXPECT_EQ(e.type, "OSError");
  ASSERT_TRUE(e.location);
  EXPECT_EQ(e.location->file, "/w/checkpoint_resume.py");
  EXPECT_EQ(e.location->line, 57);
  EXPECT_EQ(e.source_line, "torch.save(state, f)");
}

TEST(Onion, DataLoaderWorkerTracebackInsideTheMessage) {
  const RankLog log = scanRankLog(kDataLoader213);
  ASSERT_EQ(log.errors.size(), 1u);  // rank 0's truncated traceback names nothing
  const Evidence& e = log.errors[0];
  EXPECT_EQ(e.type, "UnicodeDecodeError");
  EXPECT_EQ(e.message, "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte");
  ASSERT_TRUE(e.location);
  EXPECT_EQ(e.location->file, "/w/onion.py");
  EXPECT_EQ(e.location->line, 93);
  const std::vector<std::string> outer{"ValueError: Caught ValueError in DataLoader worker process 1. (/w/onion.py:157)",
                                       "ValueError: record 67 is corrupt (/w/onion.py:95)"};
  EXPECT_EQ(e.chain, outer);
  EXPECT_FALSE(e.collateral);
}

TEST(Onion, EmbeddedChainParsesAsTheOuterTracebacksOwn) {
  std::vector<std::string_view> lines = splitLines(kDataLoader213);
  for (std::string_view& l : lines) l = stripRankPrefixes(l);
  auto chains = parsePythonTracebacks(lines);
  ASSERT_EQ(chains.size(), 2u);
  const PyTraceback& outer = chains[0].final();
  EXPECT_EQ(outer.message, "Caught ValueError in DataLoader worker process 1.");
  ASSERT_EQ(outer.embedded.size(), 2u);
  EXPECT_EQ(outer.embedded[0].type, "UnicodeDecodeError");
  EXPECT_EQ(outer.embedded[1].message, "record 67 is corrupt");
  EXPECT_TRUE(chains[1].final().truncated);
}

TEST(Onion, DirectCauseAndImplicitContextNameTheFirstError) {
  const std::string context =
      "Traceback (most recent call last):\n"
      "  File \"/w/onion.py\", line 107, in parse_schedule\n"
      "    return float(text)\n"
      "ValueError: could not convert string to float: 'fast'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/onion.py\", line 179, in strike\n"
      "    parse_schedule(\"fast\")\n"
      "  File \"/w/onion.py\", line 109, in parse_schedule\n"
      "    return text.to_float()\n"
      "AttributeError: 'str' object has no attribute 'to_float'\n";
  const RankLog log = scanRankLog(context);
  ASSERT_EQ(log.errors.size(), 1u);
  EXPECT_EQ(log.errors[0].type, "ValueError");
  EXPECT_EQ(log.errors[0].location->line, 107);
  EXPECT_EQ(log.errors[0].chain,
            std::vector<std::string>{"AttributeError: 'str' object has no attribute 'to_float' (/w/onion.py:109)"});
}

TEST(Onion, C10ErrorKeepsThePythonFrameAndTheNativeOrigin) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/w/onion.py\", line 182, in strike\n"
      "    head(xb)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/linear.py\", line 114, in forward\n"
      "    return F.linear(input, self.weight, self.bias)\n"
      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (16x8 and 16x4)\n"
      "Exception raised from meta at ./aten/src/ATen/native/LinearAlgebra.cpp:73 (most recent call first):\n"
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x9e (0x7f in /lib/x86_64-linux-gnu/libc10.so.1.13)\n"
      "frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned int, std::string const&) + 0x74 (0x7f in /lib/libc10.so)\n";
  const RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 1u);
  const Evidence& e = log.errors[0];
  EXPECT_EQ(e.type, "RuntimeError");
  EXPECT_EQ(e.message, "mat1 and mat2 shapes cannot be multiplied (16x8 and 16x4)");
  EXPECT_EQ(e.location->line, 182);
  ASSERT_TRUE(e.native_location);
  EXPECT_EQ(e.native_location->file, "./aten/src/ATen/native/LinearAlgebra.cpp");
  EXPECT_EQ(e.native_location->line, 73);
  EXPECT_EQ(e.native_function, "meta");
  EXPECT_EQ(describeNativeOrigin(e), "raised in C++ from meta at ./aten/src/ATen/native/LinearAlgebra.cpp:73");
}

TEST(Onion, ErrorFileTracebackIsPeeledTheSameWay) {
  const std::string json = R"({"message": {"message": "RuntimeError: config has no 'warmup' for this step",
    "extraInfo": {"py_callstack": "Traceback (most recent call last):\n  File \"/w/onion.py\", line 100, in read_config\n    return cfg[key]\nKeyError: 'warmup'\n\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"/w/onion.py\", line 102, in read_config\n    raise RuntimeError(\"config has no %r for this step\" % key) from e\nRuntimeError: config has no 'warmup' for this step\n", "timestamp": "1764645000"}}})";
  auto e = parseErrorFile(json);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->type, "KeyError");
  EXPECT_EQ(e->location->line, 100);
  EXPECT_EQ(e->chain, std::vector<std::string>{"RuntimeError: config has no 'warmup' for this step (/w/onion.py:102)"});
  EXPECT_EQ(e->origin, "error.json");
}

TEST(Onion, SpawnParentCarriesTheChildsChain) {
  // torch.multiprocessing.spawn's parent: the child's chain after "-- Process 1 terminated".
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/w/onion.py\", line 205, in main\n"
      "    mp.spawn(run_rank, args=(args.world, args), nprocs=args.world, join=True)\n"
      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 160, in join\n"
      "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
      "torch.multiprocessing.spawn.ProcessRaisedException: \n"
      "\n"
      "-- Process 1 terminated with the following error:\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/onion.py\", line 100, in read_config\n"
      "    return cfg[key]\n"
      "KeyError: 'warmup'\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap\n"
      "    fn(i, *args)\n"
      "  File \"/w/onion.py\", line 102, in read_config\n"
      "    raise RuntimeError(\"config has no %r for this step\" % key) from e\n"
      "RuntimeError: config has no 'warmup' for this step\n";
  auto chains = parsePythonTracebacks(text);
  ASSERT_EQ(chains.size(), 2u);
  EXPECT_EQ(chains[0].final().shortType(), "ProcessRaisedException");
  const Evidence e = evidenceFromChain(chains[1]);
  EXPECT_EQ(e.type, "KeyError");
  EXPECT_EQ(e.chain, std::vector<std::string>{"RuntimeError: config has no 'warmup' for this step (/w/onion.py:102)"});
}

TEST(Onion, ABareStopIterationIsHowItWasNoticed) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 10, in first_batch\n"
      "    return next(it)\n"
      "StopIteration\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 12, in first_batch\n"
      "    raise RuntimeError(\"the dataset is empty\")\n"
      "RuntimeError: the dataset is empty\n";
  const Evidence e = evidenceFromChain(parsePythonTracebacks(text).at(0));
  EXPECT_EQ(e.type, "RuntimeError");
  EXPECT_EQ(e.location->line, 12);
  EXPECT_TRUE(e.chain.empty());
  EXPECT_EQ(e.inner, std::vector<std::string>{"StopIteration (/w/train.py:10)"});
}

TEST(Onion, ACollateralLayerAnywhereKeepsTheRankCollateral) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 5, in step\n"
      "    dist.all_reduce(t)\n"
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:589] Connection reset by peer\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 9, in main\n"
      "    raise TrainingFailed(\"step 3\") from e\n"
      "TrainingFailed: step 3\n";
  EXPECT_TRUE(evidenceFromChain(parsePythonTracebacks(text).at(0)).collateral);
}

// torch 1.13, a DataLoader worker segfaulting as the main process takes a
// batch from it: the fd the worker shares the tensor through is gone. That is
// the rank's own worker, not a peer (as recorded in a spawn@1.13 run).
TEST(Onion, AConnectionLostToTheRanksOwnDataLoaderWorkerIsNotCollateral) {
  const std::string text = testing::kLostWorkerTraceback;
  const Evidence e = evidenceFromChain(parsePythonTracebacks(text).at(0));
  EXPECT_FALSE(e.collateral);
  EXPECT_EQ(e.type, "ConnectionResetError");
  // The same error from a collective is a peer's.
  const std::string peer =
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 5, in step\n"
      "    dist.all_reduce(t)\n"
      "ConnectionResetError: [Errno 104] Connection reset by peer\n";
  EXPECT_TRUE(evidenceFromChain(parsePythonTracebacks(peer).at(0)).collateral);
}

TEST(Onion, NestingIsBounded) {
  // A message that quotes "Original Traceback" in itself, deeper than any real wrapper goes.
  std::string text = "Traceback (most recent call last):\n  File \"/w/a.py\", line 1, in f\nValueError: Caught ValueError in DataLoader worker process 0.\n";
  for (int i = 0; i < 50; ++i) {
    text += "Original Traceback (most recent call last):\n  File \"/w/a.py\", line " + std::to_string(i + 2) +
            ", in f\nValueError: Caught ValueError in DataLoader worker process 0.\n";
  }
  const RankLog log = scanRankLog(text);
  ASSERT_FALSE(log.errors.empty());
  EXPECT_LE(log.errors[0].chain.size(), 8u);
}

}  // namespace
}  // namespace faultline::diagnose
