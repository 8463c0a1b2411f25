// The check that each stack's launcher starts.
#include "harness/launch/stacks.h"

#include <stdlib.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <future>

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
  for (const auto& t : installs) {
    const std::string v = "@" + t.series;
    if (!t.usable()) {
      for (const char* l : {"builtin", "torchrun", "launch", "spawn"}) {
        out.push_back({std::string(l) + (t.series.empty() ? "" : v), t.version, t.python, t.problem});
      }
      continue;
    }
    AvailableStack builtin{"builtin" + v, t.version, "faultline's launcher; Python trainers on " + t.python, ""};
    if (t.trainer.empty()) {
      builtin.problem = "Python trainers only: no reference trainer built against torch " + t.series +
                        " (faultline-trainer-torch" + t.series + ")";
    } else {
      builtin.program += "; reference trainer " + t.trainer;
    }
    out.push_back(builtin);
    out.push_back({"torchrun" + v, t.version, t.torchrun, t.torchrun.empty() ? "no torchrun beside " + t.python : ""});
    // A one-rank job with the flags a run gets: --help alone passes where the
    // default --redirects/--tee crash (torch 1.13 on Python 3.11).
    auto job = [&](std::vector<std::string> launcher, const std::string& logs) {
      auto port = findFreePort();
      launcher.insert(launcher.end(), {"--nproc_per_node=1", "--master_port=" + std::to_string(port ? *port : 29500)});
      for (auto& f : elasticLogFlags(logs)) launcher.push_back(f);
      launcher.insert(launcher.end(), {"--no_python", "/bin/true"});
      return launcher;
    };
    if (!t.torchrun.empty()) {
      checks.push_back({out.size() - 1, job({t.torchrun}, scratch + "/torchrun" + v), "a one-rank torchrun job"});
    }
    out.push_back({"launch" + v, t.version, t.python + " -m torch.distributed.launch",
                   t.has_launch ? "" : "torch " + t.version + " no longer ships torch.distributed.launch"});
    if (t.has_launch) {
      checks.push_back({out.size() - 1, job({t.python, "-m", "torch.distributed.launch", "--use_env"}, scratch + "/launch" + v),
                        "a one-rank torch.distributed.launch job"});
    }
    out.push_back({"spawn" + v, t.version, t.python + " (torch.multiprocessing.spawn)", ""});
    checks.push_back({out.size() - 1, {t.python, "-c", "import torch.multiprocessing as m, torch.distributed as d; m.spawn; assert d.is_available()"},
                      "import torch.multiprocessing"});
  }
  out.push_back({"external", "", "the scenario's own command", ""});
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
