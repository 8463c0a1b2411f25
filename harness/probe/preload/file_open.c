/* The open family: every successful open of a regular file for writing is a
 * `file_open` event, which the concurrent_writes finding joins across ranks
 * (two ranks, one path). Injection for `open` runs before the real call. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness/probe/preload/preload.h"

const char *fl_write_mode(int flags) {
  /* O_PATH opens nothing; an O_TMPFILE file has no name to share. */
  if ((flags & O_PATH) || (flags & O_TMPFILE) == O_TMPFILE) return NULL;
  switch (flags & O_ACCMODE) {
    case O_WRONLY: return (flags & O_APPEND) ? "a" : "w";
    case O_RDWR: return (flags & O_APPEND) ? "a" : "rw";
    default: return NULL;
  }
}

/* open(2) flags for an fopen mode string ("r", "w+", "ab", "re", ...). */
static int fopenFlags(const char *mode) {
  if (!mode) return O_RDONLY;
  const int plus = strchr(mode, '+') != NULL;
  switch (mode[0]) {
    case 'w': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case 'a': return (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    default: return plus ? O_RDWR : O_RDONLY;
  }
}

/* Paths already handled in this process, as hashes, in two tables: the path
 * as the program named it (no system call needed to look it up) and the
 * canonical path (recorded once). A file reopened every step costs nothing
 * after its first open. Lock-free open addressing; when full, look again. */
enum { kSeen = 4096, kProbes = 32 };
static uint64_t g_requested[kSeen];
static uint64_t g_recorded[kSeen];
static unsigned g_cwd_generation; /* bumped by chdir: a relative name means another file */

static uint64_t mix(uint64_t h, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) h = (h ^ *p) * 0x100000001b3ULL;
  return (h ^ 0xff) * 0x100000001b3ULL;
}

/* 1 if `h` was not in the table and now is; 0 if it was there. */
static int insertOnce(uint64_t *table, uint64_t h) {
  if (h == 0) h = 1;
  for (unsigned i = 0; i < kProbes; ++i) {
    uint64_t *slot = &table[(h + i) % kSeen];
    uint64_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (cur == h) return 0;
    if (cur == 0) {
      uint64_t expected = 0;
      if (__atomic_compare_exchange_n(slot, &expected, h, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return 1;
      if (expected == h) return 0;
    }
  }
  return 1;
}

static int contains(const uint64_t *table, uint64_t h) {
  if (h == 0) h = 1;
  for (unsigned i = 0; i < kProbes; ++i) {
    const uint64_t cur = __atomic_load_n(&table[(h + i) % kSeen], __ATOMIC_RELAXED);
    if (cur == h) return 1;
    if (cur == 0) return 0;
  }
  return 0;
}

/* The name as given, for an absolute path or one relative to the working
 * directory; 0 (no shortcut) for a path relative to another directory fd. */
static uint64_t requestKey(int dirfd, const char *path, const char *mode) {
  if (!path || (path[0] != '/' && dirfd != AT_FDCWD)) return 0;
  uint64_t h = mix(0xcbf29ce484222325ULL, mode);
  if (path[0] != '/') h = (h ^ (__atomic_load_n(&g_cwd_generation, __ATOMIC_RELAXED) + 1ULL)) * 0x100000001b3ULL;
  return mix(h, path);
}

void fl_file_open_reset_after_fork(void) {
  memset(g_requested, 0, sizeof g_requested);
  memset(g_recorded, 0, sizeof g_recorded);
}

void fl_record_open(int fd, int flags, int dirfd, const char *requested) {
  const char *mode = fl_write_mode(flags);
  if (fd < 0 || !mode) return;
  const int rank = fl_rank();
  if (rank < 0 || !fl_events_enabled()) return;
  const uint64_t key = requestKey(dirfd, requested, mode);
  if (key && contains(g_requested, key)) return;
  const int saved = errno;
  struct stat st;
  char path[FL_PATH_MAX];
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fl_fd_path(fd, path, sizeof path) &&
      !fl_is_excluded_path(path) && insertOnce(g_recorded, mix(mix(0xcbf29ce484222325ULL, mode), path))) {
    char buf[FL_PATH_MAX + 256];
    struct fl_line b = {buf, sizeof buf, 0};
    fl_line_head(&b, rank, "file_open");
    fl_line_key(&b, "path");
    fl_line_str(&b, path);
    fl_line_key(&b, "mode");
    fl_line_str(&b, mode);
    fl_emit(&b, rank);
  }
  if (key) insertOnce(g_requested, key);
  errno = saved;
}

/* ---- interposers ---- */

static fl_fn s_chdir, s_fchdir, s_open, s_open64, s_openat, s_openat64, s_creat, s_creat64, s___open_2, s___open64_2,
    s___openat_2, s___openat64_2, s_fopen, s_fopen64;

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open2_fn)(const char *, int);
typedef int (*openat2_fn)(int, const char *, int);
typedef int (*creat_fn)(const char *, mode_t);
typedef FILE *(*fopen_fn)(const char *, const char *);

/* Open with the real function, or the raw system call while dlsym runs. */
static int openVia(openat_fn at, open_fn plain, int dirfd, const char *path, int flags, mode_t mode) {
  if (plain) return plain(path, flags, mode);
  if (at) return at(dirfd, path, flags, mode);
  return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static int openCommon(const char *fn, openat_fn at, open_fn plain, int dirfd, const char *path, int flags,
                      mode_t mode) {
  if (FL_UNLIKELY(fl_inject_wanted(FL_CALL_OPEN))) {
    const int e = fl_inject_open(fn, dirfd, path, flags);
    if (e) {
      errno = e;
      return -1;
    }
  }
  const int fd = openVia(at, plain, dirfd, path, flags, mode);
  fl_record_open(fd, flags, dirfd, path);
  return fd;
}

static mode_t modeArg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

FL_EXPORT int open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return openCommon("open", NULL, FL_REAL(open_fn, open), AT_FDCWD, path, flags, mode);
}

FL_EXPORT int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return openCommon("open64", NULL, FL_REAL(open_fn, open64), AT_FDCWD, path, flags, mode);
}

FL_EXPORT int openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return openCommon("openat", FL_REAL(openat_fn, openat), NULL, dirfd, path, flags, mode);
}

FL_EXPORT int openat64(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArg(flags, ap);
  va_end(ap);
  return openCommon("openat64", FL_REAL(openat_fn, openat64), NULL, dirfd, path, flags, mode);
}

/* The _FORTIFY_SOURCE entry points: open(path, flags) without a mode. */
FL_EXPORT int __open_2(const char *path, int flags);
FL_EXPORT int __open64_2(const char *path, int flags);
FL_EXPORT int __openat_2(int dirfd, const char *path, int flags);
FL_EXPORT int __openat64_2(int dirfd, const char *path, int flags);

static int open2Common(const char *fn, open2_fn plain, openat2_fn at, int dirfd, const char *path, int flags) {
  if (FL_UNLIKELY(fl_inject_wanted(FL_CALL_OPEN))) {
    const int e = fl_inject_open(fn, dirfd, path, flags);
    if (e) {
      errno = e;
      return -1;
    }
  }
  int fd;
  if (plain) {
    fd = plain(path, flags);
  } else if (at) {
    fd = at(dirfd, path, flags);
  } else {
    fd = (int)syscall(SYS_openat, dirfd, path, flags, 0);
  }
  fl_record_open(fd, flags, dirfd, path);
  return fd;
}

int __open_2(const char *path, int flags) {
  return open2Common("__open_2", FL_REAL(open2_fn, __open_2), NULL, AT_FDCWD, path, flags);
}
int __open64_2(const char *path, int flags) {
  return open2Common("__open64_2", FL_REAL(open2_fn, __open64_2), NULL, AT_FDCWD, path, flags);
}
int __openat_2(int dirfd, const char *path, int flags) {
  return open2Common("__openat_2", NULL, FL_REAL(openat2_fn, __openat_2), dirfd, path, flags);
}
int __openat64_2(int dirfd, const char *path, int flags) {
  return open2Common("__openat64_2", NULL, FL_REAL(openat2_fn, __openat64_2), dirfd, path, flags);
}

static int creatCommon(const char *fn, creat_fn real, const char *path, mode_t mode) {
  const int flags = O_CREAT | O_WRONLY | O_TRUNC;
  if (FL_UNLIKELY(fl_inject_wanted(FL_CALL_OPEN))) {
    const int e = fl_inject_open(fn, AT_FDCWD, path, flags);
    if (e) {
      errno = e;
      return -1;
    }
  }
  const int fd = real ? real(path, mode) : (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
  fl_record_open(fd, flags, AT_FDCWD, path);
  return fd;
}

FL_EXPORT int creat(const char *path, mode_t mode) { return creatCommon("creat", FL_REAL(creat_fn, creat), path, mode); }
FL_EXPORT int creat64(const char *path, mode_t mode) {
  return creatCommon("creat64", FL_REAL(creat_fn, creat64), path, mode);
}

/* glibc's fopen opens through an internal open that no interposer sees. */
static FILE *fopenCommon(const char *fn, fopen_fn real, const char *path, const char *mode) {
  const int flags = fopenFlags(mode);
  if (FL_UNLIKELY(fl_inject_wanted(FL_CALL_OPEN))) {
    const int e = fl_inject_open(fn, AT_FDCWD, path, flags);
    if (e) {
      errno = e;
      return NULL;
    }
  }
  if (!real) {
    errno = ENOSYS;
    return NULL;
  }
  FILE *f = real(path, mode);
  if (f) fl_record_open(fileno(f), flags, AT_FDCWD, path);
  return f;
}

FL_EXPORT FILE *fopen(const char *restrict path, const char *restrict mode) {
  return fopenCommon("fopen", FL_REAL(fopen_fn, fopen), path, mode);
}
FL_EXPORT FILE *fopen64(const char *restrict path, const char *restrict mode) {
  return fopenCommon("fopen64", FL_REAL(fopen_fn, fopen64), path, mode);
}

/* The working directory names relative paths: a change makes them new names. */
typedef int (*chdir_fn)(const char *);
typedef int (*fchdir_fn)(int);

FL_EXPORT int chdir(const char *path) {
  const chdir_fn real = FL_REAL(chdir_fn, chdir);
  const int rc = real ? real(path) : (int)syscall(SYS_chdir, path);
  __atomic_add_fetch(&g_cwd_generation, 1, __ATOMIC_RELAXED);
  return rc;
}

FL_EXPORT int fchdir(int fd) {
  const fchdir_fn real = FL_REAL(fchdir_fn, fchdir);
  const int rc = real ? real(fd) : (int)syscall(SYS_fchdir, fd);
  __atomic_add_fetch(&g_cwd_generation, 1, __ATOMIC_RELAXED);
  return rc;
}
