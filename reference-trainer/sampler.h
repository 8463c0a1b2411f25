// A distributed sampler with torch.utils.data.DistributedSampler's semantics:
// one permutation per epoch from (seed, epoch), padded to a multiple of the
// world size, rank r takes every world-th index from r. No LibTorch.
#pragma once

#include <cstdint>
#include <vector>

namespace faultline::trainer {

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, int num_replicas, int rank, uint64_t seed, bool shuffle = true);

  // This rank's indices for `epoch`, in iteration order.
  std::vector<int64_t> indices(int64_t epoch) const;
  int64_t numSamples() const { return num_samples_; }

 private:
  int64_t dataset_size_;
  int num_replicas_;
  int rank_;
  uint64_t seed_;
  bool shuffle_;
  int64_t num_samples_;
};

// The whole dataset's order for an epoch: a Fisher-Yates shuffle driven by
// splitmix64 from seed + epoch, identical on every rank and every platform.
std::vector<int64_t> epochPermutation(int64_t dataset_size, uint64_t seed, int64_t epoch);

}  // namespace faultline::trainer
