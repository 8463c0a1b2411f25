// Well-formed UTF-8, by decoding (independent of harness/model/utf8.cc).
#include "tests/support/utf8_oracle.h"

#include <cstddef>
#include <cstdint>

namespace faultline::testing {

bool wellFormedUtf8(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0, n = s.size(); i < n;) {
    const unsigned char c = b[i];
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      if ((b[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (b[i + k] & 0x3f);
    }
    static const uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) return false;
    i += len;
  }
  return true;
}

}  // namespace faultline::testing
