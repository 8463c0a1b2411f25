// Stack names: the one parser of "LAUNCHER[@MAJOR.MINOR]".
#include "harness/model/stack_name.h"

#include <algorithm>

#include "harness/model/torch_version.h"

namespace faultline {

const std::vector<LauncherTraits>& stackLaunchers() {
  using enum NodeSpan;
  //  name                 vers  torch  ref    py     cmd    nodes     node faults  framework, why it does not restart ranks
  static const std::vector<LauncherTraits> kTable = {
      {"builtin",            true, false, true,  false, false, kOne,     {}, nullptr, nullptr},
      // torchrun and launch run one agent per node of a scenario of several
      // (network namespaces: node_driver.cc); torchrun-multinode also spreads one of one node.
      {"torchrun",           true, true,  true,  false, false, kAsked,   {"*"}, nullptr, nullptr},
      {"torchrun-multinode", true, true,  true,  false, false, kSpreads, {"*"}, nullptr, nullptr},
      {"launch",             true, true,  true,  false, false, kAsked,   {"*"}, nullptr, nullptr},
      // spawn runs its runner once per node (no agent of its own to kill). It,
      // lightning and ray run the reference trainer as a Python script
      // (reference_trainer.py calls its library).
      {"spawn",              true, true,  true,  true,  false, kAsked,   {"node_loss", "partition", "slow_node", "slow_link"}, nullptr, "mp.spawn does not restart its processes"},
      {"slurm",              true, true,  true,  false, false, kSpreads, {"node_loss", "slow_node"}, nullptr, "srun does not restart failed tasks"},
      // lightning runs a plain script as the function its Fabric launches (lightning_script.py),
      // across nodes with num_nodes (its launcher is the script: no agent to kill).
      {"lightning",          true, true,  true,  true,  false, kAsked,   {"node_loss", "partition", "slow_node", "slow_link"}, "lightning", "Lightning's launcher does not restart ranks"},
      // accelerate launch and deepspeed run any script (and a program, --no_python),
      // across nodes one launcher per node (--machine_rank; --no_ssh --node_rank).
      {"accelerate",         true, true,  true,  false, false, kAsked,   {"*"}, "accelerate", nullptr},
      {"deepspeed",          true, true,  true,  false, false, kAsked,   {"*"}, "deepspeed", "the deepspeed launcher does not restart ranks"},
      // ray runs a plain script as its training function (ray_script.py).
      {"ray",                true, true,  true,  true,  false, kOne,     {}, "ray", nullptr},
      {"external",           false, false, false, false, true, kOne,     {}, nullptr, "an external launcher restarts as its own command says"},
  };
  return kTable;
}

const LauncherTraits* launcherTraits(const std::string& launcher) {
  for (const auto& t : stackLaunchers()) {
    if (launcher == t.name) return &t;
  }
  return nullptr;
}

const LauncherTraits* stackTraits(const std::string& stack) { return launcherTraits(stack.substr(0, stack.find('@'))); }

bool deliversNodeFault(const LauncherTraits& t, const std::string& kind) {
  return std::any_of(t.node_faults.begin(), t.node_faults.end(),
                     [&](const char* k) { return std::string(k) == "*" || kind == k; });
}

std::string nodeFaultStackList() {
  std::vector<std::string> parts;
  for (const auto& t : stackLaunchers()) {
    if (t.node_faults.empty()) continue;
    std::string kinds;
    for (const char* k : t.node_faults) kinds += (kinds.empty() ? "" : ", ") + std::string(k);
    parts.push_back(std::string(t.name) + " (" + (kinds == "*" ? std::string("every node fault") : kinds) + ")");
  }
  return joinWithOr(parts);
}

std::string joinWithOr(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

std::string stackLauncherList() {
  std::vector<std::string> names;
  for (const auto& t : stackLaunchers()) names.emplace_back(t.name);
  return joinWithOr(names);
}

bool isStackLauncher(const std::string& name) {
  const auto& names = stackLaunchers();
  return std::any_of(names.begin(), names.end(), [&](const LauncherTraits& n) { return name == n.name; });
}

bool isVersionedStack(const std::string& launcher) {
  const auto& names = stackLaunchers();
  return std::any_of(names.begin(), names.end(), [&](const LauncherTraits& n) { return launcher == n.name && n.versioned; });
}

Result<StackName> parseStackName(const std::string& text) {
  StackName s;
  const auto at = text.find('@');
  s.launcher = text.substr(0, at);
  const auto& names = stackLaunchers();
  const auto known =
      std::find_if(names.begin(), names.end(), [&](const LauncherTraits& n) { return s.launcher == n.name; });
  if (known == names.end()) {
    return fail(ErrorCode::kBadUsage, "unknown stack '" + text + "', expected " + stackLauncherList() +
                                          ", optionally @MAJOR.MINOR (torchrun@2.13)");
  }
  if (at == std::string::npos) return s;
  s.series = text.substr(at + 1);
  if (!known->versioned) {
    return fail(ErrorCode::kBadUsage, "'" + text + "': " + s.launcher + " has no torch version, expected '" + s.launcher + "' alone");
  }
  if (torchSeries(s.series) != s.series) {
    if (known->framework) {
      return fail(ErrorCode::kBadUsage, "'" + text + "': '" + s.series + "' is not a " + known->framework +
                                            " version MAJOR.MINOR (" + s.launcher + "@2.6)");
    }
    return fail(ErrorCode::kBadUsage, "'" + text + "': '" + s.series + "' is not a torch version MAJOR.MINOR (torchrun@2.13)");
  }
  return s;
}

}  // namespace faultline
