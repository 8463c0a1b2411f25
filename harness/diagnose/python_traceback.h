// Python evidence: tracebacks (chained, launcher-prefixed, nested in a spawn
// parent's ProcessRaisedException) and faulthandler stack dumps.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/library_paths.h"

namespace faultline::diagnose {

struct PyFrame {
  std::string file;
  int line = 0;
  std::string function;  // empty for SyntaxError's location line
  std::string source;    // the source line shown under the frame, trimmed
};

// One "Traceback (most recent call last):" block. Frames are outermost first,
// as Python prints them; innermost() is the frame that raised.
struct PyTraceback {
  std::vector<PyFrame> frames;
  std::string type;     // "NameError", "torch.multiprocessing.spawn.ProcessRaisedException"
  std::string message;  // first line of the message
  std::string full_message;  // every message line, joined by "\n"
  size_t first_line = 0;     // index into the lines given to the parser
  size_t last_line = 0;      // inclusive
  bool truncated = false;    // input ended before the exception line
  std::string thread;        // "Exception in thread NAME:" before it (threading.excepthook); "" otherwise
  // torch's ExceptionWrapper ("Caught ValueError in DataLoader worker process
  // 0." + "Original Traceback (most recent call last):"): the chain printed in
  // the message, cause first; `message` is the text before it.
  std::vector<PyTraceback> embedded;

  const PyFrame* innermost() const { return frames.empty() ? nullptr : &frames.back(); }
  // The type without its module path: "ProcessRaisedException".
  std::string shortType() const;
};

// Tracebacks joined by "During handling of the above exception, another
// exception occurred:" or "The above exception was the direct cause of the
// following exception:". Printed cause first: front() is the original error,
// back() the one that propagated.
struct PyChain {
  std::vector<PyTraceback> tracebacks;
  const PyTraceback& original() const { return tracebacks.front(); }
  const PyTraceback& final() const { return tracebacks.back(); }
};

// Every traceback chain in the lines, in order. Lines may be mixed with other
// output; a truncated traceback (no exception line) is kept with truncated=true
// and an empty type.
std::vector<PyChain> parsePythonTracebacks(const std::vector<std::string_view>& lines);
std::vector<PyChain> parsePythonTracebacks(std::string_view text);

// "-- Process 1 terminated with the following error:" in a spawn parent's
// ProcessRaisedException: the rank (process index) it names.
std::optional<int> spawnProcessIndex(std::string_view line);

// A faulthandler dump ("Current thread 0x... (most recent call first):" /
// "Thread 0x..."), gdb's "Thread N (...)" blocks, eu-stack's "TID N:" or
// py-spy's ("Process N: ...", 'Thread N (idle): "MainThread"', Python and
// --native frames): frames innermost first. `current` marks the thread that
// took faulthandler's signal, and the main thread (its id the pid) of
// eu-stack and py-spy.
struct StackThread {
  std::string header;
  bool current = false;  // faulthandler's "Current thread"
  std::vector<PyFrame> frames;  // innermost first
};
std::vector<StackThread> parseStackDump(std::string_view text);
// A thread Python's threading module started (its outermost frame is
// threading.py's bootstrap): never the main thread. faulthandler marks as
// "Current thread" whichever thread took the signal, which can be one of them.
bool startedByThreading(const StackThread& t);

// The innermost frame of the dump that is in user code (not library code by
// `lib`, docs/DIAGNOSIS.md section 8); nullptr if none. Prefers the current
// thread, then the main thread (the last one listed).
const PyFrame* userFrame(const std::vector<StackThread>& threads, const LibraryPaths& lib = LibraryPaths());
// The innermost frame of user code in that one thread; nullptr if none.
const PyFrame* userFrameIn(const StackThread& thread, const LibraryPaths& lib = LibraryPaths());
// The built-in policy alone: LibraryPaths().isLibrary(file).
bool isLibraryPath(std::string_view file);

}  // namespace faultline::diagnose
