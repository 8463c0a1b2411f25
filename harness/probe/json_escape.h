/* The JSON string escaper of every event writer in C and in a signal handler:
 * the probe (probe.cc) and the LD_PRELOAD interposer (preload/events.c).
 * Plain C, no allocation, no libc call but strlen: async-signal-safe. Bytes
 * are checked as code points by the rules of harness/model/utf8.h, so what it
 * writes is always valid UTF-8 JSON that a strict reader takes. */
#ifndef FAULTLINE_PROBE_JSON_ESCAPE_H
#define FAULTLINE_PROBE_JSON_ESCAPE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Appends the JSON string literal of s[0..n) to buf at offset len and returns
 * the new length. Only bytes below cap are stored; the length keeps counting
 * past cap, so a caller sees an overflow as a result > cap (both writers cut
 * such a line). '"', '\\', \n, \t and \r are escaped by name, other control
 * characters (NUL and DEL included) as \u00XX; a well-formed sequence is
 * copied; each maximal subpart of an ill-formed one (a stray continuation, a
 * truncated sequence, an overlong form, a surrogate, a code point above
 * U+10FFFF) becomes one \ufffd. */
size_t fl_json_string_n(char *buf, size_t cap, size_t len, const char *s, size_t n);

/* The same for the NUL-terminated s; NULL writes the literal null. */
size_t fl_json_string(char *buf, size_t cap, size_t len, const char *s);

#ifdef __cplusplus
}
#endif

#endif
