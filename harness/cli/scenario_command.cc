// Scenario runs and the parallel suite.
#include "harness/cli/scenario_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <thread>

#include "harness/assemble/assemble.h"
#include "harness/cli/observe.h"
#include "harness/cli/report_command.h"
#include "harness/model/atomic_file.h"
#include "harness/model/run_layout.h"
#include "harness/model/stack_name.h"
#include "harness/launch/helper_tools.h"
#include "harness/launch/job_pool.h"
#include "harness/launch/rank_env.h"
#include "harness/launch/run_layout.h"
#include "harness/launch/stacks.h"
#include "reports/render.h"

namespace faultline::cli {
namespace {

// The suite's progress and summary columns: the longest scenario name and
// stack label (metrics-accelerate-gather-for-metrics, torchrun-multinode@2.13)
// with room to spare, so a row never runs its columns together.
constexpr int kNameColumn = 42;
constexpr int kStackColumn = 25;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int64_t msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

std::string dirOf(const std::string& file) {
  const fs::path p = fs::absolute(file).parent_path();
  return p.string();
}

// report.json, once per run, and its renderings.
void finish(const Report& report, const std::string& run_dir, std::ostream& err) {
  if (auto w = writeReport(report, RunLayout(run_dir).reportPath()); !w) err << "faultline: " << w.error().str() << "\n";
  if (auto w = reports::renderRun(report, run_dir); !w) err << "faultline: " << w.error().str() << "\n";
}

// The exit status of several runs, each by the verdict table.
int exitStatusFor(const std::vector<const Report*>& reports, const ExitPolicy& policy) {
  std::vector<int> statuses;
  for (const Report* r : reports) statuses.push_back(exitStatusOf(*r, policy));
  return exitStatusOf(statuses);
}

// Said loudly: a scenario that ran on no stack at all checked nothing, and a
// CI job that runs only it stays green (unless --strict).
void warnRanNowhere(const char* command, const std::string& name, const Report& r, std::ostream& err) {
  const std::string reason = r.problems.unsupported_reason ? *r.problems.unsupported_reason
                                 : std::string("unsupported");
  err << "faultline " << command << ": warning: scenario " << name << " ran on no stack (" << r.stack.launcher
      << ": " << reason << "); nothing was checked\n";
}

std::string runDirName(const std::string& scenario, const std::string& stack) {
  return stack.empty() ? scenario : scenario + "--" + stack;
}

std::string fmtSeconds(int64_t ms) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << static_cast<double>(ms) / 1000.0 << " s";
  return o.str();
}

// The first candidate that exists, canonical; "" if none does.
std::string firstExisting(std::initializer_list<fs::path> candidates) {
  std::error_code ec;
  for (const fs::path& c : candidates) {
    if (fs::exists(c, ec)) return fs::canonical(c, ec).string();
  }
  return "";
}

// An instrument from its variable (set, even empty, wins), else from the candidates.
std::string instrumentPath(const char* var, std::initializer_list<fs::path> candidates) {
  if (const char* v = std::getenv(var)) return v;
  return firstExisting(candidates);
}

}  // namespace

launch::Instruments findInstruments(const std::string& self_exe) {
  const fs::path bin = fs::path(self_exe).parent_path();
  launch::Instruments in;
  // A shim directory is the one that holds its sitecustomize.py.
  if (const char* v = std::getenv("FAULTLINE_SHIM_DIR")) {
    in.python_shim_dir = v;
  } else if (auto f = firstExisting({bin / "../../harness/probe/python/sitecustomize.py",
                                     bin / "../share/faultline/python/sitecustomize.py"});
             !f.empty()) {
    in.python_shim_dir = fs::path(f).parent_path().string();
  }
  in.preload_library = instrumentPath("FAULTLINE_PRELOAD", {bin / "../../harness/probe/preload/libfaultline_preload.so",
                                                            bin / "../lib/faultline/libfaultline_preload.so"});
  return in;
}

std::string findTrainerDir(const std::string& self_exe) {
  const fs::path bin = fs::path(self_exe).parent_path();
  // The build tree (build/harness/cli/faultline -> build/reference-trainer/)
  // and an installed layout (bin/faultline beside bin/faultline-trainer-torchX.Y).
  std::error_code ec;
  for (const fs::path& c : {bin / "../../reference-trainer", bin}) {
    if (fs::exists(c / "faultline-trainer", ec) || fs::exists(c / "faultline-trainer-torch1.13", ec)) {
      return fs::canonical(c, ec).string();
    }
  }
  return fs::exists(bin / "../../reference-trainer", ec) ? fs::canonical(bin / "../../reference-trainer", ec).string()
                                                         : bin.string();
}

std::string findLaunchScriptsDir(const std::string& self_exe) {
  const fs::path bin = fs::path(self_exe).parent_path();
  if (const char* v = std::getenv("FAULTLINE_LAUNCH_SCRIPTS"); v && *v) return v;
  const std::string f = firstExisting({bin / "../../harness/launch/python/spawn_runner.py",
                                       bin / "../share/faultline/launch/spawn_runner.py"});
  return f.empty() ? "" : fs::path(f).parent_path().string();
}

launch::Tools findTools(const std::string& self_exe) {
  launch::Tools t;
  t.instruments = findInstruments(self_exe);
  if (const char* v = std::getenv("FAULTLINE_TRAINER"); v && *v) t.trainer_override = v;
  t.torches = launch::discoverTorch(launch::torchInterpreterCandidates(), findTrainerDir(self_exe));
  t.gpus = launch::countGpus();
  t.helpers = launch::findHelperTools(launch::currentEnvironment());
  t.faultline_bin = self_exe;
  t.launch_scripts_dir = findLaunchScriptsDir(self_exe);
  return t;
}

supervise::SuperviseOptions superviseOptions(const scenario::Scenario& s, const launch::StackPlan& plan,
                                             const ScenarioRunOptions& opts, const std::string& run_dir) {
  supervise::SuperviseOptions so;
  so.launch = plan.launch;
  so.outside_faults = plan.outside_faults;
  so.requested_faults = plan.requested_faults;
  so.out_dir = run_dir;
  so.hang_timeout_s = s.limits.hang_timeout_s;
  so.deadline_s = s.limits.deadline_s;
  so.grace_s = s.limits.grace_s;
  so.max_restarts = s.stack.max_restarts;
  so.adaptive.factor = s.limits.hang_factor;
  so.adaptive.floor_s = s.limits.hang_floor_s;
  so.adaptive.idle_s = s.limits.hang_idle_s;
  so.adaptive.rendezvous_idle_s = 2.5 * s.limits.hang_idle_s;
  so.allow_cgroup = opts.allow_cgroup;
  addLibraryPaths(so, s.library_paths, dirOf(s.file));
  addLibraryPaths(so, opts.library_paths, launch::absolutePath("."));
  return so;
}

// A scenario that expects recovery.same_result has a fault-free twin: the
// same scenario without its fault, run after it into OUT/twin, whose final
// parameters the diagnosis compares with the run's (docs/DIAGNOSIS.md,
// "Attempts and recovery").
bool needsTwin(const scenario::Scenario& s) {
  auto names = [](const std::vector<scenario::Expect>& v) {
    return std::any_of(v.begin(), v.end(), [](const scenario::Expect& e) { return e.path == "recovery.same_result"; });
  };
  return s.fault && (names(s.expect) || std::any_of(s.expect_on.begin(), s.expect_on.end(),
                                                    [&](const auto& kv) { return names(kv.second); }));
}

// The twin's run. What it did is read back from OUT/twin by the diagnosis;
// a twin that could not run leaves nothing there, and same_result stays absent.
void runTwin(scenario::Scenario s, const ScenarioRunOptions& opts, const launch::Tools& tools, const std::string& dir,
             std::ostream& err) {
  s.fault.reset();
  if (auto made = launch::makeDirs(dir); !made) {
    err << "faultline: the fault-free twin: " << made.error().message << "\n";
    return;
  }
  auto port = launch::findFreePort();
  const auto plan = launch::planStack(s, opts.stack, tools, dir, port ? *port : 29500, dirOf(s.file));
  if (plan.unsupported) return;
  if (auto record = superviseStack(superviseOptions(s, plan, opts, dir), err); !record) {
    err << "faultline: the fault-free twin: " << record.error().message << "\n";
  }
}

Report runScenario(const scenario::Scenario& s, const ScenarioRunOptions& opts, const std::string& run_dir_in,
                   std::ostream& err) {
  const auto t0 = Clock::now();
  const std::string run_dir = launch::absolutePath(run_dir_in);
  Report report;
  if (auto made = launch::makeDirs(run_dir); !made) {
    report = assemble::harnessErrorReport(opts.stack, {}, made.error(), msSince(t0));
    report.scenario = ScenarioRef{s.name, s.file};
    return report;  // nowhere to write it
  }
  auto port = launch::findFreePort();
  launch::Tools tools = opts.tools;
  if (!s.stack.instrument) tools.instruments = {};  // stack.instrument = false: as --no-instrument
  const auto plan = launch::planStack(s, opts.stack, tools, run_dir, port ? *port : 29500, dirOf(s.file));
  if (plan.unsupported) {
    report = assemble::unsupportedReport(plan.stack, plan.torch, s.stack.world_size, *plan.unsupported);
  } else {
    auto record = superviseStack(superviseOptions(s, plan, opts, run_dir), err);
    // Not after an interrupt: the user asked faultline to stop.
    if (record && !record->interrupted && needsTwin(s)) runTwin(s, opts, tools, RunLayout(run_dir).twinDir(), err);
    std::vector<scenario::Expect> expectations = s.expectationsOn(plan.stack);
    expectations.insert(expectations.end(), plan.implied_expect.begin(), plan.implied_expect.end());
    if (!record) {
      report = assemble::harnessErrorReport(plan.stack, plan.launch.command, record.error(), msSince(t0));
    } else {
      assemble::RunContext ctx;
      ctx.scenario = ScenarioRef{s.name, s.file};
      ctx.stack = plan.stack;
      ctx.torch = plan.torch;
      ctx.expect = &expectations;
      ctx.fail_on = opts.exit.fail_on;
      ctx.wall_ms = msSince(t0);
      report = assemble::reportOfRun(run_dir, ctx, std::move(*record));
      if (report.problems.diagnose_error) {
        err << "faultline: diagnosis failed: " << *report.problems.diagnose_error << "\n";
      }
    }
  }
  report.scenario = ScenarioRef{s.name, s.file};
  report.harness.wall_ms = msSince(t0);
  finish(report, run_dir, err);
  return report;
}

int runCommand(const std::vector<std::string>& files, const ScenarioRunOptions& opts, std::ostream& out,
               std::ostream& err) {
  auto loaded = scenario::loadScenarios(files);
  if (!loaded) {
    err << "faultline run: " << loaded.error().message << "\n";
    return 2;
  }
  std::vector<Report> reports;
  for (const auto& s : *loaded) {
    const std::string dir = loaded->size() == 1 ? opts.out_dir : opts.out_dir + "/" + runDirName(s.name, opts.stack);
    const Report& r = reports.emplace_back(runScenario(s, opts, dir, err));
    out << verdictName(r.verdict) << "  " << s.name << " (" << r.stack.launcher << ")  " << reports::headline(r)
        << "\n  report: " << RunLayout(launch::absolutePath(dir)).htmlPath() << "\n";
    for (const auto& e : r.expectations) {
      if (!e.ok) {
        out << "  " << expectationStatusName(e.status) << ": " << e.what << " expected " << e.expected.dump() << ", actual "
            << e.actual.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
            << (e.reason.empty() ? "" : " (" + e.reason + ")") << "\n";
      }
    }
    if (r.verdict == Verdict::kUnsupported) warnRanNowhere("run", s.name, r, err);
  }
  std::vector<const Report*> all;
  for (const auto& r : reports) all.push_back(&r);
  return exitStatusFor(all, opts.exit);
}

// `--tag`: none given takes every scenario; several take those with any of them.
bool hasAnyTag(const scenario::Scenario& s, const std::vector<std::string>& tags) {
  return tags.empty() || std::any_of(tags.begin(), tags.end(), [&](const std::string& t) { return s.hasTag(t); });
}

int listCommand(const std::vector<std::string>& paths, const std::vector<std::string>& tags, std::ostream& out,
                std::ostream& err) {
  auto all = scenario::loadScenarios(paths);
  if (!all) {
    err << "faultline list: " << all.error().message << "\n";
    return 2;
  }
  std::vector<scenario::Scenario> listed;
  for (auto& s : *all) {
    if (hasAnyTag(s, tags)) listed.push_back(std::move(s));
  }
  size_t width = 8;
  for (const auto& s : listed) width = std::max(width, s.name.size());
  for (const auto& s : listed) {
    std::string tags;
    for (const auto& t : s.tags) tags += (tags.empty() ? "" : ",") + t;
    std::string stacks = s.stack.launcher;
    for (const auto& st : s.stack.stacks) {
      if (st != s.stack.launcher) stacks += "," + st;
    }
    if (!s.stack.torch.empty()) stacks += " (torch " + s.stack.torch + ")";
    out << std::left << std::setw(static_cast<int>(width) + 2) << s.name << std::setw(22) << ("[" + tags + "]")
        << std::setw(24) << stacks << s.description << "\n";
  }
  out << listed.size() << " scenarios\n";
  return 0;
}

int catalogCommand(const SuiteOptions& o, std::ostream& out, std::ostream& err);

namespace {

// `faultline run FILE` for one scenario: each scenario in its own harness
// process, so runs share no signal handlers, reapers or cgroups.
launch::Job scenarioJob(const SuiteOptions& o, const scenario::Scenario& s, const std::string& dir) {
  launch::Job job;
  job.argv = {o.self_exe, "run", s.file, "-o", dir};
  if (!o.run.stack.empty()) job.argv.insert(job.argv.end(), {"--stack", o.run.stack});
  if (!o.run.instrument) job.argv.push_back("--no-instrument");
  if (o.run.exit.fail_on == FailOn::kWarning) job.argv.insert(job.argv.end(), {"--fail-on", "warning"});
  // Each run finds its torch installs again; the suite found them already, so
  // its runs ask only the interpreters that have torch (asking the python3 on
  // PATH costs a run 0.14 s where it is a pyenv shim).
  launch::Environment env = launch::currentEnvironment();
  if (!env.count("FAULTLINE_PYTHONS")) {
    std::string found;
    for (const auto& t : o.run.tools.torches) found += (found.empty() ? "" : ":") + t.python;
    if (!found.empty()) env["FAULTLINE_PYTHONS"] = found;
  }
  job.env = launch::toEnvStrings(env);
  job.log_path = dir + ".log";
  return job;
}

// --keep: the cell of `stack` in `report`, read, if it is still the
// scenario's; nullopt if it must run. It is when the report exists and is
// newer than the scenario file and than
// every file the command on that stack names (a word with a slash, relative
// ones to the scenario's folder: the trainer script). A scenario or script
// edited since runs again; what those files import is not looked at. An
// `unsupported` cell is planned again, which costs nothing: its reason is
// this faultline's, and the machine may have gained what it lacked.
std::optional<Report> keptCell(const scenario::Scenario& s, const std::string& stack, const std::string& report) {
  std::error_code ec;
  const auto written = fs::last_write_time(report, ec);
  if (ec) return std::nullopt;
  auto r = readReport(report);
  if (!r || r->verdict == Verdict::kUnsupported) return std::nullopt;
  std::vector<std::string> files = {s.file};
  const fs::path here = fs::path(s.file).parent_path();
  for (const std::string& w : s.stack.commandOn(stack.substr(0, stack.find('@')))) {
    if (w.find('/') == std::string::npos) continue;  // a program on PATH, a flag
    files.push_back(fs::path(w).is_absolute() ? w : (here / w).string());
  }
  for (const std::string& f : files) {
    const auto t = fs::last_write_time(f, ec);
    if (!ec && t > written) return std::nullopt;  // a file that is gone is not newer
  }
  return std::move(*r);
}

}  // namespace

int suiteCommand(const SuiteOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.catalog.empty()) return catalogCommand(o, out, err);
  const auto t0 = Clock::now();
  auto catalog = scenario::loadCatalog(o.paths);
  if (!catalog) {
    err << "faultline suite: " << catalog.error().message << "\n";
    return 2;
  }
  // A file that does not parse is that scenario unresolved, with its
  // file:line:col; the rest of the suite runs (`faultline run FILE` exits 2).
  for (const auto& bad : catalog->bad) err << "faultline suite: " << bad.error.message << "\n";
  const auto* loaded = &catalog->scenarios;
  std::vector<const scenario::Scenario*> selected;
  for (const auto& s : *loaded) {
    const bool take = hasAnyTag(s, o.tags);
    if (take) selected.push_back(&s);
  }
  if (selected.empty() && catalog->bad.empty()) {
    err << "faultline suite: no scenario matches the given paths and tags\n";
    return 2;
  }
  const std::string root = launch::absolutePath(o.run.out_dir);
  if (auto made = launch::makeDirs(root); !made) {
    err << "faultline suite: " << made.error().str() << "\n";
    return 3;
  }
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::vector<launch::Job> pool;
  std::vector<std::string> dirs;
  std::vector<size_t> job_of;  // pool index -> selected index
  std::vector<std::pair<size_t, Report>> kept;  // selected indices read from an earlier run
  for (size_t i = 0; i < selected.size(); ++i) {
    dirs.push_back(root + "/" + runDirName(selected[i]->name, o.run.stack));
    if (auto r = o.keep_runs ? keptCell(*selected[i], o.run.stack, RunLayout(dirs.back()).reportPath()) : std::nullopt) {
      kept.emplace_back(i, std::move(*r));
      continue;
    }
    job_of.push_back(i);
    pool.push_back(scenarioJob(o, *selected[i], dirs.back()));
  }
  reports::Suite suite;
  suite.entries.resize(selected.size());
  size_t done = 0;
  out << "faultline suite: " << selected.size() << " scenarios, " << jobs << " at a time, reports in " << root << "\n";

  std::map<size_t, Clock::time_point> running;  // job -> when it started, for the live display
  size_t drawn = 0;
  auto erase = [&] {
    for (size_t i = 0; i < drawn; ++i) out << "\x1b[1A\x1b[2K";
    drawn = 0;
  };
  launch::JobPoolEvents events;
  events.started = [&](size_t j) { running[job_of[j]] = Clock::now(); };
  events.tick = [&] {
    if (!o.progress_tty) return;
    erase();
    for (const auto& [i, started] : running) {
      out << "  running " << selected[i]->name << "  " << fmtSeconds(msSince(started)) << "\n";
      ++drawn;
    }
    out << "  " << done << "/" << selected.size() << " done, " << fmtSeconds(msSince(t0)) << "\n";
    ++drawn;
    out.flush();
  };
  bool start_failed = false;
  // A scenario's entry from its run directory, after its run or from an earlier one.
  // A kept cell's report comes read already; a run's is read from its directory.
  const auto record = [&](size_t i, std::optional<int64_t> wall_ms, std::optional<Report> read = std::nullopt) {
    const scenario::Scenario& s = *selected[i];
    reports::SuiteEntry entry;
    entry.name = s.name;
    entry.tags = s.tags;
    entry.run_dir = fs::path(dirs[i]).filename().string();
    auto r = read ? Result<Report>(std::move(*read)) : readReport(RunLayout(dirs[i]).reportPath());
    if (r) {
      entry.report = std::move(*r);
    } else {
      // Its run left no report (its scenario file edited under the suite and
      // no longer parsed, its process killed): the run directory gets the
      // error the suite records, so what reads it back (a catalog, `faultline
      // report`) finds the same cell.
      entry.report = assemble::missingRunReport(ScenarioRef{s.name, s.file}, r.error(), dirs[i] + ".log");
      entry.report.stack.launcher = o.run.stack;
      if (launch::makeDirs(dirs[i])) finish(entry.report, dirs[i], err);
    }
    entry.stack = entry.report.stack.launcher.empty() ? o.run.stack : entry.report.stack.launcher;
    ++done;
    if (o.progress_tty) erase();
    out << "[" << done << "/" << selected.size() << "] " << std::left << std::setw(12) << verdictName(entry.report.verdict)
        << std::setw(kNameColumn) << s.name << std::setw(kStackColumn) << entry.stack
        << (wall_ms ? fmtSeconds(*wall_ms) : std::string("kept")) << "  " << reports::headline(entry.report) << "\n";
    suite.entries[i] = std::move(entry);
  };
  events.finished = [&](size_t j, const launch::JobOutcome& outcome) {
    const size_t i = job_of[j];
    running.erase(i);
    if (outcome.start_error) {
      err << "faultline suite: cannot start " << o.self_exe << ": " << outcome.start_error->str() << "\n";
      start_failed = true;
      return;
    }
    record(i, outcome.wall_ms);
  };
  for (auto& [i, report] : kept) record(i, std::nullopt, std::move(report));
  launch::runJobs(pool, jobs, events);
  if (start_failed) return 3;
  for (const auto& bad : catalog->bad) {
    reports::SuiteEntry entry;
    entry.name = fs::path(bad.file).stem().string();
    entry.run_dir = runDirName(entry.name, o.run.stack);
    entry.stack = o.run.stack;
    entry.report = assemble::badScenarioReport(ScenarioRef{entry.name, bad.file}, o.run.stack, bad.error.message);
    const std::string dir = root + "/" + entry.run_dir;
    if (auto made = launch::makeDirs(dir); made) finish(entry.report, dir, err);
    out << "[bad] " << std::left << std::setw(12) << "unresolved" << reports::headline(entry.report) << "\n";
    suite.entries.push_back(std::move(entry));
  }
  suite.wall_ms = msSince(t0);
  if (auto w = reports::renderSuite(suite, root); !w) err << "faultline suite: " << w.error().str() << "\n";

  // The summary table: scenario, stack, verdict, root cause, teardown time.
  out << "\n" << std::left << std::setw(kNameColumn) << "scenario" << std::setw(kStackColumn) << "stack" << std::setw(12) << "verdict"
      << std::setw(10) << "teardown" << "root cause\n";
  std::vector<const Report*> reports;
  std::map<std::string, int> counts;
  for (const auto& e : suite.entries) {
    reports.push_back(&e.report);
    ++counts[verdictName(e.report.verdict)];
    out << std::setw(kNameColumn) << e.name << std::setw(kStackColumn) << e.stack << std::setw(12) << verdictName(e.report.verdict)
        << std::setw(10) << (std::to_string(e.report.teardown.duration_ms) + " ms") << reports::headline(e.report) << "\n";
  }
  out << "\n";
  for (const auto& [v, n] : counts) out << v << ": " << n << "  ";
  out << "wall " << fmtSeconds(suite.wall_ms) << "\nreports: " << root << "/index.html, " << root << "/report.md, "
      << root << "/junit.xml, " << root << "/report.json\n";
  if (o.warn_unsupported) {
    for (const auto& e : suite.entries) {
      if (e.report.verdict == Verdict::kUnsupported) warnRanNowhere("suite", e.name, e.report, err);
    }
  }
  return exitStatusFor(reports, o.run.exit);
}

int catalogCommand(const SuiteOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.run.stack.empty()) {
    err << "faultline suite: --catalog runs every stack of `faultline stacks` itself; drop --stack\n";
    return 2;
  }
  // Every stack this machine has: builtin, torchrun, launch and spawn at each
  // torch version (a builtin without a reference trainer still runs the
  // Python scenarios); external is each scenario's own command.
  std::vector<std::string> names;
  std::vector<std::pair<std::string, std::string>> missing;  // stack, why
  for (const auto& a : launch::availableStacks(o.run.tools.torches, /*check=*/false)) {
    const LauncherTraits* t = stackTraits(a.name);
    if (!t || t->is_the_command) continue;
    // A stack that needs no torch of its own (builtin) still runs the
    // scenarios it can where something else it offers is missing.
    if (a.problem.empty() || !t->needs_torch) {
      names.push_back(a.name);
    } else {
      // Said, in the catalog and here: a column that vanishes unsaid reads
      // as a stack nobody supports.
      err << "faultline suite: warning: " << a.name << " is not in the catalog: " << a.problem << "\n";
      missing.emplace_back(a.name, a.problem);
    }
  }
  std::vector<std::pair<std::string, reports::Suite>> stacks;
  int status = 0;
  for (const std::string& stack : names) {
    SuiteOptions one = o;
    one.catalog.clear();
    one.run.stack = stack;
    one.run.out_dir = o.run.out_dir + "/" + stack;
    // A scenario that does not apply to one stack is what a catalog shows;
    // one that ran on none of them is said (and --strict fails) below.
    one.run.exit.strict = false;
    one.warn_unsupported = false;
    // --keep: the cells already run are read again; only the rest run.
    one.keep_runs = o.catalog_keep;
    const int s = suiteCommand(one, out, err);
    if (s == 2) return 2;
    status = std::max(status, s);
    auto suite = loadSuite(launch::absolutePath(one.run.out_dir));
    if (!suite) {
      err << "faultline suite: " << suite.error().str() << "\n";
      return 3;
    }
    stacks.emplace_back(stack, std::move(*suite));
  }
  std::map<std::string, int> ran;  // scenario -> the stacks it ran on
  for (const auto& [stack, suite] : stacks) {
    for (const auto& e : suite.entries) ran[e.name] += e.report.verdict != Verdict::kUnsupported;
  }
  for (const auto& [name, n] : ran) {
    if (n > 0) continue;
    err << "faultline suite: warning: scenario " << name << " ran on no stack (unsupported on each of "
        << stacks.size() << "); nothing was checked\n";
    if (o.run.exit.strict) status = std::max(status, 1);
  }
  std::string generated_by = "faultline suite";
  for (const auto& p : o.paths) generated_by += " " + p;
  for (const auto& t : o.tags) generated_by += " --tag " + t;
  generated_by += " --catalog " + o.catalog + (o.catalog_keep ? " --keep" : "");
  if (auto w = writeFileAtomically(o.catalog, reports::failureModeCatalog(stacks, generated_by, missing)); !w) {
    err << "faultline suite: " << w.error().str() << "\n";
    return 3;
  }
  out << "failure-mode catalog: " << o.catalog << "\n";
  // One suite over every stack in the top directory: its index.html is the
  // scenario x stack matrix, each cell linking into that stack's directory.
  reports::Suite all;
  for (const auto& [stack, suite] : stacks) {
    for (auto e : suite.entries) {
      e.run_dir = stack + "/" + e.run_dir;
      if (e.stack.empty()) e.stack = stack;
      all.entries.push_back(std::move(e));
    }
    all.wall_ms += suite.wall_ms;
  }
  if (auto w = reports::renderSuite(all, o.run.out_dir); !w) {
    err << "faultline suite: " << w.error().str() << "\n";
    return 3;
  }
  out << "every stack: " << o.run.out_dir << "/index.html\n";
  return status;
}

}  // namespace faultline::cli
