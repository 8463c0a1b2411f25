// Checks on a diagnosed Evidence shared by the fuzz targets: it can be
// described and refined without throwing, and its text can be written as JSON.
#pragma once

#include <string>

#include "harness/diagnose/evidence.h"
#include "tests/fuzz/fuzz_check.h"

namespace faultline::fuzz {

// `utf8`: whether every string must already be valid UTF-8 (it must when the
// parser's input was repaired first, as the error-file parser does).
inline void checkEvidence(const diagnose::Evidence& e, bool utf8) {
  const std::string d = diagnose::describe(e);
  diagnose::Evidence refined = e;
  diagnose::refineKind(refined);
  diagnose::Evidence twice = refined;
  diagnose::refineKind(twice);
  check(twice.kind == refined.kind && twice.symbol == refined.symbol, "refineKind is not idempotent", d);
  if (e.location) check(e.location->line >= 0, "evidence names a negative line", d);
  if (!utf8) return;
  for (const std::string* s : {&e.collateral_reason, &e.type, &e.message, &e.source_line, &e.symbol, &e.signal,
                               &e.origin, &e.note, &e.function, &d}) {
    check(jsonWritable(*s), "evidence text is not valid UTF-8", *s);
  }
  if (e.location) check(jsonWritable(e.location->file), "evidence file is not valid UTF-8", e.location->file);
  for (const std::string& layer : e.chain) check(jsonWritable(layer), "evidence layer is not valid UTF-8", layer);
}

}  // namespace faultline::fuzz
