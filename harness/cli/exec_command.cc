// `faultline exec`: supervise, build report.json, optionally diagnose.
#include "harness/cli/exec_command.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <set>
#include <ostream>

#include "harness/launch/run_layout.h"
#include "harness/cli/observe.h"
#include "harness/model/utf8.h"
#include "reports/render.h"

#ifndef FAULTLINE_VERSION
#define FAULTLINE_VERSION "0.0.0"
#endif

namespace faultline::cli {

std::string sanitizeUtf8(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  size_t i = 0, n = in.size();
  while (i < n) {
    unsigned char c = s[i];
    // Surrogates and overlong forms too: the renderers copy this text into XML.
    const size_t len = utf8SequenceLength(s + i, n - i);
    if (len > 0) {
      if (len == 1 && c < 0x20 && c != '\n' && c != '\t' && c != '\r') {
        out.push_back('?');
      } else {
        out.append(in, i, len);
      }
      i += len;
    } else {
      out.append("\xef\xbf\xbd");  // U+FFFD
      ++i;
    }
  }
  return out;
}

std::string fileTail(const std::string& path, size_t limit) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t start = size > static_cast<off_t>(limit) ? size - static_cast<off_t>(limit) : 0;
  std::string buf(static_cast<size_t>(size - start), '\0');
  ssize_t n = buf.empty() ? 0 : ::pread(fd, buf.data(), buf.size(), start);
  ::close(fd);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (start > 0) {
    // Do not begin mid-line (or mid-character) when a line start is near.
    size_t nl = buf.find('\n');
    if (nl != std::string::npos && nl < 4096) buf.erase(0, nl + 1);
  }
  return sanitizeUtf8(buf);
}

Report buildReport(const supervise::SupervisedRun& run, const std::string& out_dir, int64_t wall_ms) {
  const auto& rec = run.record;
  launch::RunLayout layout(out_dir);
  Report report;
  report.stack.launcher = rec.launcher;
  report.stack.command = rec.command;
  report.stack.world_size = rec.world_size;
  if (rec.launcher_process) {
    report.launcher.exit_code = rec.launcher_process->exit_code;
    report.launcher.signal = rec.launcher_process->signal;
  }
  // One entry per rank: the latest process that carried it (restarts replace).
  std::map<int, const SupervisedRank*> latest;
  for (const auto& k : rec.ranks) latest[k.rank] = &k;
  std::set<int> survivors;
  for (const auto& s : rec.teardown.report.survivors) survivors.insert(s.pid);
  for (const auto& [rank, k] : latest) {
    RankReport r;
    r.rank = rank;
    r.pid = k->pid;
    r.exit_code = k->exit_code;
    r.signal = k->signal;
    const bool ok = k->exit_code && *k->exit_code == 0;
    // Facts only; the diagnose stage assigns root cause and collateral. The
    // supervisor's first failing rank is marked as such, named as an observation.
    if (survivors.count(k->pid)) {
      r.role = RankRole::kSurvivor;
      r.diagnosis = "still running after the grace period";
    } else if (k->killed_by_teardown) {
      r.role = RankRole::kKilledByTeardown;
      r.diagnosis = "ended by the teardown" + std::string(k->signal ? " (" + *k->signal + ")" : "");
    } else if (ok) {
      r.role = RankRole::kClean;
      r.diagnosis = "exited with code 0";
    } else if (rec.trigger.kind == TriggerKind::kRankFailure && rec.trigger.rank == rank) {
      r.role = RankRole::kRootCause;
      r.diagnosis = "first rank to fail: " + rec.trigger.detail + " (not diagnosed)";
    } else if (k->exit_code || k->signal) {
      r.role = RankRole::kCollateral;
      r.diagnosis = k->signal ? "killed by " + *k->signal + " (not diagnosed)"
                              : "exited with code " + std::to_string(*k->exit_code) + " (not diagnosed)";
    } else {
      r.role = RankRole::kCollateral;
      r.diagnosis = "exit status unknown (reaped by its launcher)";
    }
    r.stderr_tail = fileTail(layout.rankStderr(rank), 64 * 1024);
    report.ranks.push_back(std::move(r));
  }
  report.teardown = rec.teardown.report;
  report.timeline = run.timeline;
  report.harness.version = FAULTLINE_VERSION;
  report.harness.wall_ms = wall_ms;
  report.extra["containment"] = rec.containment;
  report.extra["trigger"] = {{"kind", triggerKindName(rec.trigger.kind)},
                             {"rank", rec.trigger.rank ? nlohmann::json(*rec.trigger.rank) : nlohmann::json(nullptr)},
                             {"detail", sanitizeUtf8(rec.trigger.detail)}};
  if (!run.notes.empty()) report.extra["harness_notes"] = run.notes;
  report.verdict = verdictOf(report, run);
  return report;
}

Verdict verdictOf(const Report& report, const supervise::SupervisedRun& run) {
  if (run.interrupted) return Verdict::kIncomplete;
  if (report.root_cause || !report.findings.empty()) return Verdict::kDiagnosed;
  bool all_ok = !report.ranks.empty() && report.teardown.clean && run.record.trigger.kind == TriggerKind::kNone;
  for (const auto& r : report.ranks) all_ok = all_ok && r.exit_code && *r.exit_code == 0;
  if (run.record.launcher_process) all_ok = all_ok && report.launcher.exit_code && *report.launcher.exit_code == 0;
  return all_ok ? Verdict::kClean : Verdict::kDiagnosed;
}

int runExec(const ExecOptions& opts, std::ostream& out, std::ostream& err) {
  const auto t0 = std::chrono::steady_clock::now();
  supervise::SuperviseOptions so;
  if (opts.launcher == "external") {
    so.launch.launcher = "external";
    if (opts.nproc) {
      err << "faultline exec: --nproc applies to the builtin launcher only\n";
      return 2;
    }
  } else if (opts.launcher.empty() || opts.launcher == "builtin") {
    so.launch.launcher = "builtin";
  } else {
    err << "faultline exec: unknown launcher '" << opts.launcher << "' (builtin or external)\n";
    return 2;
  }
  so.launch.nproc = opts.nproc.value_or(1);
  so.launch.command = opts.command;
  so.launch.instruments = opts.instruments;
  so.out_dir = launch::absolutePath(opts.out_dir);
  so.hang_timeout_s = opts.hang_timeout_s;
  so.deadline_s = opts.deadline_s;
  so.grace_s = opts.grace_s;
  so.allow_cgroup = opts.allow_cgroup;
  if (so.launch.nproc < 1 || so.grace_s < 0 || so.hang_timeout_s < 0 || so.deadline_s < 0) {
    err << "faultline exec: --nproc must be >= 1 and times >= 0\n";
    return 2;
  }
  launch::RunLayout layout(so.out_dir);
  auto observed = observeStack(so, t0, err);
  const auto wall_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  };
  if (!observed) {
    const int code = exitCodeFor(observed.error());
    err << "faultline exec: " << observed.error().str() << "\n";
    if (code == 2) return 2;
    Report report = harnessErrorReport(so.launch.launcher, so.launch.command, observed.error(), wall_ms());
    (void)writeReport(report, layout.reportPath());
    (void)reports::renderRun(report, so.out_dir);
    return 3;
  }
  Report& report = observed->report;
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
  if (report.root_cause) {
    out << "root cause: " << report.root_cause->summary << "\n";
  } else if (report.extra.contains("trigger") && report.extra["trigger"].value("kind", "none") != "none") {
    out << "trigger: " << report.extra["trigger"].value("detail", "") << "\n";
  }
  switch (report.verdict) {
    case Verdict::kClean:
    case Verdict::kPass:
      return 0;
    case Verdict::kError:
      return 3;
    default:
      return 1;
  }
}

}  // namespace faultline::cli
