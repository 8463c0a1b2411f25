// libFuzzer target: the classifiers of rank and launcher output
// (harness/diagnose: python_traceback, native_error, collateral, rank_log,
// launcher_log, text), all over the same bytes, as a rank's stderr.
// Invariants: nothing throws; traceback line ranges lie inside the input;
// pointers the parsers return point into what they were given; the UTF-8
// repair gives valid UTF-8, is idempotent and keeps valid text as it is.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/launcher_log.h"
#include "harness/diagnose/native_error.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "tests/fuzz/evidence_check.h"

namespace {

namespace dx = faultline::diagnose;
using faultline::fuzz::check;

void checkChains(const std::vector<dx::PyChain>& chains, size_t nlines) {
  for (const dx::PyChain& c : chains) {
    check(!c.tracebacks.empty(), "a traceback chain is empty");
    for (const dx::PyTraceback& tb : c.tracebacks) {
      check(tb.first_line <= tb.last_line && tb.last_line < nlines, "a traceback's lines lie outside the input");
      check(tb.truncated || !tb.type.empty(), "a complete traceback has no exception type");
      (void)tb.shortType();
    }
  }
}

void checkUtf8Repair(std::string_view text) {
  const std::string fixed = faultline::sanitizeUtf8(text);
  check(faultline::fuzz::jsonWritable(fixed), "sanitizeUtf8 output is not valid UTF-8");
  check(faultline::sanitizeUtf8(fixed) == fixed, "sanitizeUtf8 is not idempotent");
  if (faultline::fuzz::jsonWritable(std::string(text))) check(fixed == text, "sanitizeUtf8 changed valid UTF-8");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string_view> lines = dx::splitLines(text);
  checkUtf8Repair(text);

  // A rank's stderr, as run_input reads it.
  const dx::RankLog log = dx::scanRankLog(text);
  for (const dx::Evidence& e : log.errors) faultline::fuzz::checkEvidence(e, /*utf8=*/false);
  if (const dx::Evidence* t = dx::terminalError(log.errors)) {
    check(t >= log.errors.data() && t < log.errors.data() + log.errors.size(), "terminalError points outside");
  }
  if (const dx::PyFrame* f = dx::userFrame(log.stacks)) check(!dx::isLibraryPath(f->file), "userFrame is library code");

  // The parsers one by one, as the launcher-log and error-file paths use them.
  const std::vector<dx::PyChain> chains = dx::parsePythonTracebacks(lines);
  checkChains(chains, lines.size());
  for (const dx::PyChain& c : chains) {
    if (!c.original().type.empty()) faultline::fuzz::checkEvidence(dx::evidenceFromChain(c), /*utf8=*/false);
  }
  // scanRankLog runs the native parsers on the lines that hold their anchors;
  // these take any line (the collateral classifier runs on evidence text).
  (void)dx::parseTerminate(lines);
  (void)dx::parseC10Location(text);
  for (std::string_view l : lines) {
    (void)dx::classifyCollateral(l);
    (void)dx::spawnProcessIndex(l);
    if (auto p = dx::splitRankPrefix(l)) {
      check(p->rank >= 0, "a rank prefix has a negative rank");
      check(p->text.data() >= l.data() && p->text.data() + p->text.size() == l.data() + l.size(),
            "a rank prefix's text is not the rest of its line");
    }
  }
  check(dx::stripAnsi(text).size() <= text.size(), "stripAnsi grew its input");
  check(dx::tailOf(text, 100).size() <= 100, "tailOf kept more than asked");

  // A launcher's stderr.
  const dx::LauncherLog launcher = dx::parseLauncherLog(text);
  if (launcher.spawn_chain) checkChains({*launcher.spawn_chain}, lines.size());
  for (const dx::PyChain& c : launcher.unattributed) (void)dx::isLauncherTraceback(c.final());
  return 0;
}
