// ProcessOutcome and signal names.
#include "harness/model/outcome.h"

#include <sys/wait.h>

#include <array>
#include <csignal>
#include <utility>

namespace faultline {
namespace {

constexpr std::array<std::pair<int, const char*>, 31> kSignals{{
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGSTKFLT, "SIGSTKFLT"},
    {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},
    {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
    {SIGIO, "SIGIO"},     {SIGPWR, "SIGPWR"},       {SIGSYS, "SIGSYS"},
}};

}  // namespace

ProcessOutcome ProcessOutcome::fromWaitStatus(int status) {
  if (WIFEXITED(status)) return exited(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return killed(WTERMSIG(status), WCOREDUMP(status));
  return running();
}

std::optional<int> ProcessOutcome::exitCode() const {
  if (state_ == State::kExited) return value_;
  return std::nullopt;
}

std::optional<int> ProcessOutcome::signal() const {
  if (state_ == State::kKilled) return value_;
  return std::nullopt;
}

std::string ProcessOutcome::str() const {
  switch (state_) {
    case State::kNotStarted:
      return "not started";
    case State::kRunning:
      return "running";
    case State::kExited:
      return "exited " + std::to_string(value_);
    case State::kKilled:
      return "killed by " + signalName(value_) + (core_ ? " (core dumped)" : "");
  }
  return "unknown";
}

std::string signalName(int signal) {
  for (const auto& [num, name] : kSignals) {
    if (num == signal) return name;
  }
  return "SIG" + std::to_string(signal);
}

std::optional<int> signalNumber(const std::string& name) {
  const std::string full = name.rfind("SIG", 0) == 0 ? name : "SIG" + name;
  for (const auto& [num, sig] : kSignals) {
    if (full == sig) return num;
  }
  return std::nullopt;
}

}  // namespace faultline
