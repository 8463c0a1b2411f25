// Scenario x stack -> the command line to launch.
#include "harness/launch/stack_plan.h"

#include <algorithm>
#include <filesystem>

#include "harness/launch/script_runner.h"
#include "harness/launch/stacks.h"
#include "harness/model/node_layout.h"
#include "harness/model/torch_version.h"

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

bool isPython(const std::string& program) {
  const std::string name = fs::path(program).filename().string();
  return name.rfind("python", 0) == 0;
}

// Arguments that name files relative to the scenario file become absolute, so
// a suite runs the same from any working directory: "python/train.py", and a
// bare "train.py" when that file is beside the scenario (a bare word that is
// no file there, "python3" or "10", is left alone).
std::vector<std::string> resolvePaths(std::vector<std::string> args, const std::string& base_dir) {
  std::error_code ec;
  for (auto& a : args) {
    if (a.empty() || a[0] == '-' || a[0] == '/') continue;
    const fs::path candidate = fs::path(base_dir) / a;
    const bool bare = a.find('/') == std::string::npos;
    if (bare ? fs::is_regular_file(candidate, ec) : fs::exists(candidate, ec)) {
      a = fs::absolute(candidate, ec).lexically_normal().string();
    }
  }
  return args;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

std::vector<std::string> faultArgs(const scenario::Scenario& s) {
  if (!s.fault || !s.fault->scripted() || s.fault->by != "trainer") return {};
  std::vector<std::string> out = {"--fault", std::string(probe::faultKindName(s.fault->kind)), "--fault-rank",
                                  s.fault->rankList(), "--fault-step",
                                  std::to_string(s.fault->step)};
  if (!s.fault->arg.empty()) out.insert(out.end(), {"--fault-arg", s.fault->arg});
  return out;
}

namespace {

std::string seriesList(const std::vector<TorchInstall>& installs) {
  std::string out;
  for (const auto& t : installs) {
    if (t.usable()) out += (out.empty() ? "" : ", ") + t.series;
  }
  return out.empty() ? "none" : out;
}

// Whether a `stacks` entry ("torchrun", "spawn@2.13") admits the stack.
bool admits(const std::string& entry, const StackName& name, const std::string& series) {
  const auto at = entry.find('@');
  if (entry.substr(0, at) != name.launcher) return false;
  return at == std::string::npos || entry.substr(at + 1) == series;
}

// Why a scenario that does not list this stack never runs on it, in a few
// words the catalog groups by: a trainer written for one framework; a fault
// between nodes on a one-node stack. Else the stacks it lists.
std::string notListedReason(const scenario::Scenario& s, const std::vector<std::string>& allowed, const StackName& name,
                            const std::string& stack) {
  std::vector<std::string> launchers;
  for (const auto& a : allowed) {
    const std::string l = a.substr(0, a.find('@'));
    if (std::find(launchers.begin(), launchers.end(), l) == launchers.end()) launchers.push_back(l);
  }
  const LauncherTraits* here = launcherTraits(name.launcher);
  const LauncherTraits* only = launchers.size() == 1 ? launcherTraits(launchers[0]) : nullptr;
  if (only && only->framework) return "its trainer is written for " + launchers[0] + "'s own API";
  if (s.stack.nodes > 1 && here && here->nodes == NodeSpan::kOne) return "a scenario of several nodes, on a one-node stack";
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  return "scenario '" + s.name + "' applies to the stacks " + list + ", not " + stack;
}

}  // namespace

StackPlan planStack(const scenario::Scenario& s, const std::string& stack_in, const Tools& tools,
                    const std::string& out_dir, int master_port, const std::string& base_dir) {
  StackPlan plan;
  plan.stack = stack_in.empty() ? s.stack.launcher : stack_in;
  auto parsed = parseStackName(plan.stack);
  if (!parsed) {
    plan.unsupported = parsed.error().message;
    return plan;
  }
  const StackName name = *parsed;
  const Launcher* launcher = launcherNamed(name.launcher);
  if (!launcher) {
    plan.unsupported = "no launcher for the stack " + name.launcher;
    return plan;
  }
  if (s.stack.gpus > tools.gpus) {
    plan.unsupported = "scenario '" + s.name + "' needs " + std::to_string(s.stack.gpus) + " GPU(s), this machine has " +
                       std::to_string(tools.gpus) + (tools.gpus == 0 ? " (no /dev/nvidiaN)" : "");
    return plan;
  }
  for (const auto& alternatives : s.stack.tools) {
    if (std::any_of(alternatives.begin(), alternatives.end(), [&](const std::string& t) { return tools.helpers.count(t); })) {
      continue;
    }
    plan.unsupported = "scenario '" + s.name + "' reads its diagnosis from stack dumps by " + joinWithOr(alternatives) +
                       ", which this machine does not have";
    return plan;
  }
  const bool reference = s.stack.trainer == "reference";
  // The trainer command as a rank runs it.
  std::vector<std::string> trainer =
      reference ? concat(concat({"faultline-trainer"}, s.stack.args), faultArgs(s))
                : concat(resolvePaths(s.stack.commandOn(name.launcher), base_dir), s.stack.argsOn(name.launcher));
  bool python_trainer = !reference && !trainer.empty() && isPython(trainer[0]);
  const bool needs_torch = reference || python_trainer || launcher->needsTorch();
  // A framework's stack runs at the install that has the framework, and is
  // named by the framework's series.
  const char* framework = launcher->traits().framework;
  std::optional<TorchInstall> torch;
  std::string series;
  if (framework) {
    torch = pickFramework(tools.torches, framework, name.series);
    if (!torch) {
      plan.unsupported = std::string(framework) + (name.series.empty() ? "" : " " + name.series) +
                         " is not installed beside any torch (ci/deps installs it in $FAULTLINE_OPT/frameworks-*; "
                         "`faultline stacks` lists what is)";
      return plan;
    }
    series = torchSeries(torch->frameworks.at(framework));
    plan.stack = name.launcher + "@" + series;
    plan.torch = torch->version;
  } else if (needs_torch || !name.series.empty()) {
    torch = pickTorch(tools.torches, name.series);
    // On its own launcher a scenario runs on the newest torch it applies to.
    if (stack_in.empty() && name.series.empty() && !s.stack.torch_bounds.empty()) {
      for (const auto& t : tools.torches) {
        if (t.usable() && satisfies(t.version, s.stack.torch_bounds)) {
          torch = t;
          break;
        }
      }
    }
    if (!torch) {
      plan.unsupported = (name.series.empty() ? std::string("no torch is installed") : "torch " + name.series + " is not installed") +
                         " (installed: " + seriesList(tools.torches) + "; `faultline stacks` lists them)";
      return plan;
    }
    if (isVersionedStack(name.launcher)) plan.stack = name.launcher + "@" + torch->series;
    plan.torch = torch->version;
    series = torch->series;
  }
  if (auto why = s.stack.unsupported_on.find(name.launcher); why != s.stack.unsupported_on.end()) {
    plan.unsupported = why->second;
    return plan;
  }
  const auto allowed = s.stack.entries();
  if (std::none_of(allowed.begin(), allowed.end(), [&](const std::string& e) { return admits(e, name, series); })) {
    plan.unsupported = notListedReason(s, allowed, name, plan.stack);
    return plan;
  }
  if (torch && !s.stack.torch_bounds.empty() && !satisfies(torch->version, s.stack.torch_bounds)) {
    plan.unsupported = "scenario '" + s.name + "' applies to torch " + s.stack.torch + ", not " + torch->version;
    return plan;
  }
  if (reference) {
    trainer[0] = !tools.trainer_override.empty() ? tools.trainer_override : torch->trainer;
    if (trainer[0].empty()) {
      plan.unsupported = "no reference trainer is built against torch " + torch->series + " (faultline-trainer-torch" +
                         torch->series + ")";
      return plan;
    }
    // A stack whose ranks run Python (spawn, Lightning, Ray Train) runs the
    // reference trainer as a Python script: its library, called in the rank's
    // process by reference_trainer.py (reference-trainer/entry.h).
    if (launcher->traits().python_only) {
      auto script = referenceTrainerScript(trainer, torch->python, tools.launch_scripts_dir);
      if (!script) {
        plan.unsupported = script.error().reason;
        return plan;
      }
      trainer = std::move(*script);
      python_trainer = true;
    }
  }
  if (python_trainer && torch) trainer[0] = torch->python;
  LaunchOptions& l = plan.launch;
  for (const auto& [key, value] : s.stack.env) l.env[key] = value;
  if (s.fault && !s.fault->inject.empty()) l.env["FAULTLINE_INJECT"] = s.fault->inject;
  if (s.fault && s.fault->scripted()) {
    // The reference trainer takes its fault as --fault flags (faultArgs); in a
    // command trainer the Python shim or the probe strikes it, read from FAULTLINE_FAULT.
    // The parser resolved `by` to the layer that strikes it (scenario.cc, chooseFaultLayer).
    const probe::FaultSpec& spec = *s.fault;
    const probe::FaultLayer layer =
        s.fault->by == "supervisor" ? probe::FaultLayer::kSupervisor : probe::inRankLayer(reference, trainer);
    plan.requested_faults.push_back(requestedFault(spec, layer));
    if (layer == probe::FaultLayer::kSupervisor) {
      plan.outside_faults.push_back(spec);
    } else if (!reference) {
      l.env["FAULTLINE_FAULT"] = s.fault->text();
    }
  }
  l.instruments = tools.instruments;
  PlanInput in;
  in.scenario = &s;
  in.trainer = trainer;
  in.reference_trainer = reference;
  in.python_trainer = python_trainer;
  in.torch = torch ? &*torch : nullptr;
  in.out_dir = out_dir;
  in.master_port = master_port;
  in.faultline_bin = tools.faultline_bin;
  in.launch_scripts_dir = tools.launch_scripts_dir;
  if (s.stack.nodes > 1 && launcher->nodeSpan() == NodeSpan::kOne) {
    plan.unsupported = "scenario '" + s.name + "' spans " + std::to_string(s.stack.nodes) + " nodes; " + name.launcher +
                       " runs on one";
    return plan;
  }
  if (s.stack.max_restarts > 0 && launcher->traits().no_restarts) {
    plan.unsupported = std::string("restarts: ") + launcher->traits().no_restarts;
    return plan;
  }
  // A scenario written for one node, on a stack that spans nodes, runs spread
  // over two (3 ranks: n1 ranks 0-1, n2 rank 2), so every trainer fault is
  // also met as on a cluster, and its root cause must name the node.
  scenario::Scenario spread;
  if (s.stack.nodes <= 1 && launcher->nodeSpan() == NodeSpan::kSpreads) {
    if (s.stack.world_size < kSpreadNodes) {
      plan.unsupported = "scenario '" + s.name + "' has " + std::to_string(s.stack.world_size) + " rank, too few for " +
                         std::to_string(kSpreadNodes) + " nodes";
      return plan;
    }
    spread = s;
    spread.stack.nodes = kSpreadNodes;
    in.scenario = &spread;
    plan.implied_expect = nodeExpectations(s.expectationsOn(plan.stack), ranksPerNode(s.stack.world_size, kSpreadNodes));
  }
  auto planned = launcher->plan(in);
  if (!planned) {
    plan.unsupported = planned.error().reason;
    return plan;
  }
  l.launcher = launcher->name();
  for (const auto& [key, value] : planned->env) l.env[key] = value;
  l.command = std::move(planned->command);
  l.nproc = planned->nproc;
  l.nodes = planned->nodes;
  l.node_procs = std::move(planned->node_procs);
  l.own_network = planned->own_network;
  return plan;
}

std::vector<scenario::Expect> nodeExpectations(const std::vector<scenario::Expect>& expect, const std::vector<int>& per_node) {
  std::vector<scenario::Expect> out;
  const auto names = [](const scenario::Expect& e, const char* path) { return e.path == path; };
  if (std::any_of(expect.begin(), expect.end(), [&](const auto& e) { return names(e, "root_cause.node"); })) {
    return out;
  }
  for (const auto& e : expect) {
    if (!names(e, "root_cause.rank") || e.op != scenario::MatchOp::kEquals || !e.value.is_number_integer()) continue;
    const int k = nodeOfRank(e.value.get<int>(), per_node);
    if (k < 1) continue;
    scenario::Expect node;
    node.path = "root_cause.node";
    node.value = "n" + std::to_string(k);
    node.pos = e.pos;
    out.push_back(std::move(node));
  }
  return out;
}

RequestedFault requestedFault(const probe::FaultSpec& spec, probe::FaultLayer layer) {
  RequestedFault f;
  f.rule = spec.text();
  f.kind = std::string(probe::faultKindName(spec.kind));
  f.point = spec.point();
  f.ranks = spec.ranks;
  f.node = spec.node;
  switch (layer) {
    case probe::FaultLayer::kReferenceTrainer: f.by = "reference_trainer"; break;
    case probe::FaultLayer::kShim: f.by = "shim"; break;
    case probe::FaultLayer::kProbe: f.by = "probe"; break;
    case probe::FaultLayer::kSupervisor: f.by = "supervisor"; break;
  }
  return f;
}

int countGpus(const std::string& dev_dir) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dev_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() > 6 && name.compare(0, 6, "nvidia") == 0 &&
        std::all_of(name.begin() + 6, name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ++n;
    }
  }
  return n;
}

}  // namespace faultline::launch
