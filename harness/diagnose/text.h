// Text helpers for evidence files: bounded reads, line splitting, UTF-8 repair,
// and the `[default1]:` / `[1]:` prefixes launchers put on rank output.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::diagnose {

// Logs can be huge (a rank flooding stdout); failures are at the end, so only
// the last kMaxLogBytes of a log are read.
inline constexpr size_t kMaxLogBytes = 1 << 20;

// The last `max_bytes` of a file (starting at a line boundary when cut), or
// nullopt when it cannot be opened. Never throws.
std::optional<std::string> readTail(const std::string& path, size_t max_bytes = kMaxLogBytes);
// The whole file, or nullopt.
std::optional<std::string> readAll(const std::string& path);

// Replaces every invalid UTF-8 sequence with U+FFFD, so evidence can go into JSON.
std::string sanitizeUtf8(std::string_view s);

// Lines without their terminator ("\n" or "\r\n"); a last line without "\n" is kept.
std::vector<std::string_view> splitLines(std::string_view text);

std::string_view trim(std::string_view s);
bool startsWith(std::string_view s, std::string_view prefix);
bool contains(std::string_view s, std::string_view needle);

// "[default1]:text" (torchrun --tee: role name + local rank) -> {1, "text"}.
// "[1]:" alone is no prefix: torchrun's failure blocks use it.
struct PrefixedLine {
  int local_rank = -1;
  std::string_view text;
};
std::optional<PrefixedLine> splitRankPrefix(std::string_view line);

// Strips ANSI colour escapes (some loggers colour their output).
std::string stripAnsi(std::string_view s);

// Keeps at most `max` characters of the end of s, cut at a line start when possible.
std::string tailOf(std::string_view s, size_t max);

}  // namespace faultline::diagnose
