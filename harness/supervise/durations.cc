// Bounded duration windows and their percentiles.
#include "harness/supervise/durations.h"

#include <algorithm>
#include <cmath>

namespace faultline::supervise {

void DurationWindow::add(int64_t ns) {
  if (ns < 0) return;  // clocks of two processes: a begin after its end is no duration
  if (ring_.size() < kCapacity) {
    ring_.push_back(ns);
  } else {
    ring_[next_] = ns;
    next_ = (next_ + 1) % kCapacity;
  }
  ++total_;
  max_ = std::max(max_, ns);
}

std::optional<int64_t> DurationWindow::quantile(double q) const {
  if (ring_.empty()) return std::nullopt;
  std::vector<int64_t> v = ring_;
  // Nearest rank: the smallest value with at least q of the window at or below it.
  const auto rank = static_cast<size_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size())));
  const size_t k = rank == 0 ? 0 : rank - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

void DurationHistory::addCollective(const std::string& op, int64_t ns) {
  if (ns < 0) return;
  ops_[op].add(ns);
  all_.add(ns);
}

const DurationWindow* DurationHistory::op(const std::string& op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

}  // namespace faultline::supervise
