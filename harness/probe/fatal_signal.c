/* Fatal signals as an error event names them. */
#include "harness/probe/fatal_signal.h"

const char *fl_fatal_signal_type(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "SIGABRT";
  }
}

const char *fl_fatal_signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "segmentation fault";
    case SIGBUS: return "bus error";
    case SIGFPE: return "floating point exception";
    case SIGILL: return "illegal instruction";
    default: return "aborted";
  }
}

int fl_fatal_signal_has_address(int sig, const siginfo_t *info) {
  return info && info->si_code > 0 && (sig == SIGSEGV || sig == SIGBUS);
}
