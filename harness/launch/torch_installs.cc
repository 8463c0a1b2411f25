// Finding the torch installations: ask each interpreter, never import torch.
#include "harness/launch/torch_installs.h"

#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/model/stack_name.h"
#include "harness/model/torch_version.h"

namespace faultline::launch {
namespace {

namespace fs = std::filesystem;

// Prints "key value" lines. find_spec("torch") locates the package without
// running it; the version comes from torch/version.py, which both Debian's
// python3-torch and the wheels ship (Debian's has no dist-info to ask).
// FRAMEWORKS is prepended (frameworkList()).
constexpr const char* kProbe = R"PY(
import importlib.util, os, re, sys
spec = importlib.util.find_spec("torch")
if spec is None or not spec.origin:
    print("torch -")
    raise SystemExit(0)
d = os.path.dirname(spec.origin)
with open(os.path.join(d, "version.py")) as f:
    m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read())
print("torch", m.group(1) if m else "?")
print("launch", int(os.path.exists(os.path.join(d, "distributed", "launch.py"))))
print("distributed", int(os.path.exists(os.path.join(d, "distributed", "run.py"))))
import importlib.metadata as md
for name in FRAMEWORKS:
    try:
        print("framework:" + name, md.version(name))
    except Exception:
        pass
)PY";

std::vector<std::string> splitList(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, sep)) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The distributions of the framework launchers (the launcher table's
// `framework` column), as the probe's FRAMEWORKS tuple.
std::string frameworkList() {
  std::string out = "FRAMEWORKS = (";
  for (const LauncherTraits& t : stackLaunchers()) {
    if (t.framework) out += "\"" + std::string(t.framework) + "\", ";
  }
  return out + ")\n";
}

TorchInstall probe(const std::string& python, const std::string& trainer_dir) {
  TorchInstall t;
  t.python = python;
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    t.problem = python + " does not exist";
    return t;
  }
  Environment env = currentEnvironment();
  env.erase("PYTHONSTARTUP");
  auto ran = runToCompletion({python, "-c", frameworkList() + kProbe}, toEnvStrings(env), 20);
  if (!ran) {
    t.problem = ran.error().message;
    return t;
  }
  if (!ran->ok()) {
    t.problem = python + " could not be asked for its torch (exit status " + std::to_string(ran->wait_status) + ")";
    return t;
  }
  bool distributed = false;
  std::istringstream lines(ran->out);
  std::string key, value;
  while (lines >> key >> value) {
    if (key == "torch") t.version = value;
    if (key == "launch") t.has_launch = value == "1";
    if (key == "distributed") distributed = value == "1";
    if (key.rfind("framework:", 0) == 0) t.frameworks[key.substr(10)] = value;
  }
  if (t.version == "-") {
    t.version.clear();
    return t;  // no torch: not an install
  }
  t.series = torchSeries(t.version);
  if (t.series.empty()) {
    t.problem = "cannot read torch's version ('" + t.version + "')";
    return t;
  }
  const fs::path bin = fs::path(python).parent_path();
  if (fs::exists(bin / "torchrun", ec)) t.torchrun = (bin / "torchrun").string();
  if (!distributed) t.problem = "torch " + t.version + " has no torch.distributed";
  const fs::path trainer = fs::path(trainer_dir) / ("faultline-trainer-torch" + t.series);
  if (!trainer_dir.empty() && fs::exists(trainer, ec)) t.trainer = trainer.string();
  return t;
}

}  // namespace

std::vector<std::string> torchInterpreterCandidates() {
  if (const char* list = std::getenv("FAULTLINE_PYTHONS"); list && *list) return splitList(list, ':');
  std::vector<std::string> out;
  std::error_code ec;
  if (fs::exists("/usr/bin/python3", ec)) out.emplace_back("/usr/bin/python3");
  // The user's own python3 (a pip-installed torch), unless it is that one.
  const char* path = std::getenv("PATH");
  if (auto own = resolveExecutable("python3", path ? path : ""); own && *own != "/usr/bin/python3") {
    out.push_back(*own);
  }
  const char* opt_env = std::getenv("FAULTLINE_OPT");
  const std::string opt = opt_env && *opt_env ? opt_env : "/opt/faultline";
  for (const char* venvs : {"/torch-*/bin/python", "/frameworks-*/bin/python"}) {
    glob_t g{};
    if (::glob((opt + venvs).c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  return out;
}

std::vector<TorchInstall> discoverTorch(const std::vector<std::string>& interpreters, const std::string& trainer_dir) {
  std::vector<TorchInstall> out;
  for (const auto& python : interpreters) {
    TorchInstall t = probe(python, trainer_dir);
    if (t.version.empty() && t.usable()) continue;  // an interpreter without torch
    // Two interpreters with one torch and the same frameworks (a venv of a venv): the first one wins.
    if (std::any_of(out.begin(), out.end(),
                    [&](const TorchInstall& o) { return o.usable() && o.series == t.series && o.frameworks == t.frameworks; }) &&
        t.usable()) {
      continue;
    }
    out.push_back(std::move(t));
  }
  std::stable_sort(out.begin(), out.end(), [](const TorchInstall& a, const TorchInstall& b) {
    return compareVersions(a.version, b.version) > 0;
  });
  return out;
}

std::optional<TorchInstall> pickTorch(const std::vector<TorchInstall>& installs, const std::string& series) {
  // torch's own stacks run where nothing else was installed beside it, if they can.
  for (bool plain : {true, false}) {
    for (const auto& t : installs) {
      if (t.usable() && (series.empty() || t.series == series) && (!plain || t.frameworks.empty())) return t;
    }
  }
  return std::nullopt;
}

std::optional<TorchInstall> pickFramework(const std::vector<TorchInstall>& installs, const std::string& framework,
                                          const std::string& series) {
  std::optional<TorchInstall> best;
  for (const auto& t : installs) {
    auto it = t.frameworks.find(framework);
    if (!t.usable() || it == t.frameworks.end() || torchSeries(it->second).empty()) continue;
    if (!series.empty() && torchSeries(it->second) != series) continue;
    if (!best || compareVersions(it->second, best->frameworks.at(framework)) > 0) best = t;
  }
  return best;
}

}  // namespace faultline::launch
