/* Finding the real libc functions behind the interposers, lazily: an
 * interposed call can come before this library's constructor (from another
 * library's constructor) or from inside dlsym itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "harness/probe/preload/preload.h"

/* initial-exec: a preloaded library is in the static TLS block, and this
 * model never calls __tls_get_addr (which may allocate). */
static __thread int tl_resolving __attribute__((tls_model("initial-exec")));

fl_fn fl_next(fl_fn *slot, const char *name) {
  fl_fn fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (fn) return fn;
  if (tl_resolving) return NULL;
  tl_resolving = 1;
  void *p = dlsym(RTLD_NEXT, name);
  tl_resolving = 0;
  if (!p) return NULL;
  /* ISO C has no object-to-function pointer conversion; POSIX guarantees
   * dlsym's result is one, so copy the representation. */
  memcpy(&fn, &p, sizeof fn);
  __atomic_store_n(slot, fn, __ATOMIC_RELEASE);
  return fn;
}
