// The stacks this machine can drive. A stack is a launcher
// (builtin, torchrun, launch, spawn, external) at a torch version:
// "torchrun@2.13", "spawn@1.13"; a bare "torchrun" is the newest installed.
#pragma once

#include <string>
#include <vector>

#include "harness/launch/torch_installs.h"
#include "harness/model/error.h"
#include "harness/model/stack_name.h"

namespace faultline::launch {

// The one parser of stack names is the model's; launch code says it unqualified.
using faultline::parseStackName;
using faultline::StackName;

struct AvailableStack {
  std::string name;          // "torchrun@2.13"
  std::string torch;         // the torch version, "" for external
  std::string program;       // what it starts: the torchrun script, "python -m torch.distributed.launch", ...
  std::string problem;       // non-empty: does not work here, and why
};

// Every stack the installs give: builtin, torchrun, launch and spawn at each
// version, newest first, then external. With `check`, each launcher also runs
// a one-rank job (/bin/true) with the flags faultline gives it, and spawn's
// interpreter imports torch.multiprocessing and torch.distributed, all in
// parallel: a stack that fails says how (the last line it printed).
std::vector<AvailableStack> availableStacks(const std::vector<TorchInstall>& installs, bool check);

}  // namespace faultline::launch
