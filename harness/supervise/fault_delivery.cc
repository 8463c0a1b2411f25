// FaultDelivery: scripted faults struck from outside the rank.
#include "harness/supervise/fault_delivery.h"

#include <algorithm>

namespace faultline::supervise {

FaultDelivery::FaultDelivery(std::vector<probe::FaultSpec> faults) {
  for (auto& f : faults) faults_.push_back({std::move(f), {}});
}

Strike FaultDelivery::strike(const probe::FaultSpec& f, int rank) const {
  Strike s;
  s.rank = rank;
  s.node = f.node;
  s.arg = f.arg;
  s.kind = std::string(probe::faultKindName(f.kind));
  s.signal = probe::faultSignal(f.kind);  // 0 for a kind the supervisor does not strike
  s.whole_group = f.kind == probe::FaultKind::kFreeze;
  if (auto it = steps_.find(rank); it != steps_.end()) s.step = it->second;
  s.point = f.point();
  s.rule = f.text();
  return s;
}

bool FaultDelivery::onEvent(int rank, std::string_view ev, std::optional<int64_t> step, std::optional<int64_t> seq,
                            double elapsed_s) {
  const bool step_begin = ev == "step_begin" && step;
  const bool collective_begin = ev == "collective_begin" && seq;
  if (!step_begin && !collective_begin) return false;
  bool clock_started = false;
  if (step_begin) {
    steps_[rank] = *step;
    if (first_step_s_.emplace(rank, elapsed_s).second) {
      clock_started = std::any_of(faults_.begin(), faults_.end(), [&](const Pending& p) {
        return p.fault.after_s && p.fault.since_first_step && p.fault.targets(rank) && !p.struck.count(rank);
      });
    }
  }
  for (auto& p : faults_) {
    const probe::FaultSpec& f = p.fault;
    if (p.struck.count(rank) || !f.targets(rank)) continue;
    // A rank may skip a step number (gradient accumulation, a resumed run):
    // the first step at or past the point strikes.
    const bool at_step = step_begin && f.atStep() && *step >= f.step;
    const bool at_collective = collective_begin && f.collective && *seq >= *f.collective;
    if (at_step || at_collective) {
      p.struck.insert(rank);
      // A node fault strikes the node once, at the first of its ranks to get there.
      if (!f.node.empty()) p.struck.insert(f.ranks.begin(), f.ranks.end());
      ready_.push_back(strike(f, rank));
    }
  }
  return clock_started;
}

std::optional<double> FaultDelivery::timeFor(const probe::FaultSpec& f, int r) const {
  if (!f.after_s) return std::nullopt;
  if (!f.since_first_step) return *f.after_s;
  auto it = first_step_s_.find(r);
  if (it == first_step_s_.end()) return std::nullopt;
  return it->second + *f.after_s;
}

std::vector<Strike> FaultDelivery::due(double elapsed_s, const std::set<int>& running) {
  std::vector<Strike> out = std::move(ready_);
  ready_.clear();
  for (auto& p : faults_) {
    const probe::FaultSpec& f = p.fault;
    if (!f.after_s) continue;
    for (int r : running) {
      if (p.struck.count(r) || !f.targets(r)) continue;
      const auto at = timeFor(f, r);
      if (!at || elapsed_s < *at) continue;
      p.struck.insert(r);
      if (!f.node.empty()) p.struck.insert(f.ranks.begin(), f.ranks.end());
      out.push_back(strike(f, r));
    }
  }
  return out;
}

std::optional<double> FaultDelivery::nextTime() const {
  std::optional<double> next;
  auto earliest = [&](double t) {
    if (!next || t < *next) next = t;
  };
  for (const auto& p : faults_) {
    if (!p.fault.after_s) continue;
    // Pending while some aimed rank is not struck yet (every rank: until all are).
    const bool done = !p.fault.ranks.empty() && p.struck.size() >= p.fault.ranks.size();
    if (done) continue;
    if (!p.fault.since_first_step) {
      earliest(*p.fault.after_s);
      continue;
    }
    // From a first step: the ranks whose clock runs and who are not struck.
    for (const auto& [r, t] : first_step_s_) {
      if (p.fault.targets(r) && !p.struck.count(r)) earliest(t + *p.fault.after_s);
    }
  }
  return next;
}

std::vector<std::string> FaultDelivery::awaitingRendezvous() const {
  std::vector<std::string> out;
  for (const auto& p : faults_) {
    if (p.fault.rendezvous && p.struck.empty()) out.push_back(p.fault.node);
  }
  return out;
}

std::optional<Strike> FaultDelivery::atRendezvous(const std::string& node) {
  for (auto& p : faults_) {
    if (!p.fault.rendezvous || !p.struck.empty() || p.fault.node != node) continue;
    p.struck.insert(p.fault.ranks.begin(), p.fault.ranks.end());
    if (p.struck.empty()) p.struck.insert(-1);
    Strike s = strike(p.fault, -1);
    return s;
  }
  return std::nullopt;
}

}  // namespace faultline::supervise
