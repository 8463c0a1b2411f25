// Bounds that tests assert on time and memory, adjusted for instrumented
// builds: `ci/test --sanitize` sets FAULTLINE_TEST_TIME_SCALE (ASan and TSan
// slow every process several times), and peak-RSS bounds do not hold under a
// sanitizer at all.
#pragma once

#include <chrono>
#include <cstdlib>

namespace faultline::testing {

// FAULTLINE_TEST_TIME_SCALE, at least 1 (unset: 1).
inline double timeScale() {
  static const double scale = [] {
    const char* env = std::getenv("FAULTLINE_TEST_TIME_SCALE");
    const double v = env ? std::strtod(env, nullptr) : 1.0;
    return v > 1.0 ? v : 1.0;
  }();
  return scale;
}

// A time bound stretched by timeScale().
template <class Rep, class Period>
std::chrono::milliseconds scaled(std::chrono::duration<Rep, Period> d) {
  return std::chrono::milliseconds(
      static_cast<long long>(std::chrono::duration<double, std::milli>(d).count() * timeScale()));
}
inline double scaledMs(double ms) { return ms * timeScale(); }

// Whether this binary, and so the processes of the same build it starts, is
// instrumented: ASan keeps up to 256 MiB of freed memory in quarantine and
// TSan shadows every byte, so peak-RSS bounds say nothing there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace faultline::testing
