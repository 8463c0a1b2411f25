// Reader for a rank's events.jsonl (CONTRACT.md section 3). Tolerant: a
// malformed, truncated or non-UTF-8 line is skipped and counted, never fatal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace faultline::diagnose {

struct Event {
  int64_t t = 0;
  int rank = -1;
  int pid = 0;
  std::string ev;
  // The extra fields of every event type; unset numbers are -1.
  std::string op, dtype, what, hash, name, scope, path, mode, kind, type, message, file, backend, device;
  // A `fault` of kind syscall (the LD_PRELOAD interposer): the failed call,
  // its errno name ("errno" in the line), the FAULTLINE_INJECT rule, and for
  // connect the address.
  std::string call, err, rule, addr;
  // An `instrument` event (the Python shim, docs/BLACKBOX.md): which patch,
  // whether it applied (unset when the line has no boolean "applied"), the
  // error when it did not, and the torch version it met.
  std::string patch, error, torch;
  // An `error` event of the shim: the thread it ended (not the main one), and
  // the exception as Python prints it, chain included.
  std::string thread, traceback;
  std::optional<bool> applied;
  // collective_begin (issue 18): where the call came from, the innermost
  // frame outside torch ("train.py:42"), the next frames outward, and the
  // enclosing rank condition when there is one ("train.py:40: if rank == 0:").
  std::string site, rank_cond;
  std::vector<std::string> callers;
  // fingerprint: when it was taken (ddp_init, ddp_ready, optimizer_step); "" read as ddp_init.
  std::string at;
  // store_begin: the key (wait's keys joined by ",") a blocking store call waits for.
  std::string key;
  // metric_log (a metric sink, the shim's _metrics.py): the sink, the
  // Lightning stage it was logged in ("validation"), the n-th value of its
  // name; the sink's own sync setting, whether it came out of a collective
  // (unset: unknown), whether a checkpoint or early-stopping callback
  // monitors it, whether it is an epoch's value, whether the rank's last
  // DataLoader pass before it read the rank's share of the data.
  std::string sink, stage;
  int64_t n = -1;
  std::optional<bool> sync, collective, monitored, epoch_level, shard;
  int64_t seq = -1, numel = -1, step = -1, epoch = -1, count = -1, first = -1, last = -1;
  int64_t line = 0, code = -1, world_size = -1;
  // start: the launcher's attempt the process belongs to (a restart); -1 read as 0.
  int64_t attempt = -1;
  std::optional<double> value;
  std::vector<int64_t> indices;
  std::vector<std::string> stack;
};

struct EventLog {
  std::vector<Event> events;  // in file order
  size_t malformed = 0;       // lines skipped
};

// Parses one line; nullopt when it is not a JSON object with a string "ev".
std::optional<Event> parseEventLine(std::string_view line);
EventLog parseEvents(std::string_view text);
// Empty log when the file does not exist.
EventLog readEvents(const std::string& path);

}  // namespace faultline::diagnose
