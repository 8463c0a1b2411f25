// torch's Flight Recorder dumps as evidence (docs/DIAGNOSIS.md, "Flight
// Recorder"): the last collectives each rank's process group scheduled,
// started and completed, with their sequence numbers, ops and sizes. torch
// 2.x writes them where faultline points TORCH_FR_DUMP_TEMP_FILE
// (OUT/flight_recorder/rank_R): NCCL's watchdog on a timeout, or on a write
// to its dump pipe; the shim writes rank_R.json from Gloo's recorder when the
// teardown asks. Pickle (torch's own format) or JSON (dump_fr_trace_json).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/events.h"
#include "harness/model/error.h"

namespace faultline::diagnose {

struct FlightRecorderEntry {
  std::string group;           // the process group's name ("0": the default group)
  bool default_group = false;  // desc "default_pg", or name "0"
  int64_t seq = -1;            // collective_seq_id, from 1 in the group
  bool p2p = false;
  std::string profiling_name;  // "nccl:all_reduce", "gloo:broadcast"
  std::string op;              // faultline's name for it ("allreduce", "broadcast")
  int64_t numel = -1;          // every input tensor's elements
  std::string dtype;           // the first input's, lower case ("float")
  std::string state;           // scheduled | started | completed
  bool retired = false;        // the work finished and left the recorder's active set
  int64_t created_ns = 0;      // CLOCK_REALTIME
  std::optional<int64_t> started_ns, completed_ns;
  bool ended() const { return retired || state == "completed" || completed_ns.has_value(); }
};

struct FlightRecorderDump {
  int rank = 0;
  std::string path;
  std::string version;  // the dump format's ("2.10")
  std::vector<FlightRecorderEntry> entries;
};

struct FlightRecorderDumps {
  std::map<int, FlightRecorderDump> by_rank;  // the dump with the most entries, per rank
  std::vector<std::string> problems;          // "flight_recorder/rank_1: pickle at byte 9: ..."
};

// "nccl:all_reduce" -> "allreduce", "nccl:_allgather_base" -> "allgather",
// "nccl:all_reduce_barrier" -> "barrier": the shim's names for the same calls.
std::string opFromProfilingName(std::string_view profiling_name);

// One dump's bytes (pickle: first byte 0x80; else JSON). kBadInput names what is wrong.
Result<FlightRecorderDump> parseFlightRecorderDump(std::string_view bytes, int rank);

// Every dump in `dir` (rank_R, rank_R.json); none when the directory is absent.
FlightRecorderDumps readFlightRecorderDumps(const std::string& dir);

// The default group's collectives of every dump as collective_begin (and,
// when it ended, collective_end) events with seq counted from 0, as the shim
// counts them. A recorder is a ring: only the sequence numbers every dump
// still holds are kept, so that a call that fell out of one rank's buffer is
// not read as a call it never made.
std::map<int, std::vector<Event>> collectiveEventsOf(const FlightRecorderDumps& dumps);

}  // namespace faultline::diagnose
