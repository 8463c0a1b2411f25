// Stack adapters for scenarios: which processes to start for a scenario on a
// given stack (builtin, torchrun, torch.distributed.launch, spawn, external),
// or why the scenario cannot apply to that stack. Pure: no processes here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/launch/launcher.h"
#include "harness/launch/torch_installs.h"
#include "harness/scenario/scenario.h"

namespace faultline::launch {

struct Tools {
  std::vector<TorchInstall> torches;  // this machine's torch installs, newest first (discoverTorch)
  std::string trainer_override;       // set (FAULTLINE_TRAINER): this reference trainer for every torch version
  Instruments instruments;            // given to every stack's processes
};

struct StackPlan {
  std::string stack;              // the stack as resolved, for the report: "torchrun@2.13", "builtin", ...
  std::string torch;              // the torch version it runs ("2.13.0+cpu"); "" none
  LaunchOptions launch;           // what to start
  std::optional<std::string> unsupported;  // set: do not run, report unsupported with this reason
};

// `stack` empty: the scenario's own launcher. A stack without a version
// ("torchrun") takes the newest torch installed; the stack's torch gives the
// interpreter of Python trainers and the reference trainer binary. `out_dir` is where torchrun's
// --log_dir goes (OUT/launcher/logs); `master_port` is used by launchers that
// need one chosen up front. Relative paths in the command are resolved
// against `base_dir` (the directory the scenario paths are relative to).
StackPlan planStack(const scenario::Scenario& s, const std::string& stack, const Tools& tools,
                    const std::string& out_dir, int master_port, const std::string& base_dir);

// The flags faultline gives torchrun and torch.distributed.launch unless a
// scenario's launcher_args replace them: torch 1.13's elastic agent on Python
// 3.11 crashes in option parsing with its default --redirects/--tee (and with
// 0 or 3); 2/2 works on every version and keeps per-rank stderr logs in
// OUT/launcher/logs, which are rank evidence.
std::vector<std::string> elasticLogFlags(const std::string& out_dir);

// The reference trainer's arguments for the scenario's fault (--fault ...).
std::vector<std::string> faultArgs(const scenario::Scenario& s);

}  // namespace faultline::launch
