// clone/exec with cgroup placement, pdeathsig and files for stdout/stderr.
#include "harness/launch/process_spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FL_HAS_TSAN 1
#endif
#endif
#ifndef FL_HAS_TSAN
#define FL_HAS_TSAN 0
#endif

namespace faultline::launch {
namespace {

// What the child reports through the exec pipe when a step fails.
struct ChildFailure {
  int step;
  int err;
};

enum Step { kStepCgroup = 1, kStepPdeath, kStepPgid, kStepStdio, kStepCwd, kStepExec };

const char* stepName(int step) {
  switch (step) {
    case kStepCgroup: return "write to cgroup.procs";
    case kStepPdeath: return "prctl(PR_SET_PDEATHSIG)";
    case kStepPgid: return "setpgid";
    case kStepStdio: return "redirect stdio";
    case kStepCwd: return "chdir";
    case kStepExec: return "execve";
  }
  return "child setup";
}

// The child runs in the parent's memory until execve. It makes raw system
// calls only: a libc wrapper that a sanitizer runtime (or any interposer)
// replaces would update that runtime's state, which the child shares with
// the parent (TSan's and ASan's sigaction interceptors keep the program's
// handlers in a table of their own: a child resetting its dispositions
// through them would reset the harness's). syscall(2) is not intercepted.
// Returns the result, or -errno.
// Not instrumented either: the child's stores would be attributed to the
// suspended parent thread, and ASan warns about a noreturn call on a stack it
// does not know.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || defined(__clang__)
#define FL_CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined")))
#else
#define FL_CHILD_CODE
#endif

FL_CHILD_CODE long rawCall(long nr, long a = 0, long b = 0, long c = 0, long d = 0) {
  const long r = ::syscall(nr, a, b, c, d);
  return r == -1 ? -errno : r;
}

[[noreturn]] FL_CHILD_CODE void childExit(int code) {
  for (;;) rawCall(SYS_exit_group, code);
}

[[noreturn]] FL_CHILD_CODE void childFail(int fd, int step, long ret) {
  ChildFailure f{step, static_cast<int>(-ret)};
  (void)rawCall(SYS_write, fd, reinterpret_cast<long>(&f), sizeof f);
  childExit(127);
}

// What the child needs, prepared before clone: after it, only raw system calls.
struct ChildArgs {
  const SpawnSpec* spec;
  const Placement* placement;
  char** argv;
  char** envp;
  int out_fd, err_fd, null_fd, report_fd;
  pid_t parent;
};

constexpr size_t kChildStackBytes = 64 * 1024;

// The kernel's struct sigaction for rt_sigaction (not libc's).
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  unsigned long mask;
};

// Runs in the parent's memory on its own stack, until execve or exit.
FL_CHILD_CODE int childMain(void* p) {
  const ChildArgs& a = *static_cast<const ChildArgs*>(p);
  const int report = a.report_fd;
  long ret;
  // Into the run's cgroup first, so that everything this process ever
  // forks is contained from its first instruction on.
  if (a.placement->cgroup_procs_fd >= 0 &&
      (ret = rawCall(SYS_write, a.placement->cgroup_procs_fd, reinterpret_cast<long>("0"), 1)) != 1) {
    childFail(report, kStepCgroup, ret < 0 ? ret : -EIO);
  }
  if (a.placement->pdeath_signal != 0) {
    if ((ret = rawCall(SYS_prctl, PR_SET_PDEATHSIG, a.placement->pdeath_signal)) != 0) childFail(report, kStepPdeath, ret);
    if (rawCall(SYS_getppid) != a.parent) childExit(127);  // the harness died before prctl took effect
  }
  if (a.placement->new_process_group && (ret = rawCall(SYS_setpgid, 0, 0)) != 0) childFail(report, kStepPgid, ret);
  // The harness handles SIGINT/SIGTERM/SIGCHLD; give the child default
  // dispositions, and only then an empty mask (signals are blocked until here).
  KernelSigaction dfl{};
  dfl.handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) rawCall(SYS_rt_sigaction, s, reinterpret_cast<long>(&dfl), 0, sizeof(unsigned long));
  }
  unsigned long none = 0;
  rawCall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&none), 0, sizeof none);
  const int stdio[3][2] = {{a.null_fd, 0}, {a.out_fd, 1}, {a.err_fd, 2}};
  for (const auto& fd : stdio) {
    // dup3 (dup2 is x86-only as a system call) refuses from == to; then only
    // the close-on-exec flag has to go.
    ret = fd[0] == fd[1] ? rawCall(SYS_fcntl, fd[1], F_SETFD, 0) : rawCall(SYS_dup3, fd[0], fd[1], 0);
    if (ret < 0) childFail(report, kStepStdio, ret);
  }
  if (!a.spec->cwd.empty() && (ret = rawCall(SYS_chdir, reinterpret_cast<long>(a.spec->cwd.c_str()))) != 0) {
    childFail(report, kStepCwd, ret);
  }
  // Nothing of the harness leaks into the rank (the guardian pipe above all:
  // a rank holding it would keep the guardian from seeing the harness die).
  if (report > 3) rawCall(SYS_close_range, 3, report - 1, 0);
  rawCall(SYS_close_range, report + 1, ~0U, 0);
  ret = rawCall(SYS_execve, reinterpret_cast<long>(a.spec->executable.c_str()), reinterpret_cast<long>(a.argv),
                reinterpret_cast<long>(a.envp));
  childFail(report, kStepExec, ret);
}

}  // namespace

Result<std::string> resolveExecutable(const std::string& name, const std::string& path_var) {
  auto executable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return fail(ErrorCode::kBadUsage, "empty command");
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) return fail(ErrorCode::kBadUsage, "not an executable file", name);
    if (name[0] == '/') return name;
    char buf[4096];
    return std::string(::getcwd(buf, sizeof buf) ? buf : ".") + "/" + name;
  }
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    // An empty PATH entry means the current directory.
    std::string candidate = end > start ? path_var.substr(start, end - start) : std::string(".");
    candidate.append("/").append(name);
    if (executable(candidate)) {
      if (candidate[0] != '/') {
        char buf[4096];
        candidate = std::string(::getcwd(buf, sizeof buf) ? buf : ".") + "/" + candidate;
      }
      return candidate;
    }
    start = end + 1;
  }
  return fail(ErrorCode::kBadUsage, "command not found in PATH", name);
}

Result<pid_t> spawnProcess(const SpawnSpec& spec, const Placement& placement) {
  auto pending = startSpawn(spec, placement);
  if (!pending) return tl::unexpected(pending.error());
  return finishSpawn(*pending);
}

Result<PendingSpawn> startSpawn(const SpawnSpec& spec, const Placement& placement) {
  // Everything the child touches is prepared before clone: after it only
  // async-signal-safe calls are allowed.
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  // Copies of this process's own stdio, for a child that keeps it (a closed
  // one becomes /dev/null); the child dups them onto 0, 1 and 2.
  auto ownStdio = [](int fd, int flags) {
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return copy >= 0 ? copy : ::open("/dev/null", flags | O_CLOEXEC);
  };
  int out_fd = spec.stdout_fd >= 0  ? ::fcntl(spec.stdout_fd, F_DUPFD_CLOEXEC, 3)
               : spec.inherit_stdio ? ownStdio(STDOUT_FILENO, O_WRONLY)
                                    : ::open(spec.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) return fail(ErrorCode::kIo, std::string("open failed: ") + std::strerror(errno), spec.stdout_path);
  int err_fd = spec.stderr_fd >= 0                    ? ::fcntl(spec.stderr_fd, F_DUPFD_CLOEXEC, 3)
               : spec.inherit_stdio                   ? ownStdio(STDERR_FILENO, O_WRONLY)
               : spec.stderr_path == spec.stdout_path ? ::dup(out_fd)
                                                      : ::open(spec.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err_fd < 0) {
    int e = errno;
    ::close(out_fd);
    return fail(ErrorCode::kIo, std::string("open failed: ") + std::strerror(e), spec.stderr_path);
  }
  int null_fd = spec.inherit_stdio ? ownStdio(STDIN_FILENO, O_RDONLY) : ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int pipe_fds[2];
  if (null_fd < 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(out_fd);
    ::close(err_fd);
    if (null_fd >= 0) ::close(null_fd);
    return fail(ErrorCode::kSystem, std::string("pipe2 failed: ") + std::strerror(e));
  }
  ChildArgs args{&spec, &placement, argv.data(), envp.data(), out_fd, err_fd, null_fd, pipe_fds[1], ::getpid()};
  // The child borrows this process's memory until it execs (CLONE_VM |
  // CLONE_VFORK, as posix_spawn does): no page tables to copy and no
  // copy-on-write faults afterwards, which were most of the launch cost of
  // fork() on a VM. It runs on a stack of its own, and every signal stays
  // blocked until it has reset the dispositions, so no handler of the
  // harness ever runs in it.
  std::vector<char> stack(kChildStackBytes);
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
#if defined(__SANITIZE_THREAD__) || FL_HAS_TSAN
  // TSan intercepts clone() and treats the child as a forked process: in a
  // CLONE_VM child its after-fork reset runs on the harness's own runtime
  // state, after which the harness lost SIGCHLDs (ranks whose exit was never
  // seen). TSan builds fork instead; the exec pipe keeps the same semantics.
  const pid_t pid = ::fork();
  if (pid == 0) childMain(&args);
#else
  const pid_t pid = ::clone(childMain, stack.data() + stack.size(), CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
#endif
  const int clone_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    for (int fd : {out_fd, err_fd, null_fd, pipe_fds[0], pipe_fds[1]}) ::close(fd);
    return fail(ErrorCode::kSystem, std::string("clone failed: ") + std::strerror(clone_errno));
  }

  for (int fd : {out_fd, err_fd, null_fd, pipe_fds[1]}) ::close(fd);
  return PendingSpawn{pid, pipe_fds[0], spec.executable};
}

Result<pid_t> finishSpawn(PendingSpawn& pending) {
  ChildFailure f{};
  ssize_t n;
  do {
    n = ::read(pending.report_fd, &f, sizeof f);
  } while (n < 0 && errno == EINTR);
  ::close(pending.report_fd);
  pending.report_fd = -1;
  if (n == static_cast<ssize_t>(sizeof f)) {
    int status = 0;
    while (::waitpid(pending.pid, &status, 0) < 0 && errno == EINTR) {
    }
    return fail(ErrorCode::kSystem, std::string(stepName(f.step)) + " failed: " + std::strerror(f.err),
                pending.executable);
  }
  return pending.pid;
}

}  // namespace faultline::launch

namespace faultline::launch {

bool CommandResult::ok() const { return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

Result<CommandResult> runToCompletion(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                                      double timeout_s) {
  if (argv.empty()) return fail(ErrorCode::kBadUsage, "no command to run");
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp && *tmp ? tmp : "/tmp");
  std::string paths[2] = {dir + "/faultline-out-XXXXXX", dir + "/faultline-err-XXXXXX"};
  for (auto& path : paths) {
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return fail(ErrorCode::kSystem, std::string("mkstemp failed: ") + std::strerror(errno), path);
    ::close(fd);
  }
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    ::unlink(path.c_str());
    return text;
  };
  SpawnSpec spec;
  spec.executable = argv[0];
  spec.argv = argv;
  spec.env = env;
  spec.stdout_path = paths[0];
  spec.stderr_path = paths[1];
  Placement helper;  // dies with the harness
  helper.pdeath_signal = SIGKILL;
  auto pid = spawnProcess(spec, helper);
  if (!pid) {
    slurp(paths[0]);
    slurp(paths[1]);
    return tl::unexpected(pid.error());
  }
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  for (;;) {
    const pid_t r = ::waitpid(*pid, &result.wait_status, WNOHANG);
    if (r == *pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(*pid, SIGKILL);
      while (::waitpid(*pid, &result.wait_status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    ::usleep(2000);  // helpers of tens of milliseconds; polling leaves SIGCHLD to the caller
  }
  result.out = slurp(paths[0]);
  result.err = slurp(paths[1]);
  if (timed_out) {
    return fail(ErrorCode::kSystem, argv[0] + " timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s");
  }
  return result;
}

}  // namespace faultline::launch
