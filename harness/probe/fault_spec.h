// What fault a rank injects, where and when: parsed from a trainer's --fault
// flags or FAULTLINE_FAULT=KIND:rank=R:step=S[:arg=X]. Shared by the trainer
// (which injects) and the scenario parser (which validates), so both know the
// same kinds. No LibTorch.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

namespace faultline::probe {

enum class FaultKind {
  kNone, kUndefinedSymbol, kCppException, kExceptionInThread, kSegfault, kAbort, kSigkill, kExit,
  kOom, kHungCollective, kCollectiveMismatch, kSeedMismatch, kUnshardedData, kUnsyncedMetrics,
  kConcurrentWrites, kStraggler, kRendezvousFailure,
};

struct FaultSpec {
  FaultKind kind = FaultKind::kNone;
  // The ranks it strikes, ascending and distinct; empty: every rank (faults
  // that are code-level bugs, e.g. unsharded_data).
  std::vector<int> ranks;
  long step = 1;      // global step, counted from 1
  std::string arg;    // variant or value; empty means the kind's default

  bool targets(int r) const;
  bool firesAt(int r, long s) const { return targets(r) && s == step; }
};

std::string_view faultKindName(FaultKind k);
std::optional<FaultKind> faultKindFromName(std::string_view name);
std::vector<std::string_view> faultKindNames();

// "hung_collective:rank=1:step=3:arg=sleep"; rank is R, R,R,... (the same
// fault on each) or all. Errors name the bad part and what was expected.
tl::expected<FaultSpec, std::string> parseFaultSpec(std::string_view text);
// "all" or "0,2": the rank= part of a spec, as --fault-rank takes it.
std::string rankList(const std::vector<int>& ranks);
// Checks each rank against the world size and the arg against the kind's variants.
tl::expected<void, std::string> validateFaultSpec(const FaultSpec& spec, int world_size);

}  // namespace faultline::probe
