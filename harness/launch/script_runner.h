// A launcher whose ranks run a Python function, not a script (mp.spawn, Ray
// Train), runs a plain trainer script through a runner program of its own
// (harness/launch/python/): the runner takes the script, or `-m MODULE`, and
// its arguments, and runs it as each rank's function.
#pragma once

#include <string>
#include <vector>

#include "harness/launch/launcher.h"

namespace faultline::launch {

// The command that runs `in.trainer` through `runner` (a file of
// in.launch_scripts_dir) with `runner_args` before the script: the trainer's
// interpreter and its options ("-u", "-X dev") first, then the runner, its
// arguments, and the script or `-m MODULE` with the script's arguments.
// Unsupported when the runner is not found, or the trainer is `python -c`
// code or names no script. `stack` names the stack in those reasons.
// Whether the scenario is written for `stack` (its launcher) or gives it a
// trainer of its own ([stack.command_on]): that trainer then runs itself,
// not through the runner.
bool hasOwnTrainer(const PlanInput& in, const std::string& stack);

tl::expected<std::vector<std::string>, Unsupported> scriptRunnerCommand(const PlanInput& in, const std::string& runner,
                                                                         const std::vector<std::string>& runner_args,
                                                                         const std::string& stack);

// The reference trainer (`trainer`: its program, then its options) as a
// Python rank runs it: `python reference_trainer.py LIBRARY OPTIONS...`,
// LIBRARY the libfaultline-trainer-<torch>.so built beside the program (after
// symlinks). Unsupported when the runner or the library is not found.
tl::expected<std::vector<std::string>, Unsupported> referenceTrainerScript(const std::vector<std::string>& trainer,
                                                                            const std::string& python,
                                                                            const std::string& scripts_dir);

}  // namespace faultline::launch
