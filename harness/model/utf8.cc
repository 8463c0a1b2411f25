// The UTF-8 policy: well-formed sequences by Unicode's table 3-7, one U+FFFD per maximal subpart.
#include "harness/model/utf8.h"

namespace faultline {

namespace {

// The length a lead byte announces (0: no lead byte), and the range its second byte must be in.
struct Lead {
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;
};

Lead leadOf(unsigned char c) {
  Lead l;
  if (c < 0x80) {
    l.len = 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    l.len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    l.len = 3;
    if (c == 0xe0) l.lo = 0xa0;  // overlong below U+0800
    if (c == 0xed) l.hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    l.len = 4;
    if (c == 0xf0) l.lo = 0x90;  // overlong below U+10000
    if (c == 0xf4) l.hi = 0x8f;  // above U+10FFFF
  }
  return l;
}

// How many bytes of s[0..n) match a well-formed sequence's pattern, at most lead.len.
size_t matchedPrefix(const unsigned char* s, size_t n, const Lead& l) {
  if (n == 0 || l.len == 0) return 0;
  if (l.len == 1) return 1;
  if (n < 2 || s[1] < l.lo || s[1] > l.hi) return 1;
  size_t k = 2;
  while (k < l.len && k < n && (s[k] & 0xc0) == 0x80) ++k;
  return k;
}

}  // namespace

size_t utf8SequenceLength(const unsigned char* s, size_t n) {
  if (n == 0) return 0;
  const Lead l = leadOf(s[0]);
  return l.len > 0 && matchedPrefix(s, n, l) == l.len ? l.len : 0;
}

size_t utf8InvalidLength(const unsigned char* s, size_t n) {
  if (n == 0) return 0;
  const size_t k = matchedPrefix(s, n, leadOf(s[0]));
  return k > 0 ? k : 1;
}

std::string sanitizeUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  for (size_t i = 0; i < n;) {
    if (s[i] < 0x80) {
      out.push_back(static_cast<char>(s[i]));
      ++i;
      continue;
    }
    const size_t len = utf8SequenceLength(s + i, n - i);
    if (len > 0) {
      out.append(in.substr(i, len));
      i += len;
    } else {
      out.append("\xef\xbf\xbd");
      i += utf8InvalidLength(s + i, n - i);
    }
  }
  return out;
}

}  // namespace faultline
