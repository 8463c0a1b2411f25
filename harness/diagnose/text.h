// Text helpers for evidence files: bounded reads, line splitting,
// and the `[default1]:` / `[1]:` prefixes launchers put on rank output.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// sanitizeUtf8, the one UTF-8 repair (U+FFFD per maximal subpart), for evidence going into JSON.
#include "harness/model/utf8.h"

namespace faultline::diagnose {

// Logs can be huge (a rank flooding stdout); failures are at the end, so only
// the last kMaxLogBytes of a log are read.
inline constexpr size_t kMaxLogBytes = 1 << 20;

// The last `max_bytes` of a file (starting at a line boundary when cut), or
// nullopt when it cannot be opened. Never throws.
std::optional<std::string> readTail(const std::string& path, size_t max_bytes = kMaxLogBytes);
// The whole file, or nullopt.
std::optional<std::string> readAll(const std::string& path);

// Lines without their terminator ("\n" or "\r\n"); a last line without "\n" is kept.
std::vector<std::string_view> splitLines(std::string_view text);

std::string_view trim(std::string_view s);
bool startsWith(std::string_view s, std::string_view prefix);
bool contains(std::string_view s, std::string_view needle);

// Prefixes launchers and torch put on a rank's lines:
//   "[default1]:text"  torchrun --tee / local_ranks_filter (role name + local rank), both 1.13 and 2.x
//   "[rank1]: text"    torch 2.x: the excepthook init_process_group installs, and
//   "[rank1]:[W1201 ...] ..." c10's log prefix once the rank is known (global rank)
//   "[1]:text"         TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE="[${rank}]:" (global rank)
// "[1]:" alone is no prefix: torchrun's failure blocks use it.
enum class PrefixKind {
  kRole,  // [<role><local rank>]:
  kRank,  // [rank<rank>]: or [<rank>]:
};
struct PrefixedLine {
  int rank = -1;  // local rank for kRole, global rank for kRank
  PrefixKind kind = PrefixKind::kRole;
  std::string_view text;  // after the prefix (and the one space "[rankN]: " adds)
};
std::optional<PrefixedLine> splitRankPrefix(std::string_view line);
// The line without any of those prefixes, nested ones too
// ("[default1]:[rank1]: Traceback" -> "Traceback"); a suffix of `line`.
std::string_view stripRankPrefixes(std::string_view line);

// Strips ANSI colour escapes (some loggers colour their output).
std::string stripAnsi(std::string_view s);

// Keeps at most `max` characters of the end of s, cut at a line start when possible.
std::string tailOf(std::string_view s, size_t max);

}  // namespace faultline::diagnose
