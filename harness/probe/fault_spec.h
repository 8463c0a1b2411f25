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
  // Struck in any trainer: by the Python shim (exception) or from outside by
  // the supervisor (freeze); sigterm and sigstop by either.
  kException, kSigterm, kSigstop, kFreeze,
  // Node and network faults (docs/MULTINODE.md), struck by the supervisor on
  // every process of a node (`node` set) of a multi-node stack.
  kNodeLoss, kPartition, kSlowLink, kSlowNode, kAgentKill,
};

// Whether a kind strikes a node rather than a rank.
bool isNodeFault(FaultKind k);

// The signal a fault kind sends a rank (the supervisor's strike; what a rank
// it struck dies of); 0 for a kind that sends none.
int faultSignal(FaultKind k);

// Who strikes a fault (docs/SCENARIOS.md, "Faults by layer"): the reference
// trainer itself, the Python shim inside an unmodified Python trainer, the
// probe inside a native trainer that links it (faultline::probe), or the
// supervisor from outside the rank (a signal, a freeze).
enum class FaultLayer { kReferenceTrainer, kShim, kProbe, kSupervisor };
std::string_view faultLayerName(FaultLayer l);
bool layerStrikes(FaultLayer l, FaultKind k);
// "reference trainer: ..., shim: ..." for error messages.
std::string layersOf(FaultKind k);

struct FaultSpec {
  FaultKind kind = FaultKind::kNone;
  // The ranks it strikes, ascending and distinct; empty: every rank (faults
  // that are code-level bugs, e.g. unsharded_data).
  std::vector<int> ranks;
  long step = 1;      // global step, counted from 1
  std::string arg;    // variant or value; empty means the kind's default
  // Other points than a step (the shim, the supervisor): collective #K (the
  // seq of the rank's events, from 0), the nth call of op OP, or T seconds
  // after the run started. At most one of them; none: `step`.
  std::optional<long> collective;
  std::string op;
  long nth = 1;
  std::optional<double> after_s;
  // after_s counted from the rank's first step (the supervisor's clock starts
  // at the rank's first step_begin) instead of the run's start: a time point
  // that is mid-training however long the ranks take to start.
  bool since_first_step = false;
  // "trainer" (the reference trainer or the shim), "supervisor", or "": the
  // layer's default (scenario.cc, exec).
  std::string by;
  // A node fault: the node it strikes ("n2"); `ranks` are then that node's
  // ranks, and the first of them to reach the point strikes the node once.
  std::string node;
  // agent_kill's point "rendezvous": as soon as the node's launcher agent runs,
  // before any rank of the node exists.
  bool rendezvous = false;
  // The attempt it strikes in (0: the first run of the ranks, k: the k-th
  // restart by the launcher); none: every attempt, as a bug in the code does.
  std::optional<int> attempt;

  // Whether it strikes in this process's attempt (launchAttempt()).
  bool inAttempt(int a) const { return !attempt || *attempt == a; }
  bool atStep() const { return !collective && op.empty() && !after_s && !rendezvous; }
  // The FAULTLINE_FAULT form: "KIND:rank=R:step=S[:arg=X]" or with the point it has.
  std::string text() const;
  // "step 3", "collective #5", "allreduce call 2", "2.5 s after start",
  // "2.5 s after the first step", "rendezvous".
  std::string point() const;

  bool targets(int r) const;
  bool firesAt(int r, long s) const { return targets(r) && s == step; }
};

// The attempt this process belongs to: torchelastic's restart count
// (TORCHELASTIC_RESTART_COUNT, which torchrun and torch.distributed.launch
// give each worker: 0, then 1 after the first restart), else 0.
int launchAttempt();

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
// Whether `layer` can strike this fault at its point: the kind (layerStrikes)
// and the point (the reference trainer: steps; the supervisor: steps,
// collectives and times, from the rank's events; the shim: all).
tl::expected<void, std::string> checkLayer(const FaultSpec& spec, FaultLayer layer);
// The layer inside the ranks of a trainer: the reference trainer's own, the
// Python shim when the command runs Python (a python* program, torchrun, a
// .py script), else the probe (a native program; it strikes when it links
// faultline::probe).
FaultLayer inRankLayer(bool reference_trainer, const std::vector<std::string>& command);
// The layer that strikes `spec`: spec.by, or by default the in-rank layer
// `own` when it can, else the supervisor when it can. An error says why none can.
tl::expected<FaultLayer, std::string> chooseLayer(const FaultSpec& spec, FaultLayer own);

}  // namespace faultline::probe
