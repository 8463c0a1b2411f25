/* FAULTLINE_INJECT parsing: a hand-written scanner over the text, no
 * allocation, so the interposer can run it before the program's main. */
#include "harness/probe/preload/inject_spec.h"

#include <errno.h>
#include <string.h>

static const char *const kCallNames[FL_CALL_COUNT] = {"write", "read", "fsync", "fdatasync", "open", "connect"};

static const struct {
  const char *name;
  int value;
} kErrnos[] = {
    {"SIGKILL", FL_INJECT_KILL}, {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EDQUOT", EDQUOT}, {"EROFS", EROFS}, {"EACCES", EACCES},
    {"EPERM", EPERM}, {"ENOENT", ENOENT}, {"EEXIST", EEXIST}, {"EISDIR", EISDIR}, {"ENOTDIR", ENOTDIR},
    {"ENAMETOOLONG", ENAMETOOLONG}, {"ELOOP", ELOOP}, {"EMFILE", EMFILE}, {"ENFILE", ENFILE},
    {"EFBIG", EFBIG}, {"ENOMEM", ENOMEM}, {"EINTR", EINTR}, {"EAGAIN", EAGAIN}, {"EBADF", EBADF},
    {"EINVAL", EINVAL}, {"EBUSY", EBUSY}, {"ETXTBSY", ETXTBSY}, {"ESTALE", ESTALE}, {"EPIPE", EPIPE},
    {"ECONNREFUSED", ECONNREFUSED}, {"ECONNRESET", ECONNRESET}, {"ECONNABORTED", ECONNABORTED},
    {"ETIMEDOUT", ETIMEDOUT}, {"EHOSTUNREACH", EHOSTUNREACH}, {"ENETUNREACH", ENETUNREACH},
    {"ENETDOWN", ENETDOWN}, {"EADDRINUSE", EADDRINUSE}, {"EADDRNOTAVAIL", EADDRNOTAVAIL},
};
enum { kErrnoCount = sizeof kErrnos / sizeof kErrnos[0] };

const char *fl_inject_call_name(int call) {
  return call >= 0 && call < FL_CALL_COUNT ? kCallNames[call] : NULL;
}

const char *fl_inject_errno_name(int err) {
  for (int i = 0; i < kErrnoCount; ++i) {
    if (kErrnos[i].value == err) return kErrnos[i].name;
  }
  return NULL;
}

/* A bounded message builder: the error text never overflows its buffer. */
struct msg {
  char *buf;
  size_t cap, len;
};

static void put(struct msg *m, const char *s, size_t n) {
  for (size_t i = 0; i < n && m->len + 1 < m->cap; ++i) m->buf[m->len++] = s[i];
  m->buf[m->len] = '\0';
}

static void puts_(struct msg *m, const char *s) { put(m, s, strlen(s)); }

static void putNum(struct msg *m, long long v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0 && n < 23);
  while (n) put(m, &tmp[--n], 1);
}

/* The part of the text an error is about, quoted. */
static void putQuoted(struct msg *m, const char *s, size_t n) {
  puts_(m, "'");
  put(m, s, n > 64 ? 64 : n);
  if (n > 64) puts_(m, "...");
  puts_(m, "'");
}

static int fail(struct fl_inject_error *err, int offset, const char *what, const char *part, size_t part_len,
                const char *expected) {
  if (!err) return -1;
  struct msg m = {err->message, sizeof err->message, 0};
  err->message[0] = '\0';
  err->offset = offset;
  puts_(&m, what);
  if (part) {
    puts_(&m, " ");
    putQuoted(&m, part, part_len);
  }
  if (expected) {
    puts_(&m, ", expected ");
    puts_(&m, expected);
  }
  return -1;
}

static int eq(const char *s, size_t n, const char *word) { return strlen(word) == n && memcmp(s, word, n) == 0; }

static int isBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Decimal integer in [0, 10^15]; 0 when `s` is not one. */
static int parseCount(const char *s, size_t n, long long *out) {
  if (n == 0 || n > 15) return 0;
  long long v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] < '0' || s[i] > '9') return 0;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 1;
}

static const char kExpectedSpec[] = "CALL:ERRNO[:rank=R][:attempt=A][:after=N][:count=K][:path=GLOB|:addr=GLOB]";

/* One SPEC, text[begin, end) with blanks trimmed. */
static int parseOne(const char *text, size_t begin, size_t end, struct fl_inject_rule *r, struct fl_inject_error *err) {
  memset(r, 0, sizeof *r);
  r->rank = -1;
  r->attempt = -1;
  r->call = -1;
  size_t tlen = end - begin;
  if (tlen >= FL_INJECT_TEXT_MAX) tlen = FL_INJECT_TEXT_MAX - 1;
  memcpy(r->text, text + begin, tlen);
  r->text[tlen] = '\0';

  int seen_rank = 0, seen_attempt = 0, seen_after = 0, seen_count = 0, seen_glob = 0;
  size_t pos = begin;
  for (int field = 0; pos <= end; ++field) {
    size_t colon = pos;
    while (colon < end && text[colon] != ':') ++colon;
    const char *part = text + pos;
    size_t n = colon - pos;
    if (field == 0) {
      for (int c = 0; c < FL_CALL_COUNT; ++c) {
        if (eq(part, n, kCallNames[c])) r->call = c;
      }
      if (r->call < 0) {
        return fail(err, (int)pos, n ? "unknown call" : "missing call", n ? part : NULL, n,
                    "one of: write, read, fsync, fdatasync, open, connect (as in write:ENOSPC)");
      }
    } else if (field == 1) {
      for (int i = 0; i < kErrnoCount; ++i) {
        if (eq(part, n, kErrnos[i].name)) r->err = kErrnos[i].value;
      }
      if (r->err == 0) {
        return fail(err, (int)pos, n ? "unknown errno" : "missing errno", n ? part : NULL, n,
                    "an errno name such as ENOSPC, EIO, EDQUOT, EROFS, EACCES, ECONNREFUSED, ECONNRESET, ETIMEDOUT "
                    "(as in write:ENOSPC)");
      }
    } else {
      size_t eqpos = pos;
      while (eqpos < colon && text[eqpos] != '=') ++eqpos;
      if (eqpos == colon) {
        return fail(err, (int)pos, "bad option", part, n, "key=value with key rank, attempt, after, count, path or addr");
      }
      const char *key = part;
      size_t klen = eqpos - pos;
      const char *val = text + eqpos + 1;
      size_t vlen = colon - eqpos - 1;
      const int voff = (int)(eqpos + 1);
      if (eq(key, klen, "path") || eq(key, klen, "addr")) {
        /* A glob runs to the end of the spec: addresses ("127.0.0.1:29500") hold colons. */
        vlen = end - eqpos - 1;
        colon = end;
        const int is_path = key[0] == 'p';
        if (is_path && r->call == FL_CALL_CONNECT) {
          return fail(err, (int)pos, "path= does not apply to connect", NULL, 0, "addr=GLOB over IP:PORT");
        }
        if (!is_path && r->call != FL_CALL_CONNECT) {
          return fail(err, (int)pos, "addr= applies to connect only", NULL, 0, "path=GLOB for file calls");
        }
        if (seen_glob++) return fail(err, (int)pos, "duplicate option", key, klen, "each key once");
        if (vlen == 0) return fail(err, voff, "empty glob", NULL, 0, is_path ? "path=GLOB" : "addr=GLOB");
        if (vlen >= FL_INJECT_GLOB_MAX) {
          return fail(err, voff, "glob too long", NULL, 0, "at most 255 characters");
        }
        memcpy(r->glob, val, vlen);
        r->glob[vlen] = '\0';
      } else if (eq(key, klen, "rank")) {
        long long v = 0;
        if (seen_rank++) return fail(err, (int)pos, "duplicate option", key, klen, "each key once");
        if (eq(val, vlen, "all") || eq(val, vlen, "*")) {
          r->rank = -1;
        } else if (parseCount(val, vlen, &v) && v < 1000000) {
          r->rank = (int)v;
        } else {
          return fail(err, voff, "bad rank", val, vlen, "an integer >= 0, or all");
        }
      } else if (eq(key, klen, "attempt")) {
        long long v = 0;
        if (seen_attempt++) return fail(err, (int)pos, "duplicate option", key, klen, "each key once");
        if (!parseCount(val, vlen, &v) || v > 1000) {
          return fail(err, voff, "bad attempt", val, vlen, "an integer >= 0 (0: the first attempt)");
        }
        r->attempt = (int)v;
      } else if (eq(key, klen, "after")) {
        if (seen_after++) return fail(err, (int)pos, "duplicate option", key, klen, "each key once");
        if (!parseCount(val, vlen, &r->after)) {
          return fail(err, voff, "bad after", val, vlen, "an integer >= 0 (calls that succeed first)");
        }
      } else if (eq(key, klen, "count")) {
        if (seen_count++) return fail(err, (int)pos, "duplicate option", key, klen, "each key once");
        if (!parseCount(val, vlen, &r->count) || r->count < 1) {
          return fail(err, voff, "bad count", val, vlen, "an integer >= 1 (calls that fail)");
        }
      } else {
        return fail(err, (int)pos, "unknown option", key, klen, "rank, attempt, after, count, path or addr");
      }
    }
    if (colon >= end) {
      if (field == 0) {
        return fail(err, (int)end, "missing errno after", text + begin, end - begin,
                    "CALL:ERRNO such as write:ENOSPC");
      }
      break;
    }
    pos = colon + 1;
  }
  return 0;
}

int fl_inject_parse(const char *text, struct fl_inject_rule *rules, int max, struct fl_inject_error *err) {
  if (err) {
    err->offset = 0;
    err->message[0] = '\0';
  }
  if (!text) return 0;
  const size_t len = strlen(text);
  size_t blank = 0;
  while (blank < len && isBlank(text[blank])) ++blank;
  if (blank == len) return 0;

  int n = 0;
  for (size_t pos = 0; pos <= len;) {
    size_t semi = pos;
    while (semi < len && text[semi] != ';') ++semi;
    size_t b = pos, e = semi;
    while (b < e && isBlank(text[b])) ++b;
    while (e > b && isBlank(text[e - 1])) --e;
    if (b == e) return fail(err, (int)b, "empty spec", NULL, 0, kExpectedSpec);
    if (n >= max) {
      struct fl_inject_error tmp;
      fail(&tmp, (int)b, "too many specs", NULL, 0, "at most ");
      if (err) {
        *err = tmp;
        struct msg m = {err->message, sizeof err->message, strlen(err->message)};
        putNum(&m, max);
        puts_(&m, " separated by ';'");
      }
      return -1;
    }
    if (parseOne(text, b, e, &rules[n], err) != 0) return -1;
    ++n;
    if (semi >= len) break;
    pos = semi + 1;
  }
  return n;
}
