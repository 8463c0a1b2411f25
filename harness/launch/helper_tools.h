// The helper programs the supervisor runs on a stuck rank (eu-stack, gdb,
// py-spy), found the one way both the teardown and the stack plan use.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "harness/launch/rank_env.h"

namespace faultline::launch {

// NAME on ENV's PATH, else in the tools venv ci/deps installs
// ($FAULTLINE_OPT/tools/bin, default /opt/faultline/tools/bin).
std::optional<std::string> findHelperTool(const std::string& name, const Environment& env);

// The helpers of scenario::kHelperTools that ENV can find.
std::set<std::string> findHelperTools(const Environment& env);

}  // namespace faultline::launch
