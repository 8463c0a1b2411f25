// `faultline exec`: supervise, assemble report.json, render it.
#include "harness/cli/exec_command.h"

#include <chrono>
#include <cmath>
#include <ostream>

#include "harness/assemble/assemble.h"
#include "harness/cli/observe.h"
#include "harness/launch/run_layout.h"
#include "harness/launch/stack_plan.h"
#include "harness/model/run_layout.h"
#include "harness/probe/fault_spec.h"
#include "reports/finding_fixes.h"
#include "reports/render.h"

namespace faultline::cli {

int runExec(const ExecOptions& opts, std::ostream& out, std::ostream& err) {
  const auto t0 = std::chrono::steady_clock::now();
  supervise::SuperviseOptions so;
  // builtin starts the command N times; a launcher whose process is the
  // command (external: any launcher's own command line; a framework's, as
  // `python train.py` is Lightning's) starts it once and finds its ranks.
  std::string launchers = "builtin";
  for (const launch::Launcher* l : launch::allLaunchers()) {
    if (l->traits().is_the_command || l->traits().framework) launchers += ", " + l->name();
  }
  const launch::Launcher* chosen = opts.launcher.empty() ? nullptr : launch::launcherNamed(opts.launcher);
  if (opts.launcher.empty() || opts.launcher == "builtin") {
    so.launch.launcher = "builtin";
  } else if (chosen && (chosen->traits().is_the_command || chosen->traits().framework)) {
    so.launch.launcher = chosen->name();
    if (opts.nproc || opts.max_restarts) {
      err << "faultline exec: " << (opts.nproc ? "--nproc" : "--max-restarts")
          << " applies to the builtin launcher only (another launcher restarts as its own command line says)\n";
      return 2;
    }
  } else {
    err << "faultline exec: unknown launcher '" << opts.launcher << "' (" << launchers << ")\n";
    return 2;
  }
  so.launch.nproc = opts.nproc.value_or(1);
  so.max_restarts = opts.max_restarts;
  if (opts.max_restarts < 0 || opts.max_restarts > 100) {
    err << "faultline exec: --max-restarts must be 0..100, got " << opts.max_restarts << "\n";
    return 2;
  }
  so.launch.command = opts.command;
  so.launch.instruments = opts.instruments;
  so.out_dir = launch::absolutePath(opts.out_dir);
  so.hang_timeout_s = opts.hang_timeout_s;
  so.deadline_s = opts.deadline_s;
  so.grace_s = opts.grace_s;
  so.adaptive.factor = opts.hang_factor;
  so.adaptive.floor_s = opts.hang_floor_s;
  so.adaptive.idle_s = opts.hang_idle_s;
  so.adaptive.rendezvous_idle_s = 2.5 * opts.hang_idle_s;
  so.allow_cgroup = opts.allow_cgroup;
  if (so.launch.nproc < 1 || so.grace_s < 0 || so.hang_timeout_s < 0 || so.deadline_s < 0) {
    err << "faultline exec: --nproc must be >= 1 and times >= 0\n";
    return 2;
  }
  if (!(so.adaptive.factor >= 0) || !(so.adaptive.floor_s > 0)) {
    err << "faultline exec: --hang-factor must be >= 0 (0: off) and --hang-floor > 0\n";
    return 2;
  }
  if (!(so.adaptive.idle_s >= 0) || !std::isfinite(so.adaptive.idle_s)) {
    err << "faultline exec: --hang-idle must be a number of seconds >= 0 (0: off)\n";
    return 2;
  }
  // Scripted faults: the in-rank layer's (the Python shim, or the probe in a
  // native trainer) go to every rank in FAULTLINE_FAULT, the supervisor's into
  // the watch loop. One that no layer can strike is bad usage.
  const probe::FaultLayer in_rank = probe::inRankLayer(false, opts.command);
  std::string rank_faults;
  for (const std::string& text : opts.faults) {
    auto spec = probe::parseFaultSpec(text);
    if (spec) {
      if (auto ok = probe::validateFaultSpec(*spec, so.launch.launcher == "builtin" ? so.launch.nproc : 1 << 20); !ok) {
        spec = tl::unexpected(ok.error());
      }
    }
    auto layer = spec ? probe::chooseLayer(*spec, in_rank) : tl::unexpected(spec.error());
    if (layer && *layer == probe::FaultLayer::kShim && opts.instruments.python_shim_dir.empty()) {
      layer = tl::unexpected(std::string("the Python shim strikes it, and this run has none (--no-instrument, or no "
                                         "shim found): give by=supervisor for a signal, or run with the shim"));
    }
    if (!layer) {
      err << "faultline exec: --fault " << text << ": " << layer.error() << "\n";
      return 2;
    }
    so.requested_faults.push_back(launch::requestedFault(*spec, *layer));
    if (*layer == probe::FaultLayer::kSupervisor) {
      so.outside_faults.push_back(*spec);
    } else {
      rank_faults += (rank_faults.empty() ? "" : ";") + spec->text();
    }
  }
  if (!rank_faults.empty()) so.launch.env["FAULTLINE_FAULT"] = rank_faults;
  addLibraryPaths(so, opts.library_paths, launch::absolutePath("."));
  const RunLayout layout(so.out_dir);
  const auto wall_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  auto record = superviseStack(so, err);
  if (!record) {
    const int code = exitCodeFor(record.error());
    err << "faultline exec: " << record.error().str() << "\n";
    if (code == 2) return 2;
    Report report = assemble::harnessErrorReport(so.launch.launcher, so.launch.command, record.error(), wall_ms());
    (void)writeReport(report, layout.reportPath());
    (void)reports::renderRun(report, so.out_dir);
    return 3;
  }
  assemble::RunContext ctx;
  ctx.fail_on = opts.fail_on;
  ctx.wall_ms = wall_ms();
  Report report = assemble::reportOfRun(so.out_dir, ctx, std::move(*record));
  if (report.problems.diagnose_error) {
    err << "faultline: diagnosis failed: " << *report.problems.diagnose_error << "\n";
  }
  report.harness.wall_ms = wall_ms();
  if (auto w = writeReport(report, layout.reportPath()); !w) {
    // The run was torn down all the same; only the record of it is lost.
    err << "faultline exec: no report written: " << w.error().str() << "\n";
    return 3;
  }
  if (auto w = reports::renderRun(report, so.out_dir); !w) err << "faultline exec: " << w.error().str() << "\n";
  out << "faultline: " << verdictName(report.verdict) << " (" << report.ranks.size() << " rank(s), teardown "
      << (report.teardown.clean ? "clean" : "not clean") << ", " << report.extra.value("containment", "") << ") -> "
      << layout.reportPath() << "\n";
  if (report.problems.fault_not_struck) out << "fault not struck: " << *report.problems.fault_not_struck << "\n";
  if (report.root_cause) {
    out << "root cause: " << report.root_cause->summary << "\n";
  } else if (report.extra.contains("trigger") && report.extra["trigger"].value("kind", "none") != "none") {
    out << "trigger: " << report.extra["trigger"].value("detail", "") << "\n";
  }
  // Every finding, those that fail the run first, each with its fix: a
  // "diagnosed" verdict with no root cause is a finding's, and says which.
  for (const bool failing : {true, false}) {
    for (const auto& f : report.findings) {
      if (severityFails(f.severity, opts.fail_on) != failing) continue;
      out << f.severity << ": " << kindName(f.kind) << ": " << f.summary << "\n";
      if (failing) out << "  fix: " << reports::findingFix(f) << "\n";
    }
  }
  return exitStatusOf(report, ExitPolicy{false, opts.fail_on});
}

}  // namespace faultline::cli
