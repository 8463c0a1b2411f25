// Supervise -> supervisor.json -> report -> diagnosis, for every command that runs a stack.
#include "harness/cli/observe.h"

#include <csignal>
#include <ostream>

#include "harness/cli/exec_command.h"
#include "harness/launch/run_layout.h"
#include "harness/diagnose/diagnose.h"

#ifndef FAULTLINE_VERSION
#define FAULTLINE_VERSION "0.0.0"
#endif

namespace faultline::cli {

Result<Observed> observeStack(const supervise::SuperviseOptions& so, std::chrono::steady_clock::time_point t0,
                              std::ostream& err) {
  const auto wall_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  launch::RunLayout layout(so.out_dir);
  // Once the run is torn down a late Ctrl-C must not cost the report. The
  // supervisor handles SIGINT/SIGTERM while anything of the run is alive and
  // hands back these dispositions, with no default-action gap, when it is done.
  // Blocked while they change, so that one sent meanwhile is held for the
  // supervisor (it interrupts the run) instead of being ignored.
  sigset_t interrupts, old_mask;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &interrupts, &old_mask);
  ::signal(SIGINT, SIG_IGN);
  ::signal(SIGTERM, SIG_IGN);
  auto run = supervise::superviseRun(so);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (!run) return tl::unexpected(run.error());
  if (auto w = writeSupervisorRecord(run->record, layout.supervisorPath()); !w) {
    err << "faultline: " << w.error().str() << "\n";
  }
  Observed observed;
  observed.interrupted = run->interrupted;
  Report& report = observed.report;
  report = buildReport(*run, so.out_dir, wall_ms());
  // Which black-box instruments the stack ran with: a reader of the report
  // must know whether "no event" means "nothing happened" or "nobody looked".
  const auto& in = so.launch.instruments;
  report.extra["instruments"] = {
      {"python_shim", in.python_shim_dir.empty() ? nlohmann::json(nullptr) : nlohmann::json(in.python_shim_dir)},
      {"preload", in.preload_library.empty() ? nlohmann::json(nullptr) : nlohmann::json(in.preload_library)}};
  if (!run->interrupted) {
    // Diagnosis works from files: the report as written so far plus the run's logs.
    if (auto w = writeReport(report, layout.reportPath()); !w) err << "faultline: " << w.error().str() << "\n";
    try {
      auto d = diagnose::diagnoseRun(so.out_dir, report);
      if (!d) {
        report.extra["diagnose_error"] = d.error().str();
        err << "faultline: diagnosis failed: " << d.error().str() << "\n";
      }
    } catch (const std::exception& e) {
      // A crashing checker makes the answer unknown, never a pass.
      report.extra["diagnose_error"] = std::string("exception: ") + e.what();
    }
    report.verdict = verdictOf(report, *run);
    if (report.extra.contains("diagnose_error") && report.verdict == Verdict::kClean) report.verdict = Verdict::kUnresolved;
  }
  report.harness.wall_ms = wall_ms();
  return observed;
}

Report harnessErrorReport(const std::string& launcher, const std::vector<std::string>& command, const Error& error,
                          int64_t wall_ms) {
  Report report;
  report.stack.launcher = launcher;
  report.stack.command = command;
  report.verdict = Verdict::kError;
  report.harness = {FAULTLINE_VERSION, wall_ms};
  report.extra["harness_error"] = error.str();
  return report;
}

}  // namespace faultline::cli
