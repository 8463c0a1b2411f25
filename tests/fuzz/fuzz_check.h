// Invariant checks shared by the fuzz targets. A broken invariant aborts, so
// libFuzzer records it with its input exactly like a sanitizer report.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace faultline::fuzz {

inline void check(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  std::fprintf(stderr, "fuzz invariant broken: %.*s", static_cast<int>(what.size()), what.data());
  if (!detail.empty()) std::fprintf(stderr, ": %.*s", static_cast<int>(detail.size()), detail.data());
  std::fputc('\n', stderr);
  std::abort();
}

// Whether nlohmann's writer takes `s` with its default (throwing) error
// handler: the test that a string is valid UTF-8 that the JSON writers apply.
inline bool jsonWritable(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace faultline::fuzz
