// Bucket assignment for the gradient all-reduce.
#include "reference-trainer/bucketing.h"

namespace faultline::trainer {

std::vector<Bucket> assignBuckets(const std::vector<size_t>& param_bytes, size_t cap_bytes) {
  std::vector<Bucket> buckets;
  Bucket current;
  for (size_t i = param_bytes.size(); i-- > 0;) {
    if (!current.params.empty() && current.bytes + param_bytes[i] > cap_bytes) {
      buckets.push_back(std::move(current));
      current = Bucket{};
    }
    current.params.push_back(i);
    current.bytes += param_bytes[i];
  }
  if (!current.params.empty()) buckets.push_back(std::move(current));
  return buckets;
}

}  // namespace faultline::trainer
