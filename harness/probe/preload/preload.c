/* libfaultline_preload.so: start-up and fork. Everything else is lazy, so an
 * interposed call that comes before this constructor still works. */
#define _GNU_SOURCE
#include <pthread.h>

#include "harness/probe/preload/preload.h"

/* A forked child re-reads its rank (it may be given another one before it
 * writes) and counts files and injected calls afresh. */
static void afterForkInChild(void) {
  fl_rank_reset_after_fork();
  fl_file_open_reset_after_fork();
  fl_inject_reset_after_fork();
  fl_crash_reset_after_fork();
}

__attribute__((constructor)) static void preloadInit(void) {
  fl_paths_init();
  (void)fl_inject_wanted(FL_CALL_WRITE); /* parses FAULTLINE_INJECT: a bad spec is reported at start */
  pthread_atfork(NULL, NULL, afterForkInChild);
  fl_crash_arm();
}
