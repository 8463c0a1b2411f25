// Supervise -> supervisor.json, for every command that runs a stack.
#include "harness/cli/observe.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <ostream>

#include "harness/assemble/assemble.h"
#include "harness/model/run_layout.h"

namespace faultline::cli {

Result<SupervisorRecord> superviseStack(const supervise::SuperviseOptions& so, std::ostream& err) {
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
  supervise::SuperviseOptions with_provisional = so;
  with_provisional.provisional_report = assemble::harnessErrorReport(
      so.launch.launcher, so.launch.command,
      Error{ErrorCode::kHarness,
            "the harness (faultline, pid " + std::to_string(::getpid()) +
                ") ended before it wrote this run's report: it was killed (SIGKILL, the OOM killer), crashed, or "
                "could not write the file (its stderr says why); anything of the run still running was ended by "
                "its guardian, and supervisor.json, where there is one, has what was seen",
            {}},
      0);
  auto run = supervise::superviseRun(with_provisional);
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (!run) return tl::unexpected(run.error());
  // The run directory is the only channel to the later stages: what the
  // report needs beside the supervisor's facts goes into its record too.
  SupervisorRecord rec = std::move(run->record);
  rec.timeline = std::move(run->timeline);
  rec.notes = std::move(run->notes);
  rec.interrupted = run->interrupted;
  rec.instruments = RunInstruments{so.launch.instruments.python_shim_dir, so.launch.instruments.preload_library};
  rec.library_paths = so.library_paths;
  rec.faults = so.requested_faults;
  if (auto w = writeSupervisorRecord(rec, RunLayout(so.out_dir).supervisorPath()); !w) {
    err << "faultline: " << w.error().str() << "\n";
  }
  return rec;
}

void addLibraryPaths(supervise::SuperviseOptions& so, const std::vector<std::string>& paths, const std::string& base) {
  namespace fs = std::filesystem;
  for (const std::string& p : paths) {
    fs::path path(p);
    if (path.is_relative()) path = fs::path(base) / path;
    std::string abs = path.lexically_normal().string();
    while (abs.size() > 1 && abs.back() == '/') abs.pop_back();
    so.library_paths.push_back(abs);
  }
  if (so.library_paths.empty()) return;
  std::string joined;
  for (const std::string& p : so.library_paths) joined += (joined.empty() ? "" : ":") + p;
  so.launch.env["FAULTLINE_LIBRARY_PATHS"] = joined;
}

}  // namespace faultline::cli
