// diagnoseRun: gathers the evidence of a run directory, analyses it, and
// writes the diagnosis into the report.
#include "harness/diagnose/diagnose.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <map>

#include "harness/diagnose/analyze.h"
#include "harness/diagnose/findings.h"
#include "harness/diagnose/instruments.h"
#include "harness/diagnose/run_input.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {

Result<void> diagnoseRun(const std::string& run_dir, Report& report) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    return fail(ErrorCode::kIo, "not a readable directory", run_dir);
  }
  try {
    const RunInput in = loadRun(run_dir, report);
    Diagnosis d = analyzeRun(in);
    report.root_cause = std::move(d.root_cause);
    // What the launcher itself blamed (torchrun's "Root Cause" block), kept
    // as data so a catalog can say whether the stack named the right rank.
    report.extra.erase("launcher_root_cause_rank");
    if (in.launcher && in.launcher->claimed_root_rank) {
      report.extra["launcher_root_cause_rank"] = *in.launcher->claimed_root_rank;
    }
    for (const RankVerdict& v : d.ranks) {
      auto it = std::find_if(report.ranks.begin(), report.ranks.end(),
                             [&](const RankReport& r) { return r.rank == v.rank; });
      if (it == report.ranks.end()) {
        RankReport rr;
        rr.rank = v.rank;
        report.ranks.push_back(rr);
        it = report.ranks.end() - 1;
      }
      const RankInput& ri = in.ranks.at(v.rank);
      if (!it->pid) it->pid = ri.pid;
      if (!it->exit_code && !it->signal) {
        it->exit_code = ri.exit_code;
        it->signal = ri.signal;
      }
      if (it->stderr_tail.empty()) it->stderr_tail = ri.stderr_tail;
      it->role = v.role;
      it->diagnosis = v.diagnosis;
    }
    std::sort(report.ranks.begin(), report.ranks.end(),
              [](const RankReport& a, const RankReport& b) { return a.rank < b.rank; });
    report.findings = findFindings(in);
    // Findings that could not be looked for: unknown, not absent.
    report.extra.erase("unchecked_findings");
    if (auto unchecked = findUnchecked(in, report.findings); !unchecked.empty()) {
      report.extra["unchecked_findings"] = uncheckedJson(unchecked);
    }
    // Which shim patches applied on each rank, beside which instruments the
    // run had (observe.cc): what "no event" means on that rank.
    std::map<int, RankInstruments> patched;
    for (const auto& [r, ri] : in.ranks) {
      if (auto inst = rankInstruments(ri.events)) patched[r] = std::move(*inst);
    }
    nlohmann::json& instruments = report.extra["instruments"];
    if (!instruments.is_object()) instruments = nlohmann::json::object();
    instruments.erase("ranks");
    if (!patched.empty()) instruments["ranks"] = instrumentsJson(patched);
    if (instruments.empty()) report.extra.erase("instruments");
    // Stack dumps (SIGUSR1 or gdb) travel in the report, so renderers that
    // read report.json alone can show where each rank stood.
    report.extra.erase("stack_dumps");
    for (const auto& [r, ri] : in.ranks) {
      const std::string path = run_dir + "/ranks/" + std::to_string(r) + "/stacks.txt";
      if (auto text = readTail(path, 64 * 1024); text && !text->empty()) {
        report.extra["stack_dumps"][std::to_string(r)] = sanitizeUtf8(*text);
      }
    }
    // Idempotent: diagnosing a run again (faultline explain) does not repeat entries.
    for (TimelineEntry& t : d.timeline) {
      const bool seen = std::any_of(report.timeline.begin(), report.timeline.end(), [&](const TimelineEntry& o) {
        return o.rank == t.rank && o.what == t.what;
      });
      if (!seen) report.timeline.push_back(std::move(t));
    }
    std::stable_sort(report.timeline.begin(), report.timeline.end(),
                     [](const TimelineEntry& a, const TimelineEntry& b) { return a.t_ms < b.t_ms; });
  } catch (const std::exception& e) {
    return fail(ErrorCode::kHarness, std::string("diagnosis failed: ") + e.what(), run_dir);
  }
  return {};
}

}  // namespace faultline::diagnose
