// FaultDelivery: scripted faults struck from outside the rank.
#include "harness/supervise/fault_delivery.h"

#include <csignal>
#include <cstdio>

namespace faultline::supervise {
namespace {

struct KindSignal {
  std::string_view kind;
  int signal;
};
constexpr KindSignal kKinds[] = {{"sigkill", SIGKILL}, {"segfault", SIGSEGV}, {"abort", SIGABRT},
                                 {"sigterm", SIGTERM}, {"sigstop", SIGSTOP},  {"freeze", SIGSTOP}};

std::string secondsPoint(double s) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%g s after start", s);
  return buf;
}

}  // namespace

std::vector<OutsideFault> outsideFaults(const std::vector<probe::FaultSpec>& specs) {
  std::vector<OutsideFault> out;
  for (const auto& s : specs) {
    OutsideFault f;
    f.kind = std::string(probe::faultKindName(s.kind));
    f.ranks = s.ranks;
    if (s.collective) {
      f.collective = *s.collective;
    } else if (s.after_s) {
      f.after_s = *s.after_s;
    } else {
      f.step = s.step;
    }
    f.rule = s.text();
    out.push_back(std::move(f));
  }
  return out;
}

bool isOutsideFaultKind(std::string_view kind) { return outsideFaultSignal(kind) != 0; }

int outsideFaultSignal(std::string_view kind) {
  for (const auto& k : kKinds) {
    if (k.kind == kind) return k.signal;
  }
  return 0;
}

FaultDelivery::FaultDelivery(std::vector<OutsideFault> faults) {
  for (auto& f : faults) faults_.push_back({std::move(f), {}});
}

bool FaultDelivery::aims(const OutsideFault& f, int rank) const {
  if (f.ranks.empty()) return true;
  for (int r : f.ranks) {
    if (r == rank) return true;
  }
  return false;
}

Strike FaultDelivery::strike(const OutsideFault& f, int rank, std::string point) const {
  Strike s;
  s.rank = rank;
  s.kind = f.kind;
  s.signal = outsideFaultSignal(f.kind);
  s.whole_group = f.kind == "freeze";
  if (auto it = steps_.find(rank); it != steps_.end()) s.step = it->second;
  s.point = std::move(point);
  s.rule = f.rule;
  return s;
}

void FaultDelivery::onEvent(int rank, std::string_view ev, std::optional<int64_t> step, std::optional<int64_t> seq) {
  const bool step_begin = ev == "step_begin" && step;
  const bool collective_begin = ev == "collective_begin" && seq;
  if (!step_begin && !collective_begin) return;
  if (step_begin) steps_[rank] = *step;
  for (auto& p : faults_) {
    const OutsideFault& f = p.fault;
    if (p.struck.count(rank) || !aims(f, rank)) continue;
    // A rank may skip a step number (gradient accumulation, a resumed run):
    // the first step at or past the point strikes.
    if (step_begin && f.step && *step >= *f.step) {
      p.struck.insert(rank);
      ready_.push_back(strike(f, rank, "step " + std::to_string(*f.step)));
    } else if (collective_begin && f.collective && *seq >= *f.collective) {
      p.struck.insert(rank);
      ready_.push_back(strike(f, rank, "collective #" + std::to_string(*f.collective)));
    }
  }
}

std::vector<Strike> FaultDelivery::due(double elapsed_s, const std::set<int>& running) {
  std::vector<Strike> out = std::move(ready_);
  ready_.clear();
  for (auto& p : faults_) {
    const OutsideFault& f = p.fault;
    if (!f.after_s || elapsed_s < *f.after_s) continue;
    for (int r : running) {
      if (p.struck.count(r) || !aims(f, r)) continue;
      p.struck.insert(r);
      out.push_back(strike(f, r, secondsPoint(*f.after_s)));
    }
  }
  return out;
}

std::optional<double> FaultDelivery::nextTime() const {
  std::optional<double> next;
  for (const auto& p : faults_) {
    if (!p.fault.after_s) continue;
    // Pending while some aimed rank is not struck yet (every rank: until all are).
    const bool done = !p.fault.ranks.empty() && p.struck.size() >= p.fault.ranks.size();
    if (!done && (!next || *p.fault.after_s < *next)) next = *p.fault.after_s;
  }
  return next;
}

}  // namespace faultline::supervise
