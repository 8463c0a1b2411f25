// One piece of failure evidence found in a rank's output, error file or events,
// already classified as primary (this rank's own fault) or collateral (a
// symptom of someone else's failure: a peer closed, a timeout, a teardown signal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/report.h"

namespace faultline::diagnose {

struct Evidence {
  Kind kind = Kind::kUnknown;
  bool collateral = false;
  std::string collateral_reason;  // e.g. "peer closed the connection"
  std::string type;               // "NameError", "c10::Error", "SIGSEGV"
  std::string message;            // first line
  std::optional<Location> location;
  std::string source_line;        // the code at location, when shown
  std::string symbol;             // undefined_symbol: demangled when C++
  std::string signal;             // kind signal: "SIGSEGV"
  bool signal_handled = false;    // kind signal: the rank got it and lived on (its handler), not killed by it
  std::optional<int> exit_code;
  // kind exit_code: a SystemExit the rank's framework caught (Ray Train's
  // worker): exit_code is the status the trainer asked for, not its process's.
  bool exit_caught = false;
  // kind exit_code: the process called exit(exit_code) and then crashed on
  // its way out, of this ("c10::Error: ... (OperatorEntry.h:80)"): a thread
  // still at work as the static destructors ran. exit_code is the status it
  // asked for; its process's status is the crash's.
  std::string crashed_exiting;
  std::optional<int64_t> t_ns;    // when it happened, if the evidence says
  std::string origin;             // "stderr", "error.json", "events.jsonl", "launcher"
  std::vector<std::string> chain;  // outer layers of an exception chain, outermost first
  std::vector<std::string> inner;  // layers inside it that name no failure (a bare StopIteration), outermost first
  std::string thread;              // the thread it killed, when not the main thread ("prefetch")
  std::string worker;              // the worker process it killed ("DataLoader worker (pid 123)")
  // Where C++ raised it: c10's "Exception raised from FUNC at FILE:LINE" in the
  // message of a RuntimeError (location stays the user's Python frame).
  std::optional<Location> native_location;
  std::string native_function;
  // The frames location was picked from, outermost first: a policy with more
  // library paths picks again (pickLocation).
  std::vector<Location> frames;
  std::vector<std::string> frame_sources;  // the source line of each frame, "" when not shown
  std::string note;               // e.g. "possible OOM kill"
  std::string function;           // innermost user function of a native backtrace
  // The process rejected its own command line before running any code of its
  // own (the interpreter could not open the script, argparse refused the
  // arguments): a fact of the command, so every rank running it fails alike.
  bool command_line = false;
  // The report was cut short: a process killed as it printed it ("terminate
  // called after throwing an instance of '" and no more). It says only that
  // the process was ending; any fuller record of it wins (terminalError).
  bool cut_off = false;
};

// "NameError: name 'c' is not defined (train.py:42)" style one-liner; " in
// thread NAME" when it ended a thread.
std::string describe(const Evidence& e);
// The native origin as a layer: "raised in C++ from meta at ./aten/src/ATen/native/LinearAlgebra.cpp:73";
// "" without one.
std::string describeNativeOrigin(const Evidence& e);

// Upgrades the kind from what the text says: an exception whose message is a
// loader's "undefined symbol: X" is undefined_symbol (X demangled); one that
// reports an allocation failure is oom. Collateral evidence is left alone.
void refineKind(Evidence& e);

}  // namespace faultline::diagnose
