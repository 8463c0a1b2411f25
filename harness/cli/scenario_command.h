// `faultline run`, `suite` and `list`: scenarios through the whole pipeline
// (plan -> supervise -> diagnose -> judge -> report), one run directory each.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "harness/launch/stack_plan.h"
#include "harness/model/report.h"
#include "harness/model/verdict.h"
#include "harness/scenario/scenario.h"

namespace faultline::cli {

struct ScenarioRunOptions {
  std::string stack;    // "" = each scenario's own launcher
  std::string out_dir;  // the run directory (run) or the suite directory (suite)
  launch::Tools tools;
  bool allow_cgroup = true;
  bool instrument = true;  // false: --no-instrument (tools.instruments empty; a suite passes it on)
  ExitPolicy exit;         // --strict, --fail-on (a suite passes --fail-on on)
  std::vector<std::string> library_paths;  // --library-path, besides each scenario's [diagnose] library_paths
};

// Runs one scenario into `run_dir` and writes report.json, supervisor.json,
// junit.xml, report.md and report.html there. Never throws; a harness failure
// is verdict "error" in the returned report.
Report runScenario(const scenario::Scenario& s, const ScenarioRunOptions& opts, const std::string& run_dir,
                   std::ostream& err);

struct SuiteOptions {
  ScenarioRunOptions run;
  std::vector<std::string> paths;
  std::vector<std::string> tags;  // any of them; empty = all
  int jobs = 0;                   // 0 = what fits the cores
  bool progress_tty = false;      // live display instead of plain lines
  std::string self_exe;           // the faultline binary: each scenario runs in its own process
  std::string catalog;            // set: run on every stack of `faultline stacks`, write the failure-mode catalog here
  // With catalog: every cell already run under the out directory (its run
  // directory has a report.json) is read again, not run again; only the
  // others run (a scenario added since, a stack not run yet). Remove a cell's
  // or a stack's directory to rerun it.
  bool catalog_keep = false;
  // A suite's scenarios whose run directory already holds a report.json are
  // read, not run (what catalog_keep asks of each stack).
  bool keep_runs = false;
  bool warn_unsupported = true;   // say on stderr which scenarios ran on no stack
};

// Exit statuses of CONTRACT.md section 1.
int runCommand(const std::vector<std::string>& files, const ScenarioRunOptions& opts, std::ostream& out, std::ostream& err);
int suiteCommand(const SuiteOptions& opts, std::ostream& out, std::ostream& err);
// `faultline list [PATH...] [--tag TAG]...`
int listCommand(const std::vector<std::string>& paths, const std::vector<std::string>& tags, std::ostream& out,
                std::ostream& err);

// The stacks' programs: the torch installs (launch::discoverTorch over
// FAULTLINE_PYTHONS or the default interpreters), each with the reference
// trainer built against it next to the faultline binary
// (faultline-trainer-torchMAJOR.MINOR), FAULTLINE_TRAINER overriding that for
// every version; the instruments as findInstruments says.
launch::Tools findTools(const std::string& self_exe);

// Where the reference trainers are: build/reference-trainer in the build tree,
// else the faultline binary's own directory.
std::string findTrainerDir(const std::string& self_exe);
// Where the launch stage's Python programs are (the spawn stack's
// spawn_runner.py): $FAULTLINE_LAUNCH_SCRIPTS, the build tree, or the installed share/.
std::string findLaunchScriptsDir(const std::string& self_exe);

// The black-box instruments (docs/BLACKBOX.md): FAULTLINE_SHIM_DIR and
// FAULTLINE_PRELOAD when set (an empty value turns that one off), else next to
// the faultline binary, in the build tree (build/harness/probe/python,
// build/harness/probe/preload/libfaultline_preload.so) or an installed layout
// (share/faultline/python, lib/faultline/libfaultline_preload.so beside bin/).
// One that cannot be found (the interposer not built) is left out.
launch::Instruments findInstruments(const std::string& self_exe);

}  // namespace faultline::cli
