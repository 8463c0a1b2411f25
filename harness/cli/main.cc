// The `faultline` entry point: parses the command line (CONTRACT.md section 1)
// and maps what is left of errors to exit statuses.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <signal.h>
#include <unistd.h>

#include "harness/agent/agent.h"
#include "harness/cli/exec_command.h"
#include "harness/cli/explain_command.h"
#include "harness/cli/report_command.h"
#include "harness/cli/scenario_command.h"
#include "harness/cli/stacks_command.h"
#include "harness/launch/stacks.h"

namespace {

// The running binary, so a suite can start one `faultline run` per scenario.
std::string selfExe(const char* argv0) {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string(argv0);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace faultline::cli;
  // A closed stdout (`faultline exec ... | head`) is no reason to die: a write
  // to it fails with EPIPE instead, the stream stops printing, and the run,
  // its reports and its exit status go on as they would. Every process the
  // harness starts gets SIGPIPE's default back before it execs
  // (launch/process_spawn.cc, the agent), so no rank inherits this.
  ::signal(SIGPIPE, SIG_IGN);
  // Everything after the first "--" is the stack's command, untouched by CLI11.
  std::vector<std::string> command;
  int cli_argc = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      command.assign(argv + i + 1, argv + argc);
      cli_argc = i;
      break;
    }
  }

  CLI::App app{"faultline: fault-injection harness for DDP training stacks"};
  app.require_subcommand(1);
  ExecOptions exec;
  int nproc = 0;
  auto* exec_cmd = app.add_subcommand("exec", "observe and diagnose any command");
  auto* nproc_opt = exec_cmd->add_option("--nproc", nproc, "ranks to start (builtin launcher)");
  exec_cmd->add_option(
      "--max-restarts", exec.max_restarts,
      "builtin: restart every rank after a failure, up to N times, as torchrun --max-restarts does (default 0)");
  exec_cmd->add_option("--launcher", exec.launcher, "builtin | external | lightning | accelerate | deepspeed | ray (all but builtin: COMMAND is the launcher process)");
  exec_cmd->add_option("--hang-timeout", exec.hang_timeout_s,
                       "seconds without progress that make a hang, the adaptive detection's upper bound (default 300; 0: off)");
  exec_cmd->add_option("--hang-factor", exec.hang_factor,
                       "adaptive hang detection: a wait this many times its collective's learned p99 (default 10; 0: off)");
  exec_cmd->add_option("--hang-floor", exec.hang_floor_s, "adaptive hang detection: the least threshold in seconds (default 0.5)");
  exec_cmd->add_option("--hang-idle", exec.hang_idle_s,
                       "hang detection without history: a rank idle (no CPU, no I/O) this many seconds outside the collective "
                       "its peers wait in is hung; 2.5x at the rendezvous (default 1; 0: off)");
  exec_cmd->add_option("--deadline", exec.deadline_s, "wall-clock limit of the run in seconds (0: none)");
  exec_cmd->add_option("--grace", exec.grace_s, "SIGTERM to SIGKILL grace in seconds");
  exec_cmd->add_option("-o,--out", exec.out_dir, "run directory");
  exec_cmd->add_option("--fault", exec.faults,
                       "a scripted fault, KIND:rank=R:step=N (or collective=K, op=OP[:nth=N], after=T; arg=X; "
                       "by=supervisor), repeatable (docs/SCENARIOS.md)");
  exec_cmd->add_option("--library-path", exec.library_paths,
                       "a path prefix whose code is library code, not the user's (repeatable; docs/DIAGNOSIS.md)");
  bool exec_no_instrument = false;
  exec_cmd->add_flag("--no-instrument", exec_no_instrument,
                     "run the stack without the Python shim and the LD_PRELOAD interposer");
  // Errors fail, warnings are reported: --fail-on warning makes warnings fail too.
  std::string exec_fail_on = "error";
  exec_cmd->add_option("--fail-on", exec_fail_on, "the least finding severity that fails the run: error | warning")
      ->check(CLI::IsMember({"error", "warning"}));
  exec_cmd->prefix_command();  // without "--", the first positional starts COMMAND

  std::string run_dir;
  bool json = false;
  auto* explain_cmd = app.add_subcommand("explain", "diagnose a finished run again");
  explain_cmd->add_option("RUN_DIR", run_dir)->required();
  explain_cmd->add_flag("--json", json, "print the report as JSON");

  // builtin, torchrun, launch, spawn, external; all but external optionally @MAJOR.MINOR.
  auto stack_name = CLI::Validator(
      [](std::string& v) {
        auto parsed = faultline::launch::parseStackName(v);
        return parsed ? std::string() : parsed.error().message;
      },
      "STACK[@MAJOR.MINOR]");
  std::vector<std::string> run_files;
  ScenarioRunOptions run_opts;
  run_opts.out_dir = "faultline-out";
  auto* run_cmd = app.add_subcommand("run", "run scenarios and judge their expectations");
  run_cmd->add_option("SCENARIO", run_files, "scenario .toml files")->required();
  run_cmd->add_option("--stack", run_opts.stack, "run on this stack instead of the scenario's own")->check(stack_name);
  run_cmd->add_option("-o,--out", run_opts.out_dir, "run directory");
  run_cmd->add_option("--library-path", run_opts.library_paths,
                      "a path prefix whose code is library code, beside each scenario's [diagnose] library_paths (repeatable)");
  bool run_no_instrument = false;
  run_cmd->add_flag("--no-instrument", run_no_instrument, "without the Python shim and the LD_PRELOAD interposer");
  std::string run_fail_on = "error";
  run_cmd->add_option("--fail-on", run_fail_on, "error | warning: warning also fails a run that reports a warning finding")
      ->check(CLI::IsMember({"error", "warning"}));
  run_cmd->add_flag("--strict", run_opts.exit.strict, "a scenario that ran on no stack (unsupported) fails");

  SuiteOptions suite;
  suite.run.out_dir = "faultline-suite";
  auto* suite_cmd = app.add_subcommand("suite", "run a catalog of scenarios in parallel");
  suite_cmd->add_option("PATH", suite.paths, "scenario files or directories (default: scenarios)");
  suite_cmd->add_option("--tag", suite.tags, "only scenarios with this tag (repeatable)");
  suite_cmd->add_option("--stack", suite.run.stack, "run every scenario on this stack")->check(stack_name);
  suite_cmd->add_option("-j,--jobs", suite.jobs, "scenarios at a time (default: the number of cores)")->check(CLI::PositiveNumber);
  suite_cmd->add_option("-o,--out", suite.run.out_dir, "suite directory");
  bool suite_no_instrument = false;
  suite_cmd->add_flag("--no-instrument", suite_no_instrument, "without the Python shim and the LD_PRELOAD interposer");
  std::string suite_fail_on = "error";
  suite_cmd->add_option("--fail-on", suite_fail_on, "error | warning: warning also fails a run that reports a warning finding")
      ->check(CLI::IsMember({"error", "warning"}));
  suite_cmd->add_flag("--strict", suite.run.exit.strict, "a scenario that ran on no stack (unsupported) fails");
  suite_cmd->add_option("--catalog", suite.catalog,
                        "run on every stack of `faultline stacks` and write the failure-mode catalog (Markdown) here");
  suite_cmd->add_flag("--keep", suite.catalog_keep,
                      "with --catalog: read the cells already run under -o instead of running them again, and run "
                      "only the others (remove a cell's or a stack's directory to rerun it)");

  std::vector<std::string> list_paths;
  auto* list_cmd = app.add_subcommand("list", "print the scenario catalog");
  list_cmd->add_option("PATH", list_paths, "scenario files or directories (default: scenarios)");
  std::vector<std::string> list_tags;
  list_cmd->add_option("--tag", list_tags, "only scenarios with this tag (repeatable)");

  bool stacks_json = false;
  auto* stacks_cmd = app.add_subcommand("stacks", "list the stacks this machine can drive and whether each works");
  stacks_cmd->add_flag("--json", stacks_json, "print them as JSON");

  faultline::agent::AgentOptions agent_opts;
  auto* agent_cmd = app.add_subcommand("agent", "run one node's part of a multi-node job and record it (docs/MULTINODE.md)");
  agent_cmd->add_option("-o,--out", agent_opts.out_dir, "run directory (default: FAULTLINE_RUN_DIR)");
  agent_cmd->add_option("--node", agent_opts.node, "this node's name (default with --slurm-task: SLURMD_NODENAME)");
  agent_cmd->add_option("--link", agent_opts.link, "a network interface whose operstate is sampled every 50 ms");
  agent_cmd->add_flag("--slurm-task", agent_opts.slurm_task,
                      "COMMAND is one rank of a Slurm step: RANK, LOCAL_RANK, WORLD_SIZE, ... from SLURM_*");

  std::string report_dir;
  auto* report_cmd = app.add_subcommand("report", "re-render report files from report.json");
  report_cmd->add_option("RUN_DIR", report_dir)->required();

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // FAULTLINE_NO_CGROUP=1 forces the subreaper fallback of containment.
  const char* no_cgroup = std::getenv("FAULTLINE_NO_CGROUP");
  const bool allow_cgroup = !(no_cgroup && std::strcmp(no_cgroup, "1") == 0);
  if (*exec_cmd) {
    const auto rest = exec_cmd->remaining();
    if (!rest.empty() && (!command.empty() || rest.front().rfind("-", 0) == 0)) {
      // prefix_command() hands unknown options over as "remaining": they are errors.
      std::cerr << "faultline exec: unknown option or argument '" << rest.front() << "'\n";
      return 2;
    }
    if (command.empty()) command = rest;
    if (command.empty()) {
      std::cerr << "faultline exec: no command given (faultline exec [options] -- COMMAND [ARGS...])\n";
      return 2;
    }
    exec.command = command;
    if (nproc_opt->count() > 0) exec.nproc = nproc;
    exec.allow_cgroup = allow_cgroup;
    exec.fail_on = faultline::failOnFromName(exec_fail_on).value_or(faultline::FailOn::kError);
    if (!exec_no_instrument) exec.instruments = findInstruments(selfExe(argv[0]));
    try {
      return runExec(exec, std::cout, std::cerr);
    } catch (const std::exception& e) {
      std::cerr << "faultline exec: internal error: " << e.what() << "\n";
      return 3;
    }
  }
  if (*agent_cmd) {
    if (!agent_cmd->remaining().empty()) {
      std::cerr << "faultline agent: unexpected argument '" << agent_cmd->remaining().front()
                << "' (faultline agent --node NAME [options] -- COMMAND [ARGS...])\n";
      return 2;
    }
    agent_opts.command = command;
    try {
      return faultline::agent::runAgent(agent_opts, std::cerr);
    } catch (const std::exception& e) {
      std::cerr << "faultline agent: internal error: " << e.what() << "\n";
      return 3;
    }
  }
  if ((*run_cmd || *suite_cmd || *list_cmd || *report_cmd || *stacks_cmd) && !command.empty()) {
    std::cerr << "faultline: unexpected arguments after --\n";
    return 2;
  }
  const std::string self = selfExe(argv[0]);
  try {
    if (*run_cmd) {
      run_opts.tools = findTools(self);
      run_opts.allow_cgroup = allow_cgroup;
      run_opts.instrument = !run_no_instrument;
      run_opts.exit.fail_on = faultline::failOnFromName(run_fail_on).value_or(faultline::FailOn::kError);
      if (!run_opts.instrument) run_opts.tools.instruments = {};
      return runCommand(run_files, run_opts, std::cout, std::cerr);
    }
    if (*suite_cmd) {
      if (suite.paths.empty()) suite.paths = {"scenarios"};
      suite.run.tools = findTools(self);
      suite.run.allow_cgroup = allow_cgroup;
      suite.run.instrument = !suite_no_instrument;
      suite.run.exit.fail_on = faultline::failOnFromName(suite_fail_on).value_or(faultline::FailOn::kError);
      if (!suite.run.instrument) suite.run.tools.instruments = {};
      suite.self_exe = self;
      suite.progress_tty = ::isatty(STDOUT_FILENO) != 0;
      return suiteCommand(suite, std::cout, std::cerr);
    }
    if (*list_cmd) {
      return listCommand(list_paths.empty() ? std::vector<std::string>{"scenarios"} : list_paths, list_tags, std::cout,
                         std::cerr);
    }
    if (*report_cmd) return runReport(report_dir, std::cout, std::cerr);
    if (*stacks_cmd) return stacksCommand(self, stacks_json, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "faultline: internal error: " << e.what() << "\n";
    return 3;
  }
  if (*explain_cmd) {
    if (!command.empty()) {
      std::cerr << "faultline explain: unexpected arguments after --\n";
      return 2;
    }
    return runExplain(run_dir, json, std::cout, std::cerr);
  }
  return 2;
}
