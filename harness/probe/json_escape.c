/* The JSON string escaper shared by the probe and the interposer. */
#include "harness/probe/json_escape.h"

#include <string.h>

static size_t put(char *buf, size_t cap, size_t len, char c) {
  if (len < cap) buf[len] = c;
  return len + 1;
}

static size_t puts_(char *buf, size_t cap, size_t len, const char *s) {
  while (*s) len = put(buf, cap, len, *s++);
  return len;
}

/* How many bytes of s[0..n) follow the pattern of a well-formed sequence
 * (Unicode's table 3-7), and the length that sequence needs: *need == *got is a
 * well-formed sequence, anything less an ill-formed maximal subpart of *got
 * bytes (at least 1). The same rules as harness/model/utf8.cc. */
static void match(const unsigned char *s, size_t n, size_t *need, size_t *got) {
  const unsigned char c = s[0];
  unsigned char lo = 0x80, hi = 0xbf;
  size_t len = 0;
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0; /* overlong below U+0800 */
    if (c == 0xed) hi = 0x9f; /* surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90; /* overlong below U+10000 */
    if (c == 0xf4) hi = 0x8f; /* above U+10FFFF */
  }
  *need = len;
  *got = 1;
  if (len == 0 || n < 2 || s[1] < lo || s[1] > hi) return;
  size_t k = 2;
  while (k < len && k < n && (s[k] & 0xc0) == 0x80) ++k;
  *got = k;
}

size_t fl_json_string_n(char *buf, size_t cap, size_t len, const char *str, size_t n) {
  static const char kHex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  len = put(buf, cap, len, '"');
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      len = put(buf, cap, len, '\\');
      len = put(buf, cap, len, (char)c);
      ++i;
    } else if (c == '\n') {
      len = puts_(buf, cap, len, "\\n");
      ++i;
    } else if (c == '\t') {
      len = puts_(buf, cap, len, "\\t");
      ++i;
    } else if (c == '\r') {
      len = puts_(buf, cap, len, "\\r");
      ++i;
    } else if (c < 0x20 || c == 0x7f) {
      len = puts_(buf, cap, len, "\\u00");
      len = put(buf, cap, len, kHex[c >> 4]);
      len = put(buf, cap, len, kHex[c & 0xf]);
      ++i;
    } else if (c < 0x80) {
      len = put(buf, cap, len, (char)c);
      ++i;
    } else {
      size_t need = 0, got = 0;
      match(s + i, n - i, &need, &got);
      if (need == got) {
        for (size_t k = 0; k < got; ++k) len = put(buf, cap, len, (char)s[i + k]);
      } else {
        len = puts_(buf, cap, len, "\\ufffd");
      }
      i += got;
    }
  }
  return put(buf, cap, len, '"');
}

size_t fl_json_string(char *buf, size_t cap, size_t len, const char *s) {
  if (!s) return puts_(buf, cap, len, "null");
  return fl_json_string_n(buf, cap, len, s, strlen(s));
}
