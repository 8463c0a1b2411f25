#include "harness/launch/helper_tools.h"

#include <unistd.h>

#include "harness/launch/process_spawn.h"
#include "harness/scenario/scenario.h"

namespace faultline::launch {

std::optional<std::string> findHelperTool(const std::string& name, const Environment& env) {
  const auto path = env.find("PATH");
  if (auto p = resolveExecutable(name, path != env.end() ? path->second : "/usr/bin:/bin")) return *p;
  const auto opt_var = env.find("FAULTLINE_OPT");
  const std::string opt = opt_var != env.end() && !opt_var->second.empty() ? opt_var->second : "/opt/faultline";
  const std::string venv = opt + "/tools/bin/" + name;
  if (::access(venv.c_str(), X_OK) == 0) return venv;
  return std::nullopt;
}

std::set<std::string> findHelperTools(const Environment& env) {
  std::set<std::string> found;
  for (const char* t : scenario::kHelperTools) {
    if (findHelperTool(t, env)) found.insert(t);
  }
  return found;
}

}  // namespace faultline::launch
