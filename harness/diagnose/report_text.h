// Rank output as report.json carries it (ranks[].stderr_tail, trigger.detail):
// valid UTF-8 (the one policy, harness/model/utf8.h) without control characters.
#pragma once

#include <cstddef>
#include <string>

namespace faultline::diagnose {

// sanitizeUtf8 (ill-formed sequences, surrogates and overlong forms become
// U+FFFD), then control characters but \n, \t, \r become '?'.
std::string sanitizeReportText(const std::string& in);

// The last `limit` bytes of a file, cut at a line start when one is near,
// through sanitizeReportText; "" when the file cannot be read.
std::string fileTail(const std::string& path, size_t limit);

// report.json's ranks[].stderr_tail: the last 64 KiB of a rank's stderr.
inline constexpr size_t kStderrTailBytes = 64 * 1024;

}  // namespace faultline::diagnose
