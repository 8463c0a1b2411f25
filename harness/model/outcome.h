// How a process ended, as a value: a dying rank is data, not an error.
#pragma once

#include <optional>
#include <string>

namespace faultline {

class ProcessOutcome {
 public:
  enum class State { kNotStarted, kRunning, kExited, kKilled };

  static ProcessOutcome notStarted() { return ProcessOutcome(State::kNotStarted, 0, false); }
  static ProcessOutcome running() { return ProcessOutcome(State::kRunning, 0, false); }
  static ProcessOutcome exited(int code) { return ProcessOutcome(State::kExited, code, false); }
  static ProcessOutcome killed(int signal, bool coreDumped = false) {
    return ProcessOutcome(State::kKilled, signal, coreDumped);
  }
  // From a wait status as returned by waitpid()/waitid().
  static ProcessOutcome fromWaitStatus(int status);

  State state() const { return state_; }
  bool finished() const { return state_ == State::kExited || state_ == State::kKilled; }
  bool success() const { return state_ == State::kExited && value_ == 0; }
  std::optional<int> exitCode() const;
  std::optional<int> signal() const;
  bool coreDumped() const { return core_; }
  // "exited 0", "killed by SIGSEGV (core dumped)", "running", "not started".
  std::string str() const;

  bool operator==(const ProcessOutcome&) const = default;

 private:
  ProcessOutcome(State s, int v, bool core) : state_(s), value_(v), core_(core) {}
  State state_;
  int value_;
  bool core_;
};

// "SIGSEGV" for 11; "SIG42" for a number without a name.
std::string signalName(int signal);
// 11 for "SIGSEGV" or "SEGV"; nullopt for an unknown name.
std::optional<int> signalNumber(const std::string& name);

}  // namespace faultline
