// Each rank's steps and collectives as spans (begin, duration), from its
// events: what the HTML timeline draws as bars and trace.json as complete
// events. A span that never ended (a hang, a crash inside it) has no duration.
// Pure; no file access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/diagnose/analysis.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

struct SpanSet {
  std::vector<Span> spans;  // by rank, then begin time
  int64_t dropped = 0;      // left out to stay under the cap
};

// At most `cap` spans in all. Over it, each rank keeps its first spans and,
// mostly, its last ones (where a hang or a crash is), and `dropped` counts
// the rest.
SpanSet buildSpans(const Analysis& a, size_t cap = 20000);

}  // namespace faultline::diagnose
