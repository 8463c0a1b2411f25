// diagnoseRun: gathers the evidence of a run directory and analyses it.
#include "harness/diagnose/diagnose.h"

#include <exception>
#include <filesystem>

#include "harness/diagnose/analyze.h"
#include "harness/diagnose/fault_outcomes.h"
#include "harness/diagnose/recovery.h"
#include "harness/diagnose/report_text.h"
#include "harness/diagnose/run_input.h"
#include "harness/diagnose/text.h"
#include "harness/model/run_layout.h"

namespace faultline::diagnose {

Result<Diagnosis> diagnoseRun(const std::string& run_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(run_dir, ec)) {
    return fail(ErrorCode::kIo, "not a readable directory", run_dir);
  }
  try {
    const RunLayout layout(run_dir);
    const RunInput in = loadRun(run_dir);
    Diagnosis d = analyzeRun(in);
    for (RankVerdict& v : d.ranks) {
      const auto it = in.ranks.find(v.rank);
      if (it == in.ranks.end()) continue;
      const RankInput& ri = it->second;
      v.pid = ri.pid;
      v.exit_code = ri.exit_code;
      v.signal = ri.signal;
      v.node = ri.node;
      v.host = ri.host;
      // The rank's own stderr file, else its lines in the launcher's logs.
      v.stderr_tail = fileTail(layout.rankStderr(v.rank), kStderrTailBytes);
      if (v.stderr_tail.empty()) v.stderr_tail = ri.stderr_tail;
    }
    // What the launcher itself blamed (torchrun's "Root Cause" block), kept
    // as data so a catalog can say whether the stack named the right rank.
    if (in.launcher && in.launcher->claimed_root_rank) {
      d.launcher_blamed_ranks = {*in.launcher->claimed_root_rank};
    } else if (in.launcher) {
      d.launcher_blamed_ranks = in.launcher->claimed_root_ranks;
    }
    // A launcher that restarts: each attempt, and whether the job came back.
    d.attempts = attemptsOf(in);
    d.recovery = judgeRecovery(in, d.attempts);
    d.findings = findFindings(in);
    // The faults the run asked for: each struck, or why not.
    d.faults = faultOutcomes(in);
    // Findings that could not be looked for: unknown, not absent.
    d.unchecked = findUnchecked(in, d.findings);
    // Which shim patches applied on each rank: what "no event" means on that rank.
    for (const auto& [r, ri] : in.ranks) {
      if (auto inst = rankInstruments(ri.events)) d.instruments[r] = std::move(*inst);
    }
    // Stack dumps (SIGUSR1, eu-stack or gdb) travel in the report, so
    // renderers that read report.json alone can show where each rank stood.
    for (const auto& [r, ri] : in.ranks) {
      if (auto text = readTail(layout.rankStacks(r), 64 * 1024); text && !text->empty()) {
        d.stack_dumps[r] = sanitizeUtf8(*text);
      }
    }
    return d;
  } catch (const std::exception& e) {
    return fail(ErrorCode::kHarness, std::string("diagnosis failed: ") + e.what(), run_dir);
  }
}

}  // namespace faultline::diagnose
