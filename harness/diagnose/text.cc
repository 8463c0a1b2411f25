// Text helpers for evidence files.
#include "harness/diagnose/text.h"

#include <cstdio>
#include <fstream>

namespace faultline::diagnose {

std::optional<std::string> readTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return std::nullopt;
  std::streamoff start = 0;
  if (static_cast<size_t>(size) > max_bytes) start = size - static_cast<std::streamoff>(max_bytes);
  in.seekg(start);
  std::string out(static_cast<size_t>(size - start), '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<size_t>(in.gcount()));
  if (start > 0) {
    const size_t nl = out.find('\n');
    if (nl != std::string::npos) out.erase(0, nl + 1);
  }
  return out;
}

std::optional<std::string> readAll(const std::string& path) {
  return readTail(path, static_cast<size_t>(-1) / 2);
}

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = nl + 1;
  }
  return lines;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

bool contains(std::string_view s, std::string_view needle) { return s.find(needle) != std::string_view::npos; }

std::optional<PrefixedLine> splitRankPrefix(std::string_view line) {
  if (line.empty() || line.front() != '[') return std::nullopt;
  const size_t close = line.find("]:");
  if (close == std::string_view::npos || close > 64) return std::nullopt;
  std::string_view inner = line.substr(1, close - 1);
  std::string_view rest = line.substr(close + 2);
  size_t d = inner.size();
  while (d > 0 && inner[d - 1] >= '0' && inner[d - 1] <= '9') --d;
  if (d == inner.size() || inner.size() - d > 6) return std::nullopt;  // a role name, then digits
  for (size_t i = 0; i < d; ++i) {
    const char c = inner[i];
    if (!(c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return std::nullopt;
  }
  int r = 0;
  for (size_t i = d; i < inner.size(); ++i) r = r * 10 + (inner[i] - '0');
  if (d == 0) {
    // "[1]:" alone heads an entry of torchrun's failure block; with text after
    // it, it is a "[${rank}]:" prefix template.
    if (rest.empty()) return std::nullopt;
    return PrefixedLine{r, PrefixKind::kRank, rest};
  }
  if (inner.substr(0, d) == "rank") {
    if (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    return PrefixedLine{r, PrefixKind::kRank, rest};
  }
  return PrefixedLine{r, PrefixKind::kRole, rest};
}

std::string_view stripRankPrefixes(std::string_view line) {
  for (int i = 0; i < 4; ++i) {  // tee, then the rank's own; a few at most
    auto p = splitRankPrefix(line);
    if (!p) break;
    line = p->text;
  }
  return line;
}

std::string stripAnsi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      i += 2;
      while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

std::string tailOf(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  std::string_view t = s.substr(s.size() - max);
  const size_t nl = t.find('\n');
  if (nl != std::string_view::npos && nl + 1 < t.size()) t.remove_prefix(nl + 1);
  return std::string(t);
}

}  // namespace faultline::diagnose
