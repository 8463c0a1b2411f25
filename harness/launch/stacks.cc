// The stacks this machine has, as each launcher offers itself, and the check
// that each one starts.
#include "harness/launch/stacks.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>

#include "harness/launch/launcher.h"
#include "harness/launch/process_spawn.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/stack_plan.h"
#include "harness/model/torch_version.h"

namespace faultline::launch {
namespace {

// The last line the check printed on failure is the most telling one.
std::string failureText(const std::string& what, const Result<CommandResult>& r) {
  if (!r) return what + ": " + r.error().message;
  std::string out = r->err.empty() ? r->out : r->err;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  const auto nl = out.rfind('\n');
  const std::string last = nl == std::string::npos ? out : out.substr(nl + 1);
  return what + " failed (exit status " + std::to_string(r->wait_status) + ")" + (last.empty() ? "" : ": " + last);
}

// A check's command and the stack it belongs to.
struct Check {
  size_t index;
  std::vector<std::string> argv;
  std::string what;
};

}  // namespace

std::vector<AvailableStack> availableStacks(const std::vector<TorchInstall>& installs, bool check) {
  std::vector<AvailableStack> out;
  std::vector<Check> checks;
  // Where the checks' jobs put their logs (the --log_dir of a real run).
  std::string scratch;
  if (check) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/faultline-stacks-XXXXXX";
    if (::mkdtemp(tmpl.data())) scratch = tmpl;
  }
  // Each versioned launcher at each install, newest first (torch's own once
  // per torch series, a framework's where it is installed, at its series);
  // then the stacks without a version (external).
  for (const auto& t : installs) {
    for (const Launcher* l : allLaunchers()) {
      if (!isVersionedStack(l->name())) continue;
      std::string series = t.series;
      if (const char* framework = l->traits().framework) {
        auto it = t.frameworks.find(framework);
        if (it == t.frameworks.end()) continue;
        series = torchSeries(it->second);
      } else if (auto own = pickTorch(installs, t.series); t.usable() && own && own->python != t.python) {
        continue;  // torch's own stacks at this series run at another install
      }
      const std::string name = l->name() + (series.empty() ? "" : "@" + series);
      if (!t.usable()) {
        out.push_back({name, t.version, t.python, t.problem});
        continue;
      }
      StackOffer o = l->offer(&t, scratch);
      out.push_back({name, t.version, o.program, o.problem});
      if (o.problem.empty() && !o.check.empty()) checks.push_back({out.size() - 1, o.check, o.check_what});
    }
  }
  for (const Launcher* l : allLaunchers()) {
    if (isVersionedStack(l->name())) continue;
    StackOffer o = l->offer(nullptr, scratch);
    out.push_back({l->name(), "", o.program, o.problem});
  }
  if (!check) return out;
  if (scratch.empty()) {
    for (const auto& c : checks) out[c.index].problem = "cannot make a scratch directory for the check";
    return out;
  }
  const auto env = toEnvStrings(currentEnvironment());
  std::vector<std::future<Result<CommandResult>>> running;
  for (const auto& c : checks) {
    running.push_back(std::async(std::launch::async, [&env, argv = c.argv] { return runToCompletion(argv, env, 120); }));
  }
  for (size_t i = 0; i < checks.size(); ++i) {
    auto r = running[i].get();
    if (!r || !r->ok()) out[checks[i].index].problem = failureText(checks[i].what, r);
  }
  std::error_code ec;
  if (!scratch.empty()) std::filesystem::remove_all(scratch, ec);
  return out;
}

}  // namespace faultline::launch
