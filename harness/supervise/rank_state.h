// What the supervisor knows of one rank while the run goes on (internal to
// fl::supervise): its process, how it ended, and the signs of life the hang
// checks read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/posix/stream_descriptor.hpp>

#include "harness/model/outcome.h"

namespace faultline::supervise {

struct RankState {
  int rank = 0;
  pid_t pid = 0;
  int64_t start_ns = 0;
  bool our_child = false;  // started by faultline (reaped by us); else a launcher's, watched by pidfd or the proc connector
  bool finished = false;
  std::optional<int64_t> exit_ns;
  ProcessOutcome outcome = ProcessOutcome::running();
  bool exit_known = false;  // an external rank reaped by its launcher first leaves no status
  bool signalled_by_teardown = false;  // the teardown sent it SIGTERM or SIGKILL
  bool sigkilled_by_teardown = false;  // ... SIGKILL, or killed its cgroup
  // Start-up: until a rank writes output or an event, CPU use shows it is
  // still starting (see WatchLoop::ranksStillStarting).
  bool shown_life = false;
  // Past its start-up, for a start-up failure's grace (WatchLoop::failedAtStartup):
  // an event beyond the shim's own "start" and "instrument" lines (a process
  // group, a step, a collective), or output from a rank that writes no events.
  bool wrote_events = false;
  bool past_startup_event = false;
  uint64_t cpu_ticks = 0;
  bool starting_noted = false;
  bool seen_idle = false;  // seen blocked once while silent: past its start-up
  // The rank said its work is done (the shim's `work_end`: Ray Train's
  // training function returned); its launcher then ends the process, and
  // that exit is no failure whatever its status.
  bool work_done = false;
  std::optional<std::string> node;  // multi-node: FAULTLINE_NODE in its environment, or its agent's rank_start
  std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd;  // a rank not our child: readable when it ends
};

}  // namespace faultline::supervise
