// Stack adapters for scenarios: which processes to start for a scenario on a
// given stack (builtin, torchrun, torch.distributed.launch, spawn, external),
// or why the scenario cannot apply to that stack. Pure: no processes here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/launch/launcher.h"
#include "harness/scenario/scenario.h"

namespace faultline::launch {

struct Tools {
  std::string trainer = "faultline-trainer";   // the reference trainer binary
  std::string torchrun = "/usr/bin/torchrun";
  std::string python = "/usr/bin/python3";     // the interpreter that has torch
  Instruments instruments;                     // given to every stack's processes
};

struct StackPlan {
  std::string stack;              // the stack name, for the report
  LaunchOptions launch;           // what to start
  std::optional<std::string> unsupported;  // set: do not run, report unsupported with this reason
};

// `stack` empty: the scenario's own launcher. `out_dir` is where torchrun's
// --log_dir goes (OUT/launcher/logs); `master_port` is used by launchers that
// need one chosen up front. Relative paths in the command are resolved
// against `base_dir` (the directory the scenario paths are relative to).
StackPlan planStack(const scenario::Scenario& s, const std::string& stack, const Tools& tools,
                    const std::string& out_dir, int master_port, const std::string& base_dir);

// The reference trainer's arguments for the scenario's fault (--fault ...).
std::vector<std::string> faultArgs(const scenario::Scenario& s);

}  // namespace faultline::launch
