// assembleReport and the path from a finished run directory to its report.
#include "harness/assemble/assemble.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>

#include "harness/diagnose/diagnose.h"
#include "harness/diagnose/fault_outcomes.h"
#include "harness/diagnose/findings.h"
#include "harness/diagnose/instruments.h"
#include "harness/diagnose/report_text.h"
#include "harness/judge/judge.h"
#include "harness/model/run_layout.h"

#ifndef FAULTLINE_VERSION
#define FAULTLINE_VERSION "0.0.0"
#endif

namespace faultline::assemble {
namespace {

using nlohmann::json;

// The supervisor's facts of each rank: the latest process that carried it,
// with the role those facts alone give. The diagnosis, when there is one,
// replaces roles and diagnoses. A launcher allowed to restart the ranks
// (max_restarts) ran them in attempts: the ranks are the first attempt's,
// whose failure the diagnosis names; the later ones are report.attempts.
std::vector<RankReport> factRanks(const SupervisorRecord& rec) {
  std::map<int, const SupervisedRank*> latest;
  for (const auto& k : rec.ranks) {
    if (rec.max_restarts > 0 && k.attempt > 0) continue;
    latest[k.rank] = &k;
  }
  std::set<int> survivors;
  for (const auto& s : rec.teardown.report.survivors) survivors.insert(s.pid);
  std::vector<RankReport> out;
  for (const auto& [rank, k] : latest) {
    RankReport r;
    r.rank = rank;
    r.pid = k->pid;
    r.exit_code = k->exit_code;
    r.signal = k->signal;
    const bool ok = k->exit_code && *k->exit_code == 0;
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
    out.push_back(std::move(r));
  }
  return out;
}

void applyDiagnosis(Report& report, const diagnose::Diagnosis& d) {
  report.root_cause = d.root_cause;
  // By rank, not by search: a 4096-rank run would make this quadratic.
  std::map<int, size_t> at;
  for (size_t i = 0; i < report.ranks.size(); ++i) at.emplace(report.ranks[i].rank, i);
  for (const diagnose::RankVerdict& v : d.ranks) {
    auto found = at.find(v.rank);
    if (found == at.end()) {
      RankReport rr;
      rr.rank = v.rank;
      report.ranks.push_back(rr);
      found = at.emplace(v.rank, report.ranks.size() - 1).first;
    }
    auto it = report.ranks.begin() + static_cast<std::ptrdiff_t>(found->second);
    // The supervisor's facts win; the run directory fills what it did not see.
    if (!it->pid) it->pid = v.pid;
    if (!it->exit_code && !it->signal) {
      it->exit_code = v.exit_code;
      it->signal = v.signal;
    }
    if (it->stderr_tail.empty()) it->stderr_tail = v.stderr_tail;
    it->role = v.role;
    it->diagnosis = v.diagnosis;
    if (!v.node.empty()) it->node = v.node;
    if (!v.host.empty()) it->host = v.host;
  }
  report.nodes = d.nodes;
  report.findings = d.findings;
  report.faults = d.faults;
  report.attempts = d.attempts;
  report.recovery = d.recovery;
  if (const std::string missed = diagnose::faultsNotStruck(d.faults); !missed.empty()) {
    report.problems.fault_not_struck = missed;
  }
  if (!d.unchecked.empty()) report.extra["unchecked_findings"] = diagnose::uncheckedJson(d.unchecked);
  if (!d.instruments.empty()) {
    json& instruments = report.extra["instruments"];
    if (!instruments.is_object()) instruments = json::object();
    instruments["ranks"] = diagnose::instrumentsJson(d.instruments);
  }
  for (const auto& [r, text] : d.stack_dumps) report.extra["stack_dumps"][std::to_string(r)] = text;
  // What the launcher blamed, and whether that was the root cause's rank
  // alone: a launcher naming several ranks together singled out none.
  if (!d.launcher_blamed_ranks.empty()) {
    report.launcher.blamed_ranks = d.launcher_blamed_ranks;
    if (d.launcher_blamed_ranks.size() == 1) {
      report.extra["launcher_root_cause_rank"] = d.launcher_blamed_ranks.front();
      report.launcher.blamed_rank = d.launcher_blamed_ranks.front();
    }
    if (report.root_cause && report.root_cause->rank) {
      report.launcher.blamed_correctly = d.launcher_blamed_ranks == std::vector<int>{*report.root_cause->rank};
    }
  }
  // An entry the supervisor's timeline already has (same rank, same words) is not added twice.
  std::set<std::pair<int, std::string>> seen;
  for (const TimelineEntry& o : report.timeline) seen.emplace(o.rank.value_or(-1), o.what);
  for (const TimelineEntry& t : d.timeline) {
    if (seen.emplace(t.rank.value_or(-1), t.what).second) report.timeline.push_back(t);
  }
  report.spans = d.spans;
  report.spans_dropped = d.spans_dropped;
}

// clean / diagnosed, from the facts and the diagnosis.
Verdict runVerdict(const Report& report, const std::optional<SupervisorRecord>& rec, FailOn fail_on) {
  const bool failing_finding = std::any_of(report.findings.begin(), report.findings.end(),
                                           [&](const Finding& f) { return severityFails(f.severity, fail_on); });
  if (report.root_cause || failing_finding) return Verdict::kDiagnosed;
  bool all_ok = !report.ranks.empty() && report.teardown.clean && rec && rec->trigger.kind == TriggerKind::kNone;
  for (const auto& r : report.ranks) all_ok = all_ok && r.exit_code && *r.exit_code == 0;
  if (rec && rec->launcher_process) all_ok = all_ok && report.launcher.exit_code && *report.launcher.exit_code == 0;
  return all_ok ? Verdict::kClean : Verdict::kDiagnosed;
}

}  // namespace

std::string harnessVersion() { return FAULTLINE_VERSION; }

Report assembleReport(const RunValues& v, const RunContext& ctx) {
  Report report;
  const auto& rec = v.supervisor;
  if (rec) {
    report.stack.launcher = rec->launcher;
    report.stack.command = rec->command;
    report.stack.world_size = rec->world_size;
    if (rec->launcher_process) {
      report.launcher.exit_code = rec->launcher_process->exit_code;
      report.launcher.signal = rec->launcher_process->signal;
    }
    report.ranks = factRanks(*rec);
    report.teardown = rec->teardown.report;
    report.timeline = rec->timeline;
    report.extra["containment"] = rec->containment;
    report.extra["trigger"] = {{"kind", triggerKindName(rec->trigger.kind)},
                               {"rank", rec->trigger.rank ? json(*rec->trigger.rank) : json(nullptr)},
                               {"detail", diagnose::sanitizeReportText(rec->trigger.detail)}};
    if (!rec->notes.empty()) report.extra["harness_notes"] = rec->notes;
    // Which black-box instruments the stack ran with: a reader of the report
    // must know whether "no event" means "nothing happened" or "nobody looked".
    if (rec->instruments) {
      auto path = [](const std::string& p) { return p.empty() ? json(nullptr) : json(p); };
      report.extra["instruments"] = {{"python_shim", path(rec->instruments->python_shim)},
                                     {"preload", path(rec->instruments->preload)}};
    }
  }
  if (!ctx.stack.empty()) report.stack.launcher = ctx.stack;
  report.stack.torch = ctx.torch;
  report.scenario = ctx.scenario;
  for (auto& r : report.ranks) {
    if (auto it = v.stderr_tails.find(r.rank); it != v.stderr_tails.end()) r.stderr_tail = it->second;
  }
  if (v.diagnosis) applyDiagnosis(report, *v.diagnosis);
  std::sort(report.ranks.begin(), report.ranks.end(),
            [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
  std::stable_sort(report.timeline.begin(), report.timeline.end(),
                   [](const TimelineEntry& a, const TimelineEntry& b) { return a.t_ms < b.t_ms; });
  if (!v.diagnose_error.empty()) report.problems.diagnose_error = v.diagnose_error;
  report.harness.version = FAULTLINE_VERSION;
  report.harness.wall_ms = ctx.wall_ms;

  const bool interrupted = rec && rec->interrupted;
  if (interrupted) {
    report.verdict = Verdict::kIncomplete;
  } else {
    report.verdict = runVerdict(report, rec, ctx.fail_on);
    // A crashing checker makes the answer unknown, never a pass.
    if (!v.diagnose_error.empty() && report.verdict == Verdict::kClean) report.verdict = Verdict::kUnresolved;
  }
  if (ctx.expect) {
    report.expectations = judge::judgeAll(*ctx.expect, toJson(report));
    if (!interrupted) report.verdict = judge::scenarioVerdict(report.expectations, report);
  }
  // A fault asked for and not struck: the run is not the one asked for, so
  // nothing it showed is a pass or a clean run. exec: the harness failed
  // (error); a scenario: its expectations could not be judged (unresolved).
  if (report.problems.fault_not_struck && !interrupted) {
    report.verdict = ctx.expect ? Verdict::kUnresolved : Verdict::kError;
  }
  return report;
}

Report reportOfRun(const std::string& run_dir, const RunContext& ctx, std::optional<SupervisorRecord> record) {
  const RunLayout layout(run_dir);
  RunValues values;
  values.supervisor = std::move(record);
  if (!values.supervisor) {
    if (auto rec = readSupervisorRecord(layout.supervisorPath())) values.supervisor = std::move(*rec);
  }
  const bool interrupted = values.supervisor && values.supervisor->interrupted;
  if (!interrupted) {
    try {
      auto d = diagnose::diagnoseRun(run_dir);
      if (d) {
        values.diagnosis = std::move(*d);
      } else {
        values.diagnose_error = d.error().str();
      }
    } catch (const std::exception& e) {
      values.diagnose_error = std::string("exception: ") + e.what();
    }
  }
  if (!values.diagnosis && values.supervisor) {
    for (const auto& k : values.supervisor->ranks) {
      values.stderr_tails[k.rank] = diagnose::fileTail(layout.rankStderr(k.rank), diagnose::kStderrTailBytes);
    }
  }
  return assembleReport(values, ctx);
}

Report harnessErrorReport(const std::string& launcher, const std::vector<std::string>& command, const Error& error,
                          int64_t wall_ms) {
  Report report;
  report.stack.launcher = launcher;
  report.stack.command = command;
  report.verdict = Verdict::kError;
  report.harness = {FAULTLINE_VERSION, wall_ms};
  report.problems.harness_error = error.str();
  return report;
}

Report unsupportedReport(const std::string& stack, const std::string& torch, int world_size, const std::string& reason) {
  Report report;
  report.stack.launcher = stack;
  report.stack.torch = torch;
  report.stack.world_size = world_size;
  report.verdict = Verdict::kUnsupported;
  report.harness.version = FAULTLINE_VERSION;
  report.problems.unsupported_reason = reason;
  return report;
}

Report missingRunReport(const ScenarioRef& scenario, const Error& why, const std::string& log_path) {
  Report report;
  report.verdict = Verdict::kError;
  report.scenario = scenario;
  report.harness.version = FAULTLINE_VERSION;
  report.problems.harness_error = "no report: " + why.str() + " (see " + log_path + ")";
  return report;
}

Report badScenarioReport(const ScenarioRef& scenario, const std::string& stack, const std::string& message) {
  Report report;
  report.verdict = Verdict::kUnresolved;
  report.scenario = scenario;
  report.stack.launcher = stack;
  report.harness.version = FAULTLINE_VERSION;
  report.problems.bad_input = message;
  return report;
}

}  // namespace faultline::assemble
