// Child processes in tests: the one posix_spawn of tests/.
#include "tests/support/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "tests/support/files.h"

extern char** environ;

namespace faultline::testing {

std::vector<std::string> environmentWith(const std::map<std::string, std::string>& set,
                                         bool (*drop)(std::string_view key)) {
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string_view kv = *e;
    const std::string_view key = kv.substr(0, kv.find('='));
    if (set.count(std::string(key)) || (drop && drop(key))) continue;
    out.emplace_back(kv);
  }
  for (const auto& [k, v] : set) out.push_back(k + "=" + v);
  return out;
}

bool Outcome::exited() const { return started() && status != -1 && WIFEXITED(status); }

int Outcome::code() const { return exited() ? WEXITSTATUS(status) : -1; }

int Outcome::signal() const { return started() && status != -1 && WIFSIGNALED(status) ? WTERMSIG(status) : 0; }

std::string Outcome::str() const {
  if (!started()) return std::string("not started: ") + std::strerror(spawn_error);
  std::string s;
  if (exited()) s = "exited " + std::to_string(code());
  else if (signal() != 0) s = std::string("killed by ") + strsignal(signal());
  else s = "status " + std::to_string(status);
  return timed_out ? "timed out (" + s + ")" : s;
}

pid_t spawnChild(const SpawnOptions& opts, int* spawn_error) {
  std::vector<std::string> args = opts.argv;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envs;
  std::vector<char*> envp;
  if (opts.env) {
    envs = *opts.env;
    for (auto& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (opts.stdout_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, opts.stdout_fd, 1);
  } else if (!opts.stdout_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, opts.stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (opts.stderr_to_stdout) {
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  } else if (!opts.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, 2, opts.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all;
  sigfillset(&all);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = args.empty() ? EINVAL
                              : ::posix_spawn(&pid, args[0].c_str(), &fa, &attr, argv.data(),
                                              opts.env ? envp.data() : environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (spawn_error) *spawn_error = rc;
  if (rc != 0) {
    ADD_FAILURE() << "posix_spawn " << (args.empty() ? "(no argv)" : args[0]) << " failed: " << std::strerror(rc);
    return -1;
  }
  return pid;
}

Outcome waitChild(pid_t pid, std::optional<std::chrono::milliseconds> limit) {
  Outcome o;
  if (pid <= 0) {
    o.spawn_error = ESRCH;
    return o;
  }
  rusage ru{};
  pid_t got = 0;
  if (limit) {
    const bool ended = waitFor([&] { return (got = ::wait4(pid, &o.status, WNOHANG, &ru)) != 0; }, *limit);
    if (!ended) {
      o.timed_out = true;
      ::kill(pid, SIGKILL);
      got = ::wait4(pid, &o.status, 0, &ru);
    }
  } else {
    do {
      got = ::wait4(pid, &o.status, 0, &ru);
    } while (got < 0 && errno == EINTR);
  }
  EXPECT_EQ(got, pid) << "wait4(" << pid << "): " << std::strerror(errno);
  if (got != pid) o.status = -1;
  o.maxrss_kb = ru.ru_maxrss;
  return o;
}

Outcome runIntoClosedPipe(SpawnOptions opts, size_t read_bytes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    Outcome o;
    o.spawn_error = errno;
    ADD_FAILURE() << "pipe2 failed: " << std::strerror(o.spawn_error);
    return o;
  }
  opts.stdout_fd = fds[1];
  int spawn_error = 0;
  const pid_t pid = spawnChild(opts, &spawn_error);
  ::close(fds[1]);
  char buf[256];
  size_t got = 0;
  while (got < read_bytes) {
    const ssize_t n = ::read(fds[0], buf, std::min(sizeof buf, read_bytes - got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fds[0]);
  if (pid < 0) {
    Outcome o;
    o.spawn_error = spawn_error ? spawn_error : EINVAL;
    return o;
  }
  return waitChild(pid);
}

Outcome runChild(const SpawnOptions& opts, std::optional<std::chrono::milliseconds> limit, bool capture) {
  int err = 0;
  const pid_t pid = spawnChild(opts, &err);
  Outcome o;
  if (pid < 0) {
    o.spawn_error = err;
    return o;
  }
  o = waitChild(pid, limit);
  if (capture) {
    if (!opts.stdout_path.empty()) o.out = readFile(opts.stdout_path);
    if (!opts.stderr_path.empty() && !opts.stderr_to_stdout) o.err = readFile(opts.stderr_path);
  }
  return o;
}

}  // namespace faultline::testing
