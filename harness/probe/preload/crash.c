/* Fatal signals: an `error` event with a native backtrace, then death by the
 * same signal. Installed only where the program has no handler of its own; a
 * handler the program installs later (the probe's, faulthandler's) replaces
 * this one, so a crash is reported once. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/probe/fatal_signal.h"
#include "harness/probe/preload/preload.h"

static const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
static int g_reported;
static char g_altstack[1 << 16];
static char g_line[1 << 15]; /* the error event; one report per process */

/* "#0 0x7f.. fn+0x1c (/lib/x86_64-linux-gnu/libfoo.so+0x1234)", the probe's
 * frame format, which diagnosis reads. */
static void appendFrame(struct fl_line *b, int index, void *addr) {
  char frame[1024];
  struct fl_line f = {frame, sizeof frame - 1, 0};
  fl_line_raw(&f, "#");
  fl_line_num(&f, index);
  fl_line_raw(&f, " 0x");
  fl_line_hex(&f, (uintptr_t)addr, 12);
  Dl_info info;
  if (dladdr(addr, &info) != 0) {
    if (info.dli_sname) {
      fl_line_raw(&f, " ");
      fl_line_raw(&f, info.dli_sname);
      fl_line_raw(&f, "+0x");
      fl_line_hex(&f, (uintptr_t)addr - (uintptr_t)info.dli_saddr, 4);
    }
    if (info.dli_fname) {
      fl_line_raw(&f, " (");
      fl_line_raw(&f, info.dli_fname);
      fl_line_raw(&f, "+0x");
      fl_line_hex(&f, (uintptr_t)addr - (uintptr_t)info.dli_fbase, 8);
      fl_line_raw(&f, ")");
    }
  }
  frame[f.len < f.cap ? f.len : f.cap] = '\0';
  if (index) fl_line_raw(b, ",");
  fl_line_str(b, frame);
}

/* Where the signal struck, from the signal's saved context; 0 where unknown. */
static uintptr_t faultingPc(const void *ucontext) {
  if (!ucontext) return 0;
  const ucontext_t *uc = ucontext;
#if defined(__x86_64__)
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  return (uintptr_t)uc->uc_mcontext.pc;
#else
  (void)uc;
  return 0;
#endif
}

static void report(int sig, const siginfo_t *info, const void *ucontext) {
  const int rank = fl_rank();
  if (rank < 0) return;
  struct fl_line b = {g_line, sizeof g_line, 0};
  fl_line_head(&b, rank, "error");
  fl_line_key(&b, "kind");
  fl_line_str(&b, "signal");
  fl_line_key(&b, "type");
  fl_line_str(&b, fl_fatal_signal_type(sig));
  char msg[96];
  struct fl_line m = {msg, sizeof msg - 1, 0};
  fl_line_raw(&m, fl_fatal_signal_text(sig));
  if (fl_fatal_signal_has_address(sig, info)) {
    fl_line_raw(&m, " at address 0x");
    fl_line_hex(&m, (uintptr_t)info->si_addr, 12);
  }
  msg[m.len < m.cap ? m.len : m.cap] = '\0';
  fl_line_key(&b, "message");
  fl_line_str(&b, msg);
  fl_line_key(&b, "file");
  fl_line_raw(&b, "null");
  fl_line_key(&b, "line");
  fl_line_raw(&b, "null");
  fl_line_key(&b, "stack");
  fl_line_raw(&b, "[");
  void *addrs[64];
  const int n = backtrace(addrs, 64);
  Dl_info self;
  const int have_self = dladdr(&g_reported, &self) != 0; /* any object of ours names the library */
  /* The handler's own frames and the kernel's signal trampoline say nothing
   * about the crash: the stack starts at the faulting frame. A sanitizer
   * runtime's frame may come before ours (backtrace() is intercepted in ASan
   * builds), so the faulting pc from the signal context is looked for among
   * the top frames; without it, everything up to the last of our own frames
   * near the top is skipped. */
  int first = 0;
  const uintptr_t pc = faultingPc(ucontext);
  int at_pc = -1;
  for (int i = 0; pc && i < n && i < 16 && at_pc < 0; ++i) {
    if ((uintptr_t)addrs[i] == pc) at_pc = i;
  }
  if (at_pc >= 0) {
    first = at_pc;
  } else {
    Dl_info where;
    for (int i = 0; have_self && i < n && i < 8; ++i) {
      if (dladdr(addrs[i], &where) != 0 && where.dli_fbase == self.dli_fbase) first = i + 1;
    }
  }
  int out = 0;
  for (int i = first; i < n && b.len + 1100 < b.cap; ++i) appendFrame(&b, out++, addrs[i]);
  fl_line_raw(&b, "]");
  fl_line_key(&b, "source");
  fl_line_str(&b, "preload");
  fl_emit(&b, rank);
}

static void onFatalSignal(int sig, siginfo_t *info, void *ucontext) {
  const int saved = errno;
  if (!__atomic_exchange_n(&g_reported, 1, __ATOMIC_SEQ_CST)) report(sig, info, ucontext);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  errno = saved;
  /* Die by the same signal, so the exit status the parent sees is unchanged:
   * a fault re-faults on return; a kill(), raise() or abort() is re-raised. */
  if (info == NULL || info->si_code <= 0) raise(sig);
}

static int inRun(void) {
  const char *vars[] = {"RANK", "FAULTLINE_RANK", "FAULTLINE_EVENTS", "FAULTLINE_EVENTS_DIR"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
    const char *v = getenv(vars[i]);
    if (v && *v) return 1;
  }
  return 0;
}

void fl_crash_arm(void) {
  if (!inRun()) return;
  /* backtrace() loads libgcc_s on first use, which allocates: now, not in
   * the handler. */
  void *warm[2];
  backtrace(warm, 2);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = onFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  int installed = 0;
  for (size_t i = 0; i < sizeof kSignals / sizeof kSignals[0]; ++i) {
    struct sigaction old;
    if (sigaction(kSignals[i], NULL, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue; /* the program's own */
    if (sigaction(kSignals[i], &sa, NULL) == 0) installed = 1;
  }
  /* An alternate stack, so a stack overflow is reported too; only where the
   * program has none. */
  stack_t cur;
  if (installed && sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = g_altstack;
    ss.ss_size = sizeof g_altstack;
    sigaltstack(&ss, NULL);
  }
}

void fl_crash_reset_after_fork(void) { __atomic_store_n(&g_reported, 0, __ATOMIC_SEQ_CST); }
