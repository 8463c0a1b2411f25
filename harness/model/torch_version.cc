// Version series, ordering and constraints.
#include "harness/model/torch_version.h"

#include <algorithm>
#include <cctype>

namespace faultline {
namespace {

std::vector<int> versionParts(const std::string& v) {
  std::vector<int> parts;
  size_t i = 0;
  while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) {
    int n = 0;
    while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i])) && n < 100000) n = n * 10 + (v[i++] - '0');
    parts.push_back(n);
    if (i + 1 < v.size() && v[i] == '.' && std::isdigit(static_cast<unsigned char>(v[i + 1]))) {
      ++i;
    } else {
      break;
    }
  }
  return parts;
}

// Compares on the first `depth` parts only (0: all of them).
int compareParts(const std::vector<int>& pa, const std::vector<int>& pb, size_t depth) {
  const size_t n = depth ? depth : std::max(pa.size(), pb.size());
  for (size_t i = 0; i < n; ++i) {
    const int x = i < pa.size() ? pa[i] : 0, y = i < pb.size() ? pb[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::string torchSeries(const std::string& version) {
  const auto parts = versionParts(version);
  if (parts.size() < 2) return "";
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]);
}

int compareVersions(const std::string& a, const std::string& b) { return compareParts(versionParts(a), versionParts(b), 0); }

Result<std::vector<VersionBound>> parseVersionConstraint(const std::string& text) {
  std::vector<VersionBound> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string part = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    size_t i = 0;
    while (i < part.size() && std::string("=!<>~^").find(part[i]) != std::string::npos) ++i;
    VersionBound b{part.substr(0, i), trim(part.substr(i))};
    if (b.op.empty()) b.op = "==";
    static const std::vector<std::string> kOps = {"==", "!=", "<", "<=", ">", ">="};
    if (std::find(kOps.begin(), kOps.end(), b.op) == kOps.end()) {
      return fail(ErrorCode::kBadInput, "'" + part + "': unknown comparison '" + b.op + "', expected ==, !=, <, <=, > or >=");
    }
    if (versionParts(b.version).empty() || b.version.find_first_not_of("0123456789.") != std::string::npos) {
      return fail(ErrorCode::kBadInput, "'" + part + "': expected a version such as 2.13 after '" + b.op + "'");
    }
    out.push_back(b);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool satisfies(const std::string& version, const std::vector<VersionBound>& bounds) {
  const auto have = versionParts(version);
  for (const auto& b : bounds) {
    const auto want = versionParts(b.version);
    // "==1.13" holds for 1.13.1; "<2" for every 1.x: compare on the bound's own parts.
    const int c = compareParts(have, want, want.size());
    const bool ok = b.op == "==" ? c == 0 : b.op == "!=" ? c != 0 : b.op == "<" ? c < 0 : b.op == "<=" ? c <= 0
                  : b.op == ">"  ? c > 0  : c >= 0;
    if (!ok) return false;
  }
  return true;
}

}  // namespace faultline
