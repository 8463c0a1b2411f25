// The registry of launchers: one line per stack.
#include <algorithm>

#include "harness/launch/builtin_launcher.h"
#include "harness/launch/launcher.h"

namespace faultline::launch {

// Each defined in its own file.
const Launcher& externalLauncher();
const Launcher& torchrunLauncher();
const Launcher& torchrunMultinodeLauncher();
const Launcher& distributedLaunchLauncher();
const Launcher& spawnLauncher();
const Launcher& slurmLauncher();
const Launcher& lightningLauncher();
const Launcher& accelerateLauncher();
const Launcher& deepspeedLauncher();
const Launcher& rayLauncher();

namespace {
const Launcher& builtinLauncher() {
  static const BuiltinLauncher kLauncher;
  return kLauncher;
}
}  // namespace

const std::vector<const Launcher*>& allLaunchers() {
  static const std::vector<const Launcher*> kAll = {
      &builtinLauncher(),
      &torchrunLauncher(),
      &torchrunMultinodeLauncher(),
      &distributedLaunchLauncher(),
      &spawnLauncher(),
      &slurmLauncher(),
      &lightningLauncher(),
      &accelerateLauncher(),
      &deepspeedLauncher(),
      &rayLauncher(),
      &externalLauncher(),
  };
  return kAll;
}

const LauncherTraits& Launcher::traits() const {
  static const LauncherTraits kNone{"", false, false, false, false, false, NodeSpan::kOne, {}};
  const LauncherTraits* t = launcherTraits(name());
  return t ? *t : kNone;
}

const Launcher* launcherNamed(const std::string& name) {
  const auto& all = allLaunchers();
  auto it = std::find_if(all.begin(), all.end(), [&](const Launcher* l) { return l->name() == name; });
  return it == all.end() ? nullptr : *it;
}

}  // namespace faultline::launch
