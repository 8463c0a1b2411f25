// The `faultline` entry point: parses the command line (CONTRACT.md section 1)
// and maps what is left of errors to exit statuses.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "harness/cli/exec_command.h"
#include "harness/cli/explain_command.h"

int main(int argc, char** argv) {
  using namespace faultline::cli;
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
  exec_cmd->add_option("--launcher", exec.launcher, "builtin | external")->check(CLI::IsMember({"builtin", "external"}));
  exec_cmd->add_option("--hang-timeout", exec.hang_timeout_s, "seconds without progress that make a hang (0: off)");
  exec_cmd->add_option("--deadline", exec.deadline_s, "wall-clock limit of the run in seconds (0: none)");
  exec_cmd->add_option("--grace", exec.grace_s, "SIGTERM to SIGKILL grace in seconds");
  exec_cmd->add_option("-o,--out", exec.out_dir, "run directory");
  exec_cmd->prefix_command();  // without "--", the first positional starts COMMAND

  std::string run_dir;
  bool json = false;
  auto* explain_cmd = app.add_subcommand("explain", "diagnose a finished run again");
  explain_cmd->add_option("RUN_DIR", run_dir)->required();
  explain_cmd->add_flag("--json", json, "print the report as JSON");

  try {
    app.parse(cli_argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
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
    const char* no_cgroup = std::getenv("FAULTLINE_NO_CGROUP");
    exec.allow_cgroup = !(no_cgroup && std::strcmp(no_cgroup, "1") == 0);
    try {
      return runExec(exec, std::cout, std::cerr);
    } catch (const std::exception& e) {
      std::cerr << "faultline exec: internal error: " << e.what() << "\n";
      return 3;
    }
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
