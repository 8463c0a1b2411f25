/* Events from inside any process: the rank it belongs to, JSON lines built in
 * fixed buffers, and one O_APPEND write(2) per line. All I/O here is raw
 * system calls, so it never passes through the interposers and works in a
 * signal handler. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness/probe/json_escape.h"
#include "harness/probe/preload/preload.h"

/* ---- rank ---- */

static int g_rank = -1;

static int parseRank(const char *s) {
  if (!s || !*s) return -1;
  long v = 0;
  for (const char *p = s; *p; ++p) {
    if (*p < '0' || *p > '9' || v > 100000000) return -1;
    v = v * 10 + (*p - '0');
  }
  return (int)v;
}

int fl_rank(void) {
  int r = __atomic_load_n(&g_rank, __ATOMIC_RELAXED);
  if (r >= 0) return r;
  /* FAULTLINE_RANK first: a torch.multiprocessing.spawn child has no RANK,
   * and the Python shim names its rank there (never in RANK, which the
   * trainer's own code may read). */
  r = parseRank(getenv("FAULTLINE_RANK"));
  if (r < 0) r = parseRank(getenv("RANK"));
  if (r >= 0) __atomic_store_n(&g_rank, r, __ATOMIC_RELAXED);
  return r;
}

void fl_rank_reset_after_fork(void) { __atomic_store_n(&g_rank, -1, __ATOMIC_RELAXED); }

int fl_events_enabled(void) {
  const char *f = getenv("FAULTLINE_EVENTS");
  const char *d = getenv("FAULTLINE_EVENTS_DIR");
  return (f && *f) || (d && *d);
}

/* ---- JSON line ---- */

static void put(struct fl_line *b, char c) {
  if (b->len < b->cap) b->buf[b->len] = c;
  ++b->len;
}

void fl_line_raw(struct fl_line *b, const char *s) {
  while (*s) put(b, *s++);
}

void fl_line_num(struct fl_line *b, long long v) {
  char tmp[24];
  int n = 0;
  unsigned long long u = v < 0 ? (unsigned long long)(-(v + 1)) + 1 : (unsigned long long)v;
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0) put(b, '-');
  while (n) put(b, tmp[--n]);
}

void fl_line_hex(struct fl_line *b, uint64_t v, int width) {
  static const char kDigits[] = "0123456789abcdef";
  for (int i = width - 1; i >= 0; --i) put(b, kDigits[(v >> (4 * i)) & 0xf]);
}

/* harness/probe/json_escape.h: control characters escaped, ill-formed UTF-8
 * as \ufffd, so that a reader never rejects the line (paths are bytes, not
 * text). */
void fl_line_str(struct fl_line *b, const char *s) { b->len = fl_json_string(b->buf, b->cap, b->len, s); }

void fl_line_key(struct fl_line *b, const char *key) {
  put(b, ',');
  fl_line_str(b, key);
  put(b, ':');
}

void fl_line_head(struct fl_line *b, int rank, const char *ev) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  fl_line_raw(b, "{\"t\":");
  fl_line_num(b, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
  fl_line_raw(b, ",\"rank\":");
  fl_line_num(b, rank);
  fl_line_raw(b, ",\"pid\":");
  fl_line_num(b, (long long)syscall(SYS_getpid));
  fl_line_key(b, "ev");
  fl_line_str(b, ev);
}

/* ---- the events file ---- */

/* Appends s to buf[*len]; 0 when it does not fit. */
static int append(char *buf, size_t cap, size_t *len, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > cap) return 0;
  memcpy(buf + *len, s, n + 1);
  *len += n;
  return 1;
}

static int eventsPath(int rank, char *buf, size_t cap) {
  size_t len = 0;
  const char *f = getenv("FAULTLINE_EVENTS");
  if (f && *f) return append(buf, cap, &len, f);
  const char *d = getenv("FAULTLINE_EVENTS_DIR");
  if (!d || !*d || rank < 0) return 0;
  char num[24];
  struct fl_line n = {num, sizeof num - 1, 0};
  fl_line_num(&n, rank);
  num[n.len] = '\0';
  return append(buf, cap, &len, d) && append(buf, cap, &len, "/") && append(buf, cap, &len, num) &&
         append(buf, cap, &len, "/events.jsonl");
}

static void mkdirParents(char *path) {
  for (char *p = path + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    syscall(SYS_mkdirat, AT_FDCWD, path, 0755);
    *p = '/';
  }
}

void fl_emit(struct fl_line *b, int rank) {
  fl_line_raw(b, "}\n");
  if (b->len > b->cap) return; /* truncated: a torn line is worse than none */
  const int saved = errno;
  char path[FL_PATH_MAX];
  if (eventsPath(rank, path, sizeof path)) {
    /* Open per event: events from the interposer are rare, and holding no
     * descriptor means none the program can close, reuse or leak. */
    const int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
    long fd = syscall(SYS_openat, AT_FDCWD, path, flags, 0644);
    if (fd < 0 && errno == ENOENT) {
      mkdirParents(path);
      fd = syscall(SYS_openat, AT_FDCWD, path, flags, 0644);
    }
    if (fd >= 0) {
      const char *p = b->buf;
      size_t left = b->len;
      while (left > 0) {
        long n = syscall(SYS_write, (int)fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        p += n;
        left -= (size_t)n;
      }
      syscall(SYS_close, (int)fd);
    }
  }
  errno = saved;
}

/* ---- paths ---- */

int fl_fd_path(int fd, char *buf, size_t cap) {
  char link[40];
  struct fl_line l = {link, sizeof link - 1, 0};
  fl_line_raw(&l, "/proc/self/fd/");
  fl_line_num(&l, fd);
  link[l.len] = '\0';
  const int saved = errno;
  long n = syscall(SYS_readlinkat, AT_FDCWD, link, buf, cap - 1);
  errno = saved;
  if (n <= 0 || buf[0] != '/') return 0; /* "pipe:[123]", "socket:[..]" */
  buf[n] = '\0';
  return 1;
}

/* Removes ".", "..", and repeated slashes from an absolute path, in place. */
static void normalise(char *path) {
  char *out = path;
  const char *in = path;
  while (*in) {
    while (*in == '/') ++in;
    if (!*in) break;
    const char *end = in;
    while (*end && *end != '/') ++end;
    const size_t n = (size_t)(end - in);
    if (n == 1 && in[0] == '.') {
      /* skip */
    } else if (n == 2 && in[0] == '.' && in[1] == '.') {
      while (out > path && *--out != '/') {
      }
    } else {
      *out++ = '/';
      memmove(out, in, n);
      out += n;
    }
    in = end;
  }
  if (out == path) *out++ = '/';
  *out = '\0';
}

int fl_abs_path(int dirfd, const char *path, char *buf, size_t cap) {
  if (!path || !*path) return 0;
  size_t len = 0;
  buf[0] = '\0';
  if (path[0] != '/') {
    const int saved = errno;
    long n;
    if (dirfd == AT_FDCWD) {
      n = syscall(SYS_getcwd, buf, cap) > 0;
    } else {
      n = fl_fd_path(dirfd, buf, cap);
    }
    errno = saved;
    if (!n || buf[0] != '/') return 0;
    len = strlen(buf);
    if (!append(buf, cap, &len, "/")) return 0;
  }
  if (!append(buf, cap, &len, path)) return 0;
  normalise(buf);
  return 1;
}

/* The run's harness-owned trees, as given and with symlinks resolved. */
enum { kRoots = 4 };
static char g_roots[2 * kRoots][FL_PATH_MAX];

static int startsWithDir(const char *path, const char *dir) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') --n;
  return n > 0 && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static void setRoot(int i, const char *base, const char *tail) {
  char *raw = g_roots[2 * i], *canon = g_roots[2 * i + 1];
  raw[0] = canon[0] = '\0';
  if (!base || !*base) return;
  size_t len = 0;
  if (!append(raw, FL_PATH_MAX, &len, base) || !append(raw, FL_PATH_MAX, &len, tail)) {
    raw[0] = '\0';
    return;
  }
  const int saved = errno;
  char tmp[PATH_MAX];
  if (realpath(base, tmp)) {
    len = 0;
    if (!append(canon, FL_PATH_MAX, &len, tmp) || !append(canon, FL_PATH_MAX, &len, tail)) canon[0] = '\0';
  }
  errno = saved;
}

void fl_paths_init(void) {
  const char *run = getenv("FAULTLINE_RUN_DIR");
  setRoot(0, run, "/ranks");
  setRoot(1, run, "/launcher");
  setRoot(2, getenv("FAULTLINE_EVENTS_DIR"), "");
  setRoot(3, getenv("FAULTLINE_EVENTS"), "");
}

int fl_is_excluded_path(const char *abs) {
  if (startsWithDir(abs, "/dev") || startsWithDir(abs, "/proc") || startsWithDir(abs, "/sys")) return 1;
  /* Python's bytecode cache: the interpreter's business; two ranks compiling
   * one module write the same temporary name, which is no trainer bug. */
  if (strstr(abs, "/__pycache__/")) return 1;
  for (int i = 0; i < 2 * kRoots; ++i) {
    if (g_roots[i][0] && startsWithDir(abs, g_roots[i])) return 1;
  }
  return 0;
}
