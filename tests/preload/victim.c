/* A plain C program for the interposer tests: it knows nothing of faultline.
 * Each argument is one action, run in order; results go to stdout, one line
 * each, so a test can check what the program itself saw:
 *   open-w:P open-a:P open-rw:P open-r:P openat-w:P creat:P fopen-w:P fopen-a:P fopen-r:P
 *   errno-keep:P     open P for writing with errno preset; prints the errno after
 *   errno-fail:P     open a missing P for reading; prints the errno
 *   write:P:N        open P, write(2) N times; prints "write I ok" or "write I ERRNO"
 *   pwrite:P fsync:P fdatasync:P     one call on P (opened for writing)
 *   stdout-write     write(2) to fd 1
 *   connect:PORT     connect to 127.0.0.1:PORT; prints "connect ok" or "connect ERRNO"
 *   threads:DIR:T:N  T threads each open N distinct files in DIR for writing
 *   fork:RANK:P      fork; the child sets RANK and opens P for writing; waits for it
 *   segv | abort     crash
 *   handler-segv     install a SIGSEGV handler that prints and _exit(42)s, then crash */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, int err) {
  printf("%s %s\n", what, err ? strerrorname_np(err) : "ok");
  fflush(stdout);
}

static int openFor(const char *path, int flags) {
  int fd = open(path, flags, 0644);
  say("open", fd < 0 ? errno : 0);
  return fd;
}

struct threadArg {
  const char *dir;
  int t, n;
};

static void *opener(void *p) {
  const struct threadArg *a = p;
  char path[4096];
  for (int i = 0; i < a->n; ++i) {
    snprintf(path, sizeof path, "%s/t%d-f%d.txt", a->dir, a->t, i);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) close(fd);
  }
  return NULL;
}

static void onSegv(int sig) {
  static const char msg[] = "handler ran\n";
  (void)!write(1, msg, sizeof msg - 1);
  _exit(42);
}

static int action(char *arg) {
  char *colon = strchr(arg, ':');
  char *param = colon ? colon + 1 : NULL;
  if (colon) *colon = '\0';
  const char *a = arg;
  int fd = -1;
  if (!strcmp(a, "open-w")) fd = openFor(param, O_WRONLY | O_CREAT | O_TRUNC);
  else if (!strcmp(a, "open-a")) fd = openFor(param, O_WRONLY | O_CREAT | O_APPEND);
  else if (!strcmp(a, "open-rw")) fd = openFor(param, O_RDWR | O_CREAT);
  else if (!strcmp(a, "open-r")) fd = openFor(param, O_RDONLY);
  else if (!strcmp(a, "openat-w")) {
    char dir[4096], base[4096];
    snprintf(dir, sizeof dir, "%s", param);
    snprintf(base, sizeof base, "%s", param);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    fd = openat(dfd, basename(base), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    say("openat", fd < 0 ? errno : 0);
    close(dfd);
  } else if (!strcmp(a, "creat")) {
    fd = creat(param, 0644);
    say("creat", fd < 0 ? errno : 0);
  } else if (!strncmp(a, "fopen-", 6)) {
    FILE *f = fopen(param, a + 6);
    say("fopen", f ? 0 : errno);
    if (f) fclose(f);
  } else if (!strcmp(a, "errno-keep")) {
    errno = EXDEV;
    fd = open(param, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("errno %s fd %s\n", strerrorname_np(errno), fd >= 0 ? "ok" : "bad");
  } else if (!strcmp(a, "errno-fail")) {
    fd = open(param, O_RDONLY);
    printf("errno %s\n", fd < 0 ? strerrorname_np(errno) : "none");
  } else if (!strcmp(a, "write")) {
    char *n = strrchr(param, ':');
    *n = '\0';
    fd = open(param, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0, count = atoi(n + 1); i < count; ++i) {
      char what[32];
      snprintf(what, sizeof what, "write %d", i);
      say(what, write(fd, "x\n", 2) == 2 ? 0 : errno);
    }
  } else if (!strcmp(a, "pwrite")) {
    fd = open(param, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    say("pwrite", pwrite(fd, "y\n", 2, 0) == 2 ? 0 : errno);
  } else if (!strcmp(a, "fsync")) {
    fd = open(param, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    say("fsync", fsync(fd) == 0 ? 0 : errno);
  } else if (!strcmp(a, "fdatasync")) {
    fd = open(param, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    say("fdatasync", fdatasync(fd) == 0 ? 0 : errno);
  } else if (!strcmp(a, "stdout-write")) {
    say("stdout-write", write(1, "", 0) == 0 ? 0 : errno);
  } else if (!strcmp(a, "connect")) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(param));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    say("connect", connect(s, (struct sockaddr *)&addr, sizeof addr) == 0 ? 0 : errno);
    close(s);
  } else if (!strcmp(a, "threads")) {
    char *p2 = strchr(param, ':');
    *p2 = '\0';
    char *p3 = strchr(p2 + 1, ':');
    *p3 = '\0';
    const int threads = atoi(p2 + 1), n = atoi(p3 + 1);
    pthread_t ts[64];
    struct threadArg args[64];
    for (int t = 0; t < threads && t < 64; ++t) {
      args[t] = (struct threadArg){param, t, n};
      pthread_create(&ts[t], NULL, opener, &args[t]);
    }
    for (int t = 0; t < threads && t < 64; ++t) pthread_join(ts[t], NULL);
    say("threads", 0);
  } else if (!strcmp(a, "fork")) {
    char *path = strchr(param, ':');
    *path++ = '\0';
    pid_t pid = fork();
    if (pid == 0) {
      setenv("RANK", param, 1);
      int cfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      _exit(cfd >= 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    say("fork", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : EIO);
  } else if (!strcmp(a, "segv")) {
    volatile int *p = NULL;
    *p = 1;
  } else if (!strcmp(a, "abort")) {
    abort();
  } else if (!strcmp(a, "handler-segv")) {
    signal(SIGSEGV, onSegv);
    volatile int *p = NULL;
    *p = 1;
  } else {
    fprintf(stderr, "victim: unknown action '%s'\n", a);
    return 2;
  }
  if (fd >= 0) close(fd);
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    int rc = action(argv[i]);
    if (rc) return rc;
  }
  return 0;
}
