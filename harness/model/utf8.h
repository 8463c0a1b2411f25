// One UTF-8 validator for every place where bytes a rank wrote become report
// text (stderr tails in report.json, the rendered JUnit, Markdown and HTML).
#pragma once

#include <cstddef>

namespace faultline {

// The length (1-4) of the well-formed UTF-8 sequence at s[0..n), or 0 when
// there is none: a stray continuation byte, a truncated sequence, an overlong
// form, a UTF-16 surrogate (U+D800..U+DFFF) or a code point above U+10FFFF.
// The byte ranges are those of Unicode's table 3-7; a check of the lead byte
// and the 10xxxxxx pattern alone lets "\xed\xa0\x80" through, which XML
// parsers and browsers reject.
inline size_t utf8SequenceLength(const unsigned char* s, size_t n) {
  if (n == 0) return 0;
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong below U+0800
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;  // overlong below U+10000
    if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (n < len || s[1] < lo || s[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((s[k] & 0xc0) != 0x80) return 0;
  }
  return len;
}

}  // namespace faultline
