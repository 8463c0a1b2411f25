// The NCCL path on a GPU machine: 2 ranks over ProcessGroupNCCL on CUDA.
// Without a GPU (or a LibTorch without CUDA) it reports itself skipped, with the reason.
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "tests/reference-trainer/rank_launcher.h"

namespace faultline::testing {
namespace {

std::string whyNoGpu() {
  // Set per trainer by CMake: whether the LibTorch it was built against has CUDA.
  const char* nccl = std::getenv("FAULTLINE_TEST_HAVE_NCCL");
  if (!nccl || std::string(nccl) != "1") return "LibTorch was built without CUDA/NCCL";
  if (::access("/dev/nvidia0", F_OK) != 0 && ::access("/dev/nvidiactl", F_OK) != 0) return "no NVIDIA GPU device";
  if (std::system("nvidia-smi -L > /dev/null 2>&1") != 0) return "nvidia-smi finds no GPU";
  return "";
}

TEST(TrainerGpu, TwoRanksOverNccl) {
  if (auto why = trainerUnavailable(); !why.empty()) GTEST_SKIP() << why;
  if (auto why = whyNoGpu(); !why.empty()) GTEST_SKIP() << "unsupported: " << why;
  LaunchOptions o;
  o.args = {"--steps", "20", "--device", "cuda", "--backend", "nccl", "--fingerprint-every", "5"};
  auto l = launchRanks("gpu", o);
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

}  // namespace
}  // namespace faultline::testing
