/* faultline probe: the C ABI a trainer links to write faultline events
 * (CONTRACT.md section 3) to $FAULTLINE_EVENTS or $FAULTLINE_EVENTS_DIR/$RANK/events.jsonl.
 *
 * Every call is a no-op when neither variable is set, and never fails the
 * caller: an event that cannot be written is dropped. Each event is one
 * write() of one complete line on an O_APPEND descriptor, so concurrent
 * writers and crashes never leave a torn line. Thread-safe and
 * async-signal-safe for fl_probe_error_signal (used by the crash handlers).
 */
#ifndef FAULTLINE_PROBE_H
#define FAULTLINE_PROBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the event file named by the environment; reads RANK for the rank
 * field. Called implicitly by the first event; returns 1 if events are being
 * written, 0 if the probe is a no-op. */
int fl_probe_init(void);
int fl_probe_active(void);
/* Overrides the rank read from $RANK (e.g. a spawn-style trainer). */
void fl_probe_set_rank(int rank);
/* Nanoseconds since the Unix epoch (CLOCK_REALTIME), the `t` of every event. */
int64_t fl_probe_now_ns(void);

void fl_probe_start(int world_size, const char *backend, const char *device);
/* Before joining the store and building the process group: a peer that
 * exits before its own pg_init_begin left this rank waiting at the rendezvous.
 * `backend` may be NULL. */
void fl_probe_pg_init_begin(const char *backend);
void fl_probe_pg_init(const char *backend);
void fl_probe_pg_destroy(const char *backend);
void fl_probe_step_begin(int64_t step, int64_t epoch);
void fl_probe_step_end(int64_t step, int64_t epoch);
void fl_probe_collective_begin(const char *op, int64_t seq, int64_t numel, const char *dtype);
/* As fl_probe_collective_begin, with the call site in the trainer's code
 * ("train.cc:42", e.g. from __FILE__/__LINE__ or std::source_location): a
 * mismatch or hang shows each side's site. NULL or "" writes none. */
void fl_probe_collective_begin_at(const char *op, int64_t seq, int64_t numel, const char *dtype,
                                  const char *site);
void fl_probe_collective_end(const char *op, int64_t seq, int64_t numel, const char *dtype);
/* `what` is params, grads or data_order; the hash is written as 16 hex digits. */
void fl_probe_fingerprint(const char *what, int64_t step, uint64_t hash);
/* `indices` (n of them) is written only when count <= 4096; pass NULL to omit. */
void fl_probe_samples(int64_t epoch, int64_t count, uint64_t hash, int64_t first, int64_t last,
                      const int64_t *indices, size_t n);
/* `scope` is "local" or "global". */
void fl_probe_metric(const char *name, double value, const char *scope, int64_t step);
/* `mode` is "w", "a" or "rw"; relative paths are made absolute. */
void fl_probe_file_open(const char *path, const char *mode);
void fl_probe_fault(const char *kind, int64_t step);
/* `stack` holds n frames (may be NULL); file may be NULL and line 0 when unknown. */
void fl_probe_error(const char *kind, const char *type, const char *message, const char *file,
                    int line, const char *const *stack, size_t n);
void fl_probe_exit(int code);

/* Order-independent hash of a set of sample indices (sum of mixed values):
 * two ranks' sets can be compared without shipping the indices. */
uint64_t fl_probe_hash_indices(const int64_t *indices, size_t n);
/* FNV-1a 64 over bytes, chainable through `seed` (pass 0 to start). */
uint64_t fl_probe_hash_bytes(const void *data, size_t size, uint64_t seed);

/* Opt-in: handlers for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, and (from
 * C++) a std::terminate handler, that write an `error` event with the signal
 * or exception type, what() and a symbolised native backtrace, then re-raise
 * with the default action so the exit status is unchanged. It also records
 * the status a call of exit() (or a return from main) asks for, as an `exit`
 * event, before the static destructors run: a crash on the way out (a thread
 * still calling into a library being torn down) no longer hides it.
 * fl_probe_exit and this record write one `exit` event in all. Idempotent. */
void fl_probe_install_crash_handlers(void);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_PROBE_H */
