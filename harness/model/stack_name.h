// Stack names, parsed in one place for the scenario files and the command
// line: a launcher ("builtin", "torchrun", ...) optionally at a torch series,
// "torchrun@2.13", or a framework's launcher at the framework's series,
// "lightning@2.6". A stack without a series takes the newest installed.
#pragma once

#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline {

struct StackName {
  std::string launcher;  // one of stackLaunchers()
  std::string series;    // "2.13" (torch's; a framework's own for a framework stack); "" = the newest installed (or none needed)
  std::string str() const { return series.empty() ? launcher : launcher + "@" + series; }
};

// How a launcher's stack meets `[stack] nodes`.
enum class NodeSpan {
  kOne,      // runs on one node: a scenario of several is unsupported there
  kAsked,    // runs a scenario of several nodes across them, and one of one node on one (torchrun, launch, spawn, lightning, accelerate, deepspeed)
  kSpreads,  // also spreads a scenario written for one node over two (torchrun-multinode, slurm)
};

// What each launcher a stack name may start with is, one row each: the
// scenario files (which stacks can ever run a scenario, which deliver a node
// fault), the stack plan (whether a torch is needed, several nodes) and
// `faultline stacks` all read it here, and nothing outside harness/launch
// branches on a launcher's name (tests/docs/layering_test.cc). Every name has
// a launch::Launcher of that name (the launch stage's registry; a test checks
// that the two agree). The scenario files need the table and sit below the
// launch stage, hence it lives here.
struct LauncherTraits {
  const char* name;
  bool versioned;       // takes @MAJOR.MINOR: "torchrun@2.13"
  bool needs_torch;     // runs at a torch install whatever the trainer (torch's own launchers)
  bool runs_reference;  // can start the reference trainer, a plain executable, as ranks
  bool python_only;     // runs Python trainers only (the reference trainer as one, reference_trainer.py, if runs_reference)
  bool is_the_command;  // the scenario's own command is the launcher (external)
  NodeSpan nodes;       // several nodes ([stack] nodes)
  // The node-fault kinds it delivers (docs/MULTINODE.md); "*": every kind.
  std::vector<const char*> node_faults;
  // A framework's launcher: the Python distribution it is ("lightning"). Its
  // stacks are named with the framework's MAJOR.MINOR ("lightning@2.6"), not
  // torch's, and run at an install that has it. nullptr: none.
  const char* framework = nullptr;
  // Why it cannot restart a job's ranks after a failure ([stack]
  // max_restarts); nullptr: it can (torchrun's --max-restarts).
  const char* no_restarts = nullptr;
};
const std::vector<LauncherTraits>& stackLaunchers();
// The row of `launcher` (a stack name without its @series); null if none.
const LauncherTraits* launcherTraits(const std::string& launcher);
// The row of a whole stack name ("torchrun@2.13"); null if none.
const LauncherTraits* stackTraits(const std::string& stack);
bool deliversNodeFault(const LauncherTraits& t, const std::string& kind);

// "torchrun-multinode (every node fault), launch (every node fault) or slurm
// (node_loss, slow_node)": the stacks that deliver node faults, for messages.
std::string nodeFaultStackList();
// "a, b or c": a list for messages.
std::string joinWithOr(const std::vector<std::string>& items);
// "builtin, torchrun, launch, spawn or external": for messages.
std::string stackLauncherList();
bool isStackLauncher(const std::string& name);
// Whether stacks of this launcher are named with their torch series ("torchrun@2.13").
bool isVersionedStack(const std::string& launcher);

// "torchrun@2.13" -> {torchrun, 2.13}. kBadUsage, worded for any caller to
// prefix with where the name came from:
//   unknown stack 'srun', expected builtin, ... or external, optionally @MAJOR.MINOR (torchrun@2.13)
//   'torchrun@2': '2' is not a torch version MAJOR.MINOR (torchrun@2.13)
//   'external@2.13': external has no torch version, expected 'external' alone
Result<StackName> parseStackName(const std::string& text);

}  // namespace faultline
