// One UTF-8 policy for every place where bytes a rank wrote become report
// text (stderr tails in report.json, the rendered JUnit, Markdown and HTML,
// evidence the diagnosis quotes). The C escaper that the probe and the
// interposer write events with (harness/probe/json_escape.h) applies the same
// rules to the same bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace faultline {

// The length (1-4) of the well-formed UTF-8 sequence at s[0..n), or 0 when
// there is none: a stray continuation byte, a truncated sequence, an overlong
// form, a UTF-16 surrogate (U+D800..U+DFFF) or a code point above U+10FFFF.
// The byte ranges are those of Unicode's table 3-7; a check of the lead byte
// and the 10xxxxxx pattern alone lets "\xed\xa0\x80" through, which XML
// parsers and browsers reject.
size_t utf8SequenceLength(const unsigned char* s, size_t n);

// Where utf8SequenceLength(s, n) is 0 (and n > 0): the length (1-3) of the
// maximal subpart at s, the longest prefix that could still begin a
// well-formed sequence (at least 1 byte). One U+FFFD replaces each maximal
// subpart, as Unicode's chapter 3 recommends and as Python's
// errors="replace" and browsers decode: "\xe2\x82" (a truncated U+20AC) is one
// U+FFFD, "\xed\xa0\x80" (a surrogate) three, "\xc0\xaf" (overlong) two.
size_t utf8InvalidLength(const unsigned char* s, size_t n);

// `s` with each maximal subpart of an ill-formed sequence replaced by U+FFFD
// (EF BF BD); well-formed text, control characters included, is unchanged.
// Idempotent; the result is what strict JSON and XML writers accept as UTF-8.
std::string sanitizeUtf8(std::string_view s);

}  // namespace faultline
