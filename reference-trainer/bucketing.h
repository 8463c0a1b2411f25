// Gradient buckets as PyTorch DDP forms them: parameters in reverse order of
// registration (the order backward produces their gradients), packed into
// buckets of at most `cap_bytes` (a parameter larger than the cap gets a
// bucket of its own). No LibTorch.
#pragma once

#include <cstddef>
#include <vector>

namespace faultline::trainer {

struct Bucket {
  std::vector<size_t> params;  // indices into the parameter list
  size_t bytes = 0;
};

std::vector<Bucket> assignBuckets(const std::vector<size_t>& param_bytes, size_t cap_bytes);

}  // namespace faultline::trainer
