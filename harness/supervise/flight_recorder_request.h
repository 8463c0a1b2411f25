// Asking torch's Flight Recorder for its dumps at teardown (docs/DIAGNOSIS.md,
// "Flight Recorder"): a byte written to every pipe in OUT/flight_recorder
// that a rank listens on. NCCL's watchdog opens pipe_R.pipe
// (TORCH_NCCL_DEBUG_INFO_PIPE_FILE) and writes rank_R; the shim's thread
// opens shim_R.pipe and writes rank_R.json. A pipe nobody holds open (a rank
// that died, a torch without the recorder) is skipped at once.
#pragma once

#include <string>
#include <vector>

namespace faultline::supervise {

struct FlightRecorderRequest {
  int rank = 0;
  std::string pipe;
  std::string dump;  // the file the rank writes in answer
};

// Writes to every listening pipe; returns the requests that reached a reader.
std::vector<FlightRecorderRequest> requestFlightRecorderDumps(const std::string& dir);

// Whether the answer of `r` is there (non-empty, and for the shim's, renamed into place).
bool flightRecorderDumpWritten(const FlightRecorderRequest& r);

}  // namespace faultline::supervise
