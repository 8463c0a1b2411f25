// Child processes in tests: one posix_spawn and one wait for every test, the
// end of a child as a value (exited with a code, killed by a signal, timed
// out, never started), its output captured where a test reads it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::testing {

// This process's environment as KEY=VALUE strings, without each KEY for which
// `drop(KEY)` holds and without the keys of `set`, then `set` (an empty value
// sets the variable to "").
std::vector<std::string> environmentWith(const std::map<std::string, std::string>& set = {},
                                         bool (*drop)(std::string_view key) = nullptr);

struct SpawnOptions {
  // argv[0] is the file executed (no PATH search).
  std::vector<std::string> argv;
  // KEY=VALUE strings; nullopt: this process's environment.
  std::optional<std::vector<std::string>> env;
  // Where fd 1 and fd 2 go (created, truncated); empty: inherited.
  std::string stdout_path;
  std::string stderr_path;
  // fd 2 is fd 1 (stderr_path is then ignored).
  bool stderr_to_stdout = false;
  // fd 1 is this descriptor of the test's (before stdout_path), or -1.
  int stdout_fd = -1;
};

// How a child ended.
struct Outcome {
  int spawn_error = 0;   // errno of posix_spawn; 0 when the child started
  int status = -1;       // the wait status, when it was reaped
  bool timed_out = false;  // still running at the limit: it was SIGKILLed (status says so)
  long maxrss_kb = 0;    // getrusage's ru_maxrss of the child and what it reaped
  std::string out, err;  // stdout_path's and stderr_path's contents, read by runChild(..., capture)

  bool started() const { return spawn_error == 0; }
  bool exited() const;
  // The exit code, or -1 when it did not exit (a signal, or never started).
  int code() const;
  // The terminating signal, or 0.
  int signal() const;
  // "exited 1", "killed by Segmentation fault", "timed out (killed by Killed)", "not started: ...".
  std::string str() const;
};

// Starts the child, with every signal's disposition the default, as a shell
// starts it (an ignored SIGPIPE would otherwise pass from the test to the
// child); the pid, or -1 (and a test failure naming the program and
// the error) when posix_spawn fails, with the error in *spawn_error.
pid_t spawnChild(const SpawnOptions& opts, int* spawn_error = nullptr);

// Reaps `pid`. With a limit, polls (every 5 ms) until then, and SIGKILLs and
// reaps a child still running at the limit (timed_out). A failed wait is a
// test failure.
Outcome waitChild(pid_t pid, std::optional<std::chrono::milliseconds> limit = std::nullopt);

// A child whose stdout is a pipe the test reads `read_bytes` of and then
// closes, as `CHILD | true` (0) and `CHILD | head -c 1` (1) do; every later
// write of the child's meets a pipe with no reader. Waits for it to end.
Outcome runIntoClosedPipe(SpawnOptions opts, size_t read_bytes);

// spawnChild, then waitChild; with `capture`, out and err hold what the child wrote to
// stdout_path and stderr_path.
Outcome runChild(const SpawnOptions& opts, std::optional<std::chrono::milliseconds> limit = std::nullopt,
            bool capture = false);

}  // namespace faultline::testing
