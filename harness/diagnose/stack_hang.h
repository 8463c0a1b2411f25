// Hangs read from stack dumps alone, for ranks faultline could not
// instrument (no shim, a shim whose collective patches did not apply, a
// native program without the probe): which ranks' main threads wait inside a
// collective, and which one is elsewhere. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/root_cause_rules.h"

namespace faultline::diagnose {

enum class DumpPlace {
  kInCollective,  // the main thread waits inside torch.distributed / c10d / gloo
  kElsewhere,     // the main thread is somewhere else: user code, a sleep, a lock
  kUnknown,       // no dump, no main thread, or a place the dump cannot tell
};

struct DumpReading {
  DumpPlace place = DumpPlace::kUnknown;
  // kInCollective: the outermost collective frame, as the stack reads
  // ("all_reduce", "c10d::Reducer::finalize_backward").
  std::string collective;
  // The innermost user frame of the main thread, when it has one.
  std::optional<PyFrame> user;
  std::string why;  // kUnknown: why the dump cannot tell
};

// The main thread: the one the dump marks (py-spy's and eu-stack's thread
// whose id is the pid; faulthandler's current thread; of several dumps of it,
// the one with the most frames: py-spy's --native after its Python-only),
// else the last listed (faulthandler and gdb list the main thread last).
const StackThread* mainThread(const std::vector<StackThread>& threads);

// Where the main thread of a dump stands. A frame of torch.distributed
// (Python) or of c10d:: or gloo:: (native) with no user frame inside it is a
// wait in a collective (or the store, at rendezvous). A Python-only dump
// whose innermost frames are inside torch is kUnknown: torch may be waiting
// in C++ it cannot show (DDP's backward waits in c10d::Reducer).
DumpReading readDump(const std::vector<StackThread>& threads);

// The root-cause rule: the supervisor saw a hang (or the deadline) that no
// event explains, and the stack dumps show ranks waiting in a collective
// while exactly one live rank (or one that exited cleanly) is elsewhere:
// that one is the laggard, named with its innermost user frame. Every rank
// waiting, several elsewhere, or a dump missing: an honest timeout or a
// hung collective without a rank, saying what each dump showed. Passes
// (nullopt) with fewer than two ranks, or no dump at all, or no rank waiting.
std::optional<Candidate> stackDumpHang(const Analysis& a);

}  // namespace faultline::diagnose
