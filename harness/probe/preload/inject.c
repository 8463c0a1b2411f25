/* System-call fault injection, libfiu-style: FAULTLINE_INJECT names calls that
 * fail with an errno, in which rank, after how many successes. Each injected
 * failure is announced as a `fault` event, so the record says what was done. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness/probe/preload/preload.h"

unsigned fl_inject_mask_;

static struct fl_inject_rule g_rules[FL_INJECT_MAX_RULES];
static int g_nrules;
static long long g_matched[FL_INJECT_MAX_RULES];   /* calls each rule matched, this process */
static long long g_announced[FL_INJECT_MAX_RULES]; /* fault events written, this process */
static int g_state;                                /* 0 unread, 1 parsing, 2 ready */
static int g_attempt;                              /* the launcher's attempt: TORCHELASTIC_RESTART_COUNT */

/* A program stuck retrying a failed call must not fill the events file. */
enum { kMaxAnnounced = 100 };

static void complain(const char *text, const struct fl_inject_error *err) {
  char buf[1024];
  struct fl_line b = {buf, sizeof buf - 2, 0};
  fl_line_raw(&b, "faultline preload: bad FAULTLINE_INJECT ");
  fl_line_str(&b, text);
  fl_line_raw(&b, " at character ");
  fl_line_num(&b, err->offset + 1);
  fl_line_raw(&b, ": ");
  fl_line_raw(&b, err->message);
  fl_line_raw(&b, "; no faults injected\n");
  if (b.len > b.cap) {
    b.len = b.cap;
    buf[b.len - 1] = '\n';
  }
  const int saved = errno;
  syscall(SYS_write, 2, buf, b.len);
  errno = saved;
}

unsigned fl_inject_init(void) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&g_state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* Being parsed (by another thread, or below us on this one): this call
     * runs uninjected. */
    return __atomic_load_n(&fl_inject_mask_, __ATOMIC_ACQUIRE);
  }
  const char *text = getenv("FAULTLINE_INJECT");
  struct fl_inject_error err;
  int n = fl_inject_parse(text, g_rules, FL_INJECT_MAX_RULES, &err);
  if (n < 0) {
    complain(text, &err);
    n = 0;
  }
  const char *restarts = getenv("TORCHELASTIC_RESTART_COUNT");
  g_attempt = restarts ? atoi(restarts) : 0;
  unsigned mask = FL_INJECT_READY;
  for (int i = 0; i < n; ++i) {
    /* A rule for another attempt is none in this process. */
    if (g_rules[i].attempt >= 0 && g_rules[i].attempt != g_attempt) g_rules[i].call = FL_CALL_COUNT;
    else mask |= 1u << g_rules[i].call;
  }
  g_nrules = n;
  __atomic_store_n(&fl_inject_mask_, mask, __ATOMIC_RELEASE);
  __atomic_store_n(&g_state, 2, __ATOMIC_RELEASE);
  return mask;
}

/* Counting is per process: a forked child starts from zero. */
void fl_inject_reset_after_fork(void) {
  memset(g_matched, 0, sizeof g_matched);
  memset(g_announced, 0, sizeof g_announced);
}

static void announce(int i, int rank, const char *fn, const char *key, const char *target, long long nth) {
  if (__atomic_add_fetch(&g_announced[i], 1, __ATOMIC_RELAXED) > kMaxAnnounced) return;
  const struct fl_inject_rule *r = &g_rules[i];
  char buf[FL_PATH_MAX + 1024];
  struct fl_line b = {buf, sizeof buf, 0};
  fl_line_head(&b, rank, "fault");
  fl_line_key(&b, "kind");
  fl_line_str(&b, "syscall");
  fl_line_key(&b, "step");
  fl_line_raw(&b, "null"); /* a system call belongs to no training step */
  fl_line_key(&b, "call");
  fl_line_str(&b, fn);
  fl_line_key(&b, "errno");
  fl_line_str(&b, fl_inject_errno_name(r->err));
  fl_line_key(&b, "rule");
  fl_line_str(&b, r->text);
  if (target) {
    fl_line_key(&b, key);
    fl_line_str(&b, target);
  }
  fl_line_key(&b, "nth");
  fl_line_num(&b, nth);
  fl_emit(&b, rank);
}

/* The first rule that matches and is due fails the call. */
static int decide(int call, int rank, const char *fn, const char *key, const char *target) {
  for (int i = 0; i < g_nrules; ++i) {
    const struct fl_inject_rule *r = &g_rules[i];
    if (r->call != call || (r->rank >= 0 && r->rank != rank)) continue;
    if (r->glob[0] && (!target || fnmatch(r->glob, target, 0) != 0)) continue;
    const long long n = __atomic_add_fetch(&g_matched[i], 1, __ATOMIC_RELAXED);
    if (n <= r->after || (r->count > 0 && n > r->after + r->count)) continue;
    announce(i, rank, fn, key, target, n - r->after);
    /* Killed in the call, as the OOM killer or a preempted node kills a rank
     * halfway through writing its checkpoint: the write never happens. */
    if (r->err == FL_INJECT_KILL) syscall(SYS_kill, syscall(SYS_getpid), SIGKILL);
    return r->err;
  }
  return 0;
}

/* Whether a rule could fail `call` in this rank: checked before any system
 * call, so ranks a rule does not name pay nothing. */
static int ruleFor(int call, int rank) {
  for (int i = 0; i < g_nrules; ++i) {
    if (g_rules[i].call == call && (g_rules[i].rank < 0 || g_rules[i].rank == rank)) return 1;
  }
  return 0;
}

/* Rules apply in processes that have a rank: a launcher agent keeps working. */
int fl_inject_fd(int call, const char *fn, int fd) {
  /* stdin/stdout/stderr stay untouched: a failing stderr would hide the very
   * error the run is about. */
  if (fd <= 2) return 0;
  const int rank = fl_rank();
  if (rank < 0 || !ruleFor(call, rank)) return 0;
  const int saved = errno;
  int result = 0;
  struct stat st;
  /* Regular files only: sockets and pipes carry the collectives and the logs. */
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char path[FL_PATH_MAX];
    const int have = fl_fd_path(fd, path, sizeof path);
    if (!have || !fl_is_excluded_path(path)) result = decide(call, rank, fn, "path", have ? path : NULL);
  }
  errno = saved;
  return result;
}

int fl_inject_open(const char *fn, int dirfd, const char *path, int flags) {
  if (!fl_write_mode(flags) || !path) return 0;
  const int rank = fl_rank();
  if (rank < 0 || !ruleFor(FL_CALL_OPEN, rank)) return 0;
  const int saved = errno;
  char abs[FL_PATH_MAX];
  const char *target = fl_abs_path(dirfd, path, abs, sizeof abs) ? abs : path;
  const int result = fl_is_excluded_path(target) ? 0 : decide(FL_CALL_OPEN, rank, fn, "path", target);
  errno = saved;
  return result;
}

int fl_inject_connect(const struct sockaddr *addr, socklen_t len) {
  if (!addr) return 0;
  const int rank = fl_rank();
  if (rank < 0 || !ruleFor(FL_CALL_CONNECT, rank)) return 0;
  const int saved = errno;
  char text[INET6_ADDRSTRLEN + 16];
  struct fl_line b = {text, sizeof text - 1, 0};
  char ip[INET6_ADDRSTRLEN];
  int result = 0;
  /* TCP/IP only: local sockets (nscd, syslog, X) are not the network. */
  if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)addr;
    if (inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip)) {
      fl_line_raw(&b, ip);
      fl_line_raw(&b, ":");
      fl_line_num(&b, ntohs(in->sin_port));
    }
  } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)addr;
    if (inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip)) {
      fl_line_raw(&b, "[");
      fl_line_raw(&b, ip);
      fl_line_raw(&b, "]:");
      fl_line_num(&b, ntohs(in6->sin6_port));
    }
  }
  if (b.len > 0 && b.len <= b.cap) {
    text[b.len] = '\0';
    result = decide(FL_CALL_CONNECT, rank, "connect", "addr", text);
  }
  errno = saved;
  return result;
}
