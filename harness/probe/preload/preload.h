/* Internal interface between the parts of libfaultline_preload.so: symbol
 * resolution, the event writer, file_open recording, syscall injection and the
 * crash handler. Nothing here is exported; only the interposed libc functions
 * are (FL_EXPORT). */
#ifndef FAULTLINE_PRELOAD_H
#define FAULTLINE_PRELOAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "harness/probe/preload/inject_spec.h"

#define FL_EXPORT __attribute__((visibility("default")))
#define FL_HIDDEN __attribute__((visibility("hidden"))) /* on declarations: no GOT load */
#define FL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FL_PATH_MAX 4096

/* ---- real.c: the next definition of an interposed function ---- */

typedef void (*fl_fn)(void);
/* dlsym(RTLD_NEXT, name), resolved once into *slot. NULL while a resolution
 * is already running on this thread (dlsym itself may open files): the caller
 * then makes the raw system call. */
fl_fn fl_next(fl_fn *slot, const char *name);
/* The real `name` as a `type`, through the slot s_<name>. */
#define FL_REAL(type, name) ((type)fl_next(&s_##name, #name))

/* ---- events.c: rank, event file, JSON lines ---- */

/* $FAULTLINE_RANK (set for spawn-started ranks), else $RANK; -1 when neither.
 * A found rank is cached until fork; an absent one is looked up again. */
int fl_rank(void);
void fl_rank_reset_after_fork(void);
/* Whether this process has somewhere to write events. */
int fl_events_enabled(void);

/* A fixed-capacity JSON line: no allocation, usable in a signal handler. */
struct fl_line {
  char *buf;
  size_t cap, len;
};
void fl_line_raw(struct fl_line *b, const char *s);
void fl_line_num(struct fl_line *b, long long v);
void fl_line_hex(struct fl_line *b, uint64_t v, int width);
void fl_line_str(struct fl_line *b, const char *s); /* a JSON string; NULL -> null */
void fl_line_key(struct fl_line *b, const char *key); /* ,"key": */
/* {"t":..,"rank":R,"pid":P,"ev":"EV" */
void fl_line_head(struct fl_line *b, int rank, const char *ev);
/* Closes the line and appends it to the events file with one write(2):
 * open(O_APPEND), write, close, all raw system calls, errno preserved.
 * Async-signal-safe. */
void fl_emit(struct fl_line *b, int rank);

/* Canonical path of an open descriptor (/proc/self/fd); 0 when unknown. */
int fl_fd_path(int fd, char *buf, size_t cap);
/* Absolute, lexically normalised form of `path` relative to dirfd. */
int fl_abs_path(int dirfd, const char *path, char *buf, size_t cap);
/* Files that are the harness's, not the program's: the run's ranks/ and
 * launcher/ trees (events, logs, error files), /dev, /proc, /sys, and
 * Python's __pycache__. Neither recorded nor faulted. */
int fl_is_excluded_path(const char *abs);
/* Caches the canonical run directories (symlinks resolved) at start-up. */
void fl_paths_init(void);

/* ---- file_open.c ---- */

/* "w", "a", "rw" for open(2) flags that can write; NULL for read-only. */
const char *fl_write_mode(int flags);
/* Records a successful open for writing as a file_open event, once per
 * path and mode in each process. `requested` is the name the program gave
 * (relative to dirfd): a name seen before costs no system call. */
void fl_record_open(int fd, int flags, int dirfd, const char *requested);
void fl_file_open_reset_after_fork(void);

/* ---- inject.c ---- */

#define FL_INJECT_READY 0x80000000u
extern FL_HIDDEN unsigned fl_inject_mask_; /* bit per enum fl_inject_call, plus FL_INJECT_READY */
unsigned fl_inject_init(void);
/* Whether any rule names `call`: the one test every interposed call makes. */
static inline int fl_inject_wanted(int call) {
  unsigned m = __atomic_load_n(&fl_inject_mask_, __ATOMIC_ACQUIRE);
  if (FL_UNLIKELY(!(m & FL_INJECT_READY))) m = fl_inject_init();
  return (m >> call) & 1u;
}
/* Each returns the errno to fail the call with, or 0 to let it run; a
 * failure is announced as a `fault` event. `fn` is the interposed function. */
int fl_inject_fd(int call, const char *fn, int fd);
int fl_inject_open(const char *fn, int dirfd, const char *path, int flags);
int fl_inject_connect(const struct sockaddr *addr, socklen_t len);
void fl_inject_reset_after_fork(void);

/* ---- crash.c ---- */

/* Handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT where the program has
 * none, in processes of a faultline run. */
void fl_crash_arm(void);
void fl_crash_reset_after_fork(void);

#endif /* FAULTLINE_PRELOAD_H */
