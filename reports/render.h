// Renderers from report.json alone: JUnit XML, Markdown and HTML, for one run
// and for a suite. Pure functions of their input; nothing from a report is
// ever executed, only escaped and printed.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/model/error.h"
#include "harness/model/report.h"

namespace faultline::reports {

// One scenario (or exec) run inside a suite.
struct SuiteEntry {
  std::string name;
  std::string stack;
  std::string run_dir;  // relative to the suite directory
  Report report;
  std::vector<std::string> tags;  // the scenario's: the suite page filters its rows by them
};

struct Suite {
  std::vector<SuiteEntry> entries;
  int64_t wall_ms = 0;
};

std::string junitForRun(const Report& r);
std::string junitForSuite(const Suite& s);
std::string markdownForRun(const Report& r);
std::string markdownForSuite(const Suite& s);
std::string htmlForRun(const Report& r);
std::string htmlForSuite(const Suite& s);
nlohmann::json suiteJson(const Suite& s);
// The run in the Chrome Trace Event format (trace.json): Perfetto, chrome://tracing.
nlohmann::json traceForRun(const Report& r);

// The failure-mode catalog (Markdown): one row per scenario and stack.
// `missing` names the stacks the generating machine lacked, each with why:
// the catalog says they are not in it rather than dropping them unsaid.
std::string failureModeCatalog(const std::vector<std::pair<std::string, Suite>>& stacks, const std::string& generated_by,
                               const std::vector<std::pair<std::string, std::string>>& missing = {});

// A JSON value as one line of text; invalid UTF-8 in its strings becomes
// U+FFFD instead of an exception (an expectation's value may hold rank bytes).
std::string jsonText(const nlohmann::json& v);

// The one-line cause a person reads first: the root-cause summary, else the
// first finding, else the verdict.
std::string headline(const Report& r);

// Who the root cause blames and each side of a collective, as lines of text
// for every renderer: "blame: ambiguous, one of ranks 0, 1", "ranks 0:
// barrier at checkpointing.py:11, from rank_zero_checkpoint.py:36, under
// `if rank == 0`". Empty when it blames one rank (or none) and has no sides.
std::vector<std::string> blameLines(const RootCause& rc);

// What went wrong on the harness's side during the run (extra.harness_notes:
// a stack dump it could not take, a signal it could not send), each a line.
// Free-form extra: anything not a string is skipped.
std::vector<std::string> harnessNotes(const Report& r);

// Writes junit.xml, report.md, report.html and trace.json next to RUN_DIR/report.json.
Result<void> renderRun(const Report& r, const std::string& run_dir);
// Writes report.json (suite form), junit.xml, report.md and index.html into DIR.
Result<void> renderSuite(const Suite& s, const std::string& dir);

}  // namespace faultline::reports
