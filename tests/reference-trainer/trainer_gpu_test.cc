// The NCCL path on a GPU machine: 2 ranks over ProcessGroupNCCL on CUDA.
// Without a GPU (or a LibTorch without CUDA, or fewer GPUs than ranks) it
// reports itself skipped, with the reason.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/reference-trainer/rank_launcher.h"

namespace faultline::testing {
namespace {

// GPUs nvidia-smi lists ("GPU 0: NVIDIA H200 (UUID: ...)"); 0 when it cannot run.
int gpuCount() {
  FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return 0;
  int n = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) n += std::strncmp(line, "GPU ", 4) == 0;
  ::pclose(p);
  return n;
}

// Why this machine cannot run `ranks` ranks on GPUs of their own; "" when it can.
std::string whyNoGpu(int ranks) {
  // Set per trainer by CMake: whether the LibTorch it was built against has CUDA.
  const char* nccl = std::getenv("FAULTLINE_TEST_HAVE_NCCL");
  if (!nccl || std::string(nccl) != "1") return "this trainer's LibTorch was built without CUDA/NCCL";
  if (::access("/dev/nvidia0", F_OK) != 0 && ::access("/dev/nvidiactl", F_OK) != 0) return "no NVIDIA GPU device";
  const int gpus = gpuCount();
  if (gpus == 0) return "nvidia-smi finds no GPU";
  if (gpus < ranks) {
    return std::to_string(gpus) + " GPU(s), the test needs " + std::to_string(ranks) + " (one per rank)";
  }
  return "";
}

void checkRunsOverNccl(int ranks) {
  LaunchOptions o;
  o.world_size = ranks;
  o.args = {"--steps", "20", "--device", "cuda", "--backend", "nccl", "--fingerprint-every", "5"};
  auto l = launchRanks("gpu" + std::to_string(ranks), o);
  std::map<long, std::string> first;
  for (const auto& r : l.ranks) {
    ASSERT_TRUE(r.exitedWith(0)) << r.err;
    EXPECT_EQ(r.eventsOf("start").at(0)["backend"], "nccl");
    EXPECT_EQ(r.eventsOf("start").at(0)["device"], "cuda");
    std::map<long, std::string> fp;
    for (const auto& e : r.eventsOf("fingerprint")) fp[e["step"]] = e["hash"];
    if (r.rank == 0) first = fp;
    EXPECT_EQ(fp, first);
  }
}

// A reason to skip, or "" to run. On the nightly GPU job
// (FAULTLINE_GPU_REQUIRED=1) a CUDA trainer that finds no GPU at all is a
// failure: the runner is broken, and a green skip would hide it. Too few GPUs
// for the test, or a CPU-only trainer, still skip.
std::string skipReason(int ranks) {
  const std::string why = whyNoGpu(ranks);
  const char* required = std::getenv("FAULTLINE_GPU_REQUIRED");
  const char* nccl = std::getenv("FAULTLINE_TEST_HAVE_NCCL");
  if (!why.empty() && required && std::string(required) == "1" && nccl && std::string(nccl) == "1" &&
      !whyNoGpu(1).empty()) {
    ADD_FAILURE() << "FAULTLINE_GPU_REQUIRED=1 but " << why;
  }
  return why;
}

// One GPU is enough: a world of one over NCCL (communicator, collectives, teardown).
TEST(TrainerGpu, OneRankOverNccl) {
  if (auto why = trainerUnavailable(); !why.empty()) GTEST_SKIP() << why;
  if (auto why = skipReason(1); !why.empty()) GTEST_SKIP() << "unsupported: " << why;
  checkRunsOverNccl(1);
}

// Each rank takes cuda:LOCAL_RANK, so two ranks need two GPUs.
TEST(TrainerGpu, TwoRanksOverNccl) {
  if (auto why = trainerUnavailable(); !why.empty()) GTEST_SKIP() << why;
  if (auto why = skipReason(2); !why.empty()) GTEST_SKIP() << "unsupported: " << why;
  checkRunsOverNccl(2);
}

// Without a GPU, the NCCL path still runs as far as c10d's own
// ProcessGroupNCCL, which refuses for want of a GPU: the proof that a CUDA
// trainer has NCCL compiled in, on every build. A CPU trainer says it has none.
TEST(TrainerGpu, NcclBackendIsCompiledInWhereLibTorchHasCuda) {
  if (auto why = trainerUnavailable(); !why.empty()) GTEST_SKIP() << why;
  if (gpuCount() > 0) GTEST_SKIP() << "a GPU is present: the runs over NCCL above check the path";
  const char* nccl = std::getenv("FAULTLINE_TEST_HAVE_NCCL");
  const bool cuda = nccl && std::string(nccl) == "1";
  LaunchOptions o;
  o.world_size = 1;
  o.deadline = std::chrono::milliseconds(120000);
  o.args = {"--steps", "2", "--device", cuda ? "cuda" : "cpu", "--backend", "nccl"};
  auto l = launchRanks("nccl-compiled", o);
  ASSERT_EQ(l.ranks.size(), 1u);
  const auto& r = l.ranks[0];
  EXPECT_FALSE(r.exitedWith(0));
  if (cuda) {
    EXPECT_NE(r.err.find("ProcessGroupNCCL is only supported with GPUs"), std::string::npos) << r.err;
  } else {
    EXPECT_NE(r.err.find("built without CUDA/NCCL"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace faultline::testing
