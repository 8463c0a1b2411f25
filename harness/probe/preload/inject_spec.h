/* The FAULTLINE_INJECT grammar: which system calls fail, with which errno, in
 * which rank and when. One parser, in C, shared by the LD_PRELOAD interposer
 * (which injects) and the scenario validator (which checks `[fault] inject`
 * with file:line:col), so both read the same language.
 *
 *   FAULTLINE_INJECT = SPEC [";" SPEC]...
 *   SPEC = CALL ":" ERRNO [":" KEY "=" VALUE]...
 *   CALL  = write | read | fsync | fdatasync | open | connect
 *   ERRNO = ENOSPC | EIO | ECONNREFUSED | ... (a name, see fl_inject_errno_names),
 *           or SIGKILL: the process is killed in the call (a rank killed
 *           while it writes its checkpoint)
 *   KEY   = rank (R >= 0, or all / *), after (N >= 0 calls succeed first),
 *           count (K >= 1 calls fail, then calls succeed again; default: all),
 *           path (a glob over the file's absolute path; file calls only),
 *           addr (a glob over "IP:PORT"; connect only),
 *           attempt (K >= 0: only in the launcher's K-th attempt, read from
 *           TORCHELASTIC_RESTART_COUNT; default: every attempt)
 *
 * Pure: no allocation, no global state, no I/O; safe in a library constructor.
 */
#ifndef FAULTLINE_INJECT_SPEC_H
#define FAULTLINE_INJECT_SPEC_H

#ifdef __cplusplus
extern "C" {
#endif

enum fl_inject_call {
  FL_CALL_WRITE,     /* write, writev, pwrite, pwrite64 */
  FL_CALL_READ,      /* read, readv, pread, pread64 */
  FL_CALL_FSYNC,     /* fsync */
  FL_CALL_FDATASYNC, /* fdatasync */
  FL_CALL_OPEN,      /* open, openat, creat, fopen and their 64-bit forms, for writing */
  FL_CALL_CONNECT,   /* connect, IPv4 and IPv6 sockets */
  FL_CALL_COUNT
};

#define FL_INJECT_MAX_RULES 16
#define FL_INJECT_KILL (-9) /* ERRNO SIGKILL: no errno, the process dies in the call */
#define FL_INJECT_GLOB_MAX 256
#define FL_INJECT_TEXT_MAX 320

struct fl_inject_rule {
  int call;        /* enum fl_inject_call */
  int err;         /* the errno value to fail with; FL_INJECT_KILL: SIGKILL in the call */
  int rank;        /* -1: every rank */
  int attempt;     /* -1: every attempt */
  long long after; /* matching calls that succeed before the first failure */
  long long count; /* failures before calls succeed again; 0: no end */
  char glob[FL_INJECT_GLOB_MAX]; /* path= or addr=; empty: any */
  char text[FL_INJECT_TEXT_MAX]; /* the spec as written, for the fault event */
};

struct fl_inject_error {
  int offset;        /* byte offset into the text where the bad part starts */
  char message[384]; /* "unknown call 'wrte', expected one of: write, ..." */
};

/* Parses `text` into at most `max` rules. Returns the number of rules (0 for
 * an empty or all-blank text), or -1 with `err` filled: the offset of the bad
 * part and what was expected there. */
int fl_inject_parse(const char *text, struct fl_inject_rule *rules, int max, struct fl_inject_error *err);

/* "write", "connect", ...; NULL for an unknown value. */
const char *fl_inject_call_name(int call);
/* "ENOSPC", ...; NULL for an errno the grammar does not name. */
const char *fl_inject_errno_name(int err);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_INJECT_SPEC_H */
