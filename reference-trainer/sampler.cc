// Deterministic per-epoch shuffling and sharding.
#include "reference-trainer/sampler.h"

#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

namespace faultline::trainer {
namespace {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Unbiased value in [0, bound) by rejection.
  uint64_t below(uint64_t bound) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t v;
    do v = next();
    while (v >= limit);
    return v % bound;
  }
};

}  // namespace

std::vector<int64_t> epochPermutation(int64_t dataset_size, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(dataset_size));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng{seed * 0x100000001b3ULL + static_cast<uint64_t>(epoch)};
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank, uint64_t seed, bool shuffle)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), seed_(seed), shuffle_(shuffle) {
  if (dataset_size <= 0 || num_replicas <= 0 || rank < 0 || rank >= num_replicas) {
    throw std::invalid_argument("sampler: rank " + std::to_string(rank) + " of " + std::to_string(num_replicas) +
                                " over " + std::to_string(dataset_size) + " samples is not valid");
  }
  num_samples_ = (dataset_size_ + num_replicas_ - 1) / num_replicas_;
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch) const {
  std::vector<int64_t> all;
  if (shuffle_) {
    all = epochPermutation(dataset_size_, seed_, epoch);
  } else {
    all.resize(static_cast<size_t>(dataset_size_));
    std::iota(all.begin(), all.end(), 0);
  }
  // Pad by wrapping around, as DistributedSampler does without drop_last.
  const size_t total = static_cast<size_t>(num_samples_) * static_cast<size_t>(num_replicas_);
  for (size_t i = 0; all.size() < total; ++i) all.push_back(all[i % static_cast<size_t>(dataset_size_)]);
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) mine.push_back(all[i]);
  return mine;
}

}  // namespace faultline::trainer
