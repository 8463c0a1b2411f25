/* How a fatal signal is named in an error event, one definition for the
 * probe's crash handlers (probe.cc) and the interposer's (preload/crash.c).
 * Plain C, async-signal-safe. */
#ifndef FAULTLINE_PROBE_FATAL_SIGNAL_H
#define FAULTLINE_PROBE_FATAL_SIGNAL_H

#include <signal.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The event's `type`: "SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL"; anything else "SIGABRT". */
const char *fl_fatal_signal_type(int sig);
/* The start of its `message`: "segmentation fault", ..., "aborted". */
const char *fl_fatal_signal_text(int sig);
/* Whether the message names a faulting address: only for a SIGSEGV or SIGBUS
 * the kernel raised (si_code > 0); after kill() or raise() (faulthandler
 * re-raising) si_addr holds the sender's pid. */
int fl_fatal_signal_has_address(int sig, const siginfo_t *info);

#ifdef __cplusplus
}
#endif

#endif
