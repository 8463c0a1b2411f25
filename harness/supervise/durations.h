// What a run's collectives and steps have taken so far: the learned rhythm
// the adaptive hang detection compares a wait against (adaptive_hang.h).
// Pure; fed durations, answers counts and percentiles.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace faultline::supervise {

// The most recent durations of one kind (a collective op, "all ops", the
// step): a bounded window, so that a run's rhythm after warm-up, not its
// first minutes, is what counts.
class DurationWindow {
 public:
  static constexpr size_t kCapacity = 1024;
  void add(int64_t ns);
  size_t count() const { return total_; }  // every duration ever added
  // The q-th quantile (0 < q <= 1, nearest rank) of the window; nullopt when empty.
  std::optional<int64_t> quantile(double q) const;
  int64_t max() const { return max_; }  // longest ever added

 private:
  std::vector<int64_t> ring_;
  size_t next_ = 0;
  size_t total_ = 0;
  int64_t max_ = 0;
};

// Durations by collective op (every rank's, pooled), of all ops together,
// and of steps (step_begin to step_end of the same rank).
class DurationHistory {
 public:
  void addCollective(const std::string& op, int64_t ns);
  void addStep(int64_t ns) { steps_.add(ns); }
  // nullptr when that op never completed.
  const DurationWindow* op(const std::string& op) const;
  const DurationWindow& allOps() const { return all_; }
  const DurationWindow& steps() const { return steps_; }

 private:
  std::map<std::string, DurationWindow> ops_;
  DurationWindow all_;
  DurationWindow steps_;
};

}  // namespace faultline::supervise
