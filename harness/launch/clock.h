// The two clocks of a run: wall time in ns (the clock of events' "t") and monotonic for timeouts.
#pragma once

#include <time.h>

#include <cstdint>

namespace faultline::launch {

inline int64_t realtimeNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

inline int64_t monotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace faultline::launch
