/* The data-path interposers: write, read, fsync, fdatasync, connect. Each is
 * the real call plus one load-and-test of the injection mask; the rest runs
 * only when FAULTLINE_INJECT names the call. */
/* Not _GNU_SOURCE: under it glibc declares connect() with a transparent
 * union, which a definition cannot match in ISO C. */
#define _LARGEFILE64_SOURCE
#define _DEFAULT_SOURCE
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "harness/probe/preload/preload.h"

/* Fails the call with the injected errno, if one is due. */
#define FL_MAYBE_FAIL_FD(call, fn, fd)                \
  do {                                                \
    if (FL_UNLIKELY(fl_inject_wanted(call))) {        \
      const int fl_e_ = fl_inject_fd(call, fn, fd);   \
      if (fl_e_) {                                    \
        errno = fl_e_;                                \
        return -1;                                    \
      }                                               \
    }                                                 \
  } while (0)

static fl_fn s_write, s_pwrite, s_pwrite64, s_writev, s_read, s_pread, s_pread64, s_readv, s_fsync, s_fdatasync,
    s_connect;

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec *, int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);
typedef int (*sync_fn)(int);
typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

FL_EXPORT ssize_t write(int fd, const void *buf, size_t n) {
  FL_MAYBE_FAIL_FD(FL_CALL_WRITE, "write", fd);
  const write_fn real = FL_REAL(write_fn, write);
  return real ? real(fd, buf, n) : syscall(SYS_write, fd, buf, n);
}

FL_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  FL_MAYBE_FAIL_FD(FL_CALL_WRITE, "pwrite", fd);
  const pwrite_fn real = FL_REAL(pwrite_fn, pwrite);
  return real ? real(fd, buf, n, off) : syscall(SYS_pwrite64, fd, buf, n, off);
}

FL_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
  FL_MAYBE_FAIL_FD(FL_CALL_WRITE, "pwrite64", fd);
  const pwrite_fn real = FL_REAL(pwrite_fn, pwrite64);
  return real ? real(fd, buf, n, off) : syscall(SYS_pwrite64, fd, buf, n, off);
}

FL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
  FL_MAYBE_FAIL_FD(FL_CALL_WRITE, "writev", fd);
  const writev_fn real = FL_REAL(writev_fn, writev);
  return real ? real(fd, iov, iovcnt) : syscall(SYS_writev, fd, iov, iovcnt);
}

FL_EXPORT ssize_t read(int fd, void *buf, size_t n) {
  FL_MAYBE_FAIL_FD(FL_CALL_READ, "read", fd);
  const read_fn real = FL_REAL(read_fn, read);
  return real ? real(fd, buf, n) : syscall(SYS_read, fd, buf, n);
}

FL_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
  FL_MAYBE_FAIL_FD(FL_CALL_READ, "pread", fd);
  const pread_fn real = FL_REAL(pread_fn, pread);
  return real ? real(fd, buf, n, off) : syscall(SYS_pread64, fd, buf, n, off);
}

FL_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
  FL_MAYBE_FAIL_FD(FL_CALL_READ, "pread64", fd);
  const pread_fn real = FL_REAL(pread_fn, pread64);
  return real ? real(fd, buf, n, off) : syscall(SYS_pread64, fd, buf, n, off);
}

FL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt) {
  FL_MAYBE_FAIL_FD(FL_CALL_READ, "readv", fd);
  const readv_fn real = FL_REAL(readv_fn, readv);
  return real ? real(fd, iov, iovcnt) : syscall(SYS_readv, fd, iov, iovcnt);
}

FL_EXPORT int fsync(int fd) {
  FL_MAYBE_FAIL_FD(FL_CALL_FSYNC, "fsync", fd);
  const sync_fn real = FL_REAL(sync_fn, fsync);
  return real ? real(fd) : (int)syscall(SYS_fsync, fd);
}

FL_EXPORT int fdatasync(int fd) {
  FL_MAYBE_FAIL_FD(FL_CALL_FDATASYNC, "fdatasync", fd);
  const sync_fn real = FL_REAL(sync_fn, fdatasync);
  return real ? real(fd) : (int)syscall(SYS_fdatasync, fd);
}

FL_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
  if (FL_UNLIKELY(fl_inject_wanted(FL_CALL_CONNECT))) {
    const int e = fl_inject_connect(addr, len);
    if (e) {
      errno = e;
      return -1;
    }
  }
  const connect_fn real = FL_REAL(connect_fn, connect);
  return real ? real(fd, addr, len) : (int)syscall(SYS_connect, fd, addr, len);
}
