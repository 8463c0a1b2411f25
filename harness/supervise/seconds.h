// Option values are seconds as doubles; timers and waits want durations, and
// messages want the number as written ("2.5", "60"). Internal to fl::supervise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace faultline::supervise {

using Clock = std::chrono::steady_clock;

inline std::chrono::nanoseconds seconds(double s) {
  return std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9));
}

// "2.5" for 2.5 s, "60" for 60 s.
inline std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

}  // namespace faultline::supervise
