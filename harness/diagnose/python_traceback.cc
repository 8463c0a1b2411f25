// Python traceback and faulthandler dump parsers.
#include "harness/diagnose/python_traceback.h"

#include <cstdlib>

#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

constexpr std::string_view kTracebackHead = "Traceback (most recent call last):";
constexpr std::string_view kDuringHandling =
    "During handling of the above exception, another exception occurred:";
constexpr std::string_view kDirectCause =
    "The above exception was the direct cause of the following exception:";

bool parseInt(std::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// `  File "x.py", line 42, in main` (traceback) or `  File "x.py", line 42 in main`
// (faulthandler) or `  File "x.py", line 3` (SyntaxError).
std::optional<PyFrame> parseFrameLine(std::string_view line) {
  std::string_view t = trim(line);
  if (!startsWith(t, "File \"")) return std::nullopt;
  t.remove_prefix(6);
  const size_t q = t.find("\", line ");
  if (q == std::string_view::npos) return std::nullopt;
  PyFrame f;
  f.file = std::string(t.substr(0, q));
  t.remove_prefix(q + 8);
  size_t end = 0;
  while (end < t.size() && t[end] >= '0' && t[end] <= '9') ++end;
  if (!parseInt(t.substr(0, end), f.line)) return std::nullopt;
  t.remove_prefix(end);
  if (startsWith(t, ", in ")) f.function = std::string(t.substr(5));
  else if (startsWith(t, " in ")) f.function = std::string(t.substr(4));
  else if (!trim(t).empty()) return std::nullopt;
  return f;
}

bool isCaretLine(std::string_view line) {
  std::string_view t = trim(line);
  if (t.empty()) return false;
  for (char c : t) {
    if (c != '^' && c != '~' && c != ' ') return false;
  }
  return true;
}

bool isIdentChar(char c) {
  return c == '_' || c == '.' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// "NameError: name 'c' is not defined" / "KeyboardInterrupt" / "pkg.Err: " ->
// type and message; nullopt for something that is no exception line.
std::optional<std::pair<std::string, std::string>> parseExceptionLine(std::string_view line) {
  if (line.empty() || line.front() == ' ' || line.front() == '\t') return std::nullopt;
  size_t i = 0;
  while (i < line.size() && isIdentChar(line[i])) ++i;
  if (i == 0 || line[0] == '.' || (line[0] >= '0' && line[0] <= '9')) return std::nullopt;
  std::string type(line.substr(0, i));
  if (i == line.size()) return std::make_pair(type, std::string());
  if (line[i] != ':') return std::nullopt;
  std::string_view msg = line.substr(i + 1);
  if (!msg.empty() && msg.front() == ' ') msg.remove_prefix(1);
  return std::make_pair(type, std::string(trim(msg)));
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// A logging record ends a message: Python's default format ("ERROR:torch.distributed...:",
// "WARNING:root:", torch 1.13's launcher) or the glog format torch 2.x's
// launcher and c10 use ("E1201 21:06:32.664000 6290 torch/...] failed",
// "[W1201 21:06:32.664 ProcessGroupNCCL.cpp:1496] Warning: ...").
bool isLogRecord(std::string_view line) {
  for (std::string_view lvl : {"DEBUG:", "INFO:", "WARNING:", "ERROR:", "CRITICAL:"}) {
    if (startsWith(line, lvl)) return true;
  }
  if (!line.empty() && line.front() == '[') line.remove_prefix(1);
  // [IWEF]MMDD HH:MM:SS
  if (line.size() < 14 || std::string_view("IWEF").find(line[0]) == std::string_view::npos) return false;
  static constexpr size_t kDigits[] = {1, 2, 3, 4, 6, 7, 9, 10, 12, 13};
  for (size_t i : kDigits) {
    if (!isDigit(line[i])) return false;
  }
  return line[5] == ' ' && line[8] == ':' && line[11] == ':';
}

}  // namespace

std::string PyTraceback::shortType() const {
  const size_t dot = type.rfind('.');
  return dot == std::string::npos ? type : type.substr(dot + 1);
}

std::optional<int> spawnProcessIndex(std::string_view line) {
  std::string_view t = trim(line);
  constexpr std::string_view kHead = "-- Process ";
  if (!startsWith(t, kHead)) return std::nullopt;
  t.remove_prefix(kHead.size());
  size_t end = 0;
  while (end < t.size() && t[end] >= '0' && t[end] <= '9') ++end;
  int v = 0;
  if (!parseInt(t.substr(0, end), v)) return std::nullopt;
  if (!startsWith(t.substr(end), " terminated with the following error")) return std::nullopt;
  return v;
}

namespace {

// torch's ExceptionWrapper (a DataLoader worker's or pin-memory thread's
// exception, re-raised in the main process) puts the original traceback in
// the message under this head.
constexpr std::string_view kOriginalHead = "Original Traceback (most recent call last):";
constexpr int kMaxEmbedding = 4;  // a wrapper's wrapper's ...: deeper is no real output

bool isSeparator(std::string_view t) { return t == kDuringHandling || t == kDirectCause; }

// threading.excepthook prints "Exception in thread NAME:" before the traceback.
std::string threadOf(const std::vector<std::string_view>& lines, size_t head) {
  constexpr std::string_view kHead = "Exception in thread ";
  if (head == 0) return {};
  std::string_view t = trim(lines[head - 1]);
  if (!startsWith(t, kHead) || t.back() != ':') return {};
  t.remove_prefix(kHead.size());
  t.remove_suffix(1);
  return std::string(t);
}

std::vector<PyTraceback> parseChainAt(const std::vector<std::string_view>& lines, size_t& i, int depth);

// The traceback whose head is lines[i]; leaves i past it.
PyTraceback parseOne(const std::vector<std::string_view>& lines, size_t& i, int depth) {
  const size_t n = lines.size();
  PyTraceback tb;
  tb.first_line = i;
  tb.thread = threadOf(lines, i);
  ++i;
  // Frames.
  while (i < n) {
    if (auto f = parseFrameLine(lines[i])) {
      tb.frames.push_back(std::move(*f));
      ++i;
      continue;
    }
    const std::string_view line = lines[i];
    if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      // Source line or caret line under the last frame.
      if (!tb.frames.empty() && !isCaretLine(line) && tb.frames.back().source.empty()) {
        tb.frames.back().source = std::string(trim(line));
      }
      ++i;
      continue;
    }
    break;
  }
  // Exception line.
  if (i >= n) {
    tb.truncated = true;
    tb.last_line = n - 1;
    return tb;
  }
  auto ex = parseExceptionLine(lines[i]);
  if (!ex) {
    tb.truncated = true;
    tb.last_line = i > 0 ? i - 1 : 0;
    return tb;
  }
  tb.type = ex->first;
  tb.message = ex->second;
  tb.full_message = ex->second;
  tb.last_line = i;
  ++i;
  // Continuation lines of a multi-line message, up to a blank line (once
  // the message has text), a new traceback, a separator or a log record.
  size_t taken = 0;
  while (i < n && taken < 64) {
    const std::string_view c = lines[i];
    const std::string_view ct = trim(c);
    if (ct == kOriginalHead && depth < kMaxEmbedding) {
      // The message ends here; the traceback it carries is this one's innermost layers.
      const size_t before = i;
      tb.embedded = parseChainAt(lines, i, depth + 1);
      if (tb.embedded.empty()) i = before + 1;
      tb.last_line = i > 0 ? i - 1 : 0;
      break;
    }
    if (ct == kTracebackHead || isSeparator(ct) || isLogRecord(c)) break;
    if (ct.empty()) {
      bool more = false;  // a blank line inside e.g. ProcessRaisedException's message
      for (size_t k = i + 1; k < n && k < i + 3; ++k) {
        if (!trim(lines[k]).empty()) {
          more = startsWith(trim(lines[k]), "-- Process ") && trim(tb.full_message).empty();
          break;
        }
      }
      if (!more) break;
    }
    if (spawnProcessIndex(c)) {
      tb.full_message += "\n" + std::string(c);
      tb.last_line = i;
      ++i;
      break;  // the child's traceback follows as its own block
    }
    tb.full_message += "\n" + std::string(c);
    tb.last_line = i;
    ++i;
    ++taken;
  }
  if (tb.message.empty()) {
    // "ChildFailedError: " puts its text on the next lines.
    for (std::string_view l : splitLines(tb.full_message)) {
      if (!trim(l).empty() && trim(l).find_first_not_of("=-") != std::string_view::npos) {
        tb.message = std::string(trim(l));
        break;
      }
    }
  }
  return tb;
}

// Tracebacks from the head at lines[i] (kOriginalHead or kTracebackHead),
// joined by separators with blank lines around them, cause first; i past them.
std::vector<PyTraceback> parseChainAt(const std::vector<std::string_view>& lines, size_t& i, int depth) {
  std::vector<PyTraceback> chain;
  chain.push_back(parseOne(lines, i, depth));
  while (!chain.back().truncated) {
    size_t k = i;
    while (k < lines.size() && trim(lines[k]).empty()) ++k;
    if (k >= lines.size() || !isSeparator(trim(lines[k]))) break;
    ++k;
    while (k < lines.size() && trim(lines[k]).empty()) ++k;
    if (k >= lines.size() || trim(lines[k]) != kTracebackHead) break;
    i = k;
    chain.push_back(parseOne(lines, i, depth));
  }
  return chain;
}

}  // namespace

std::vector<PyChain> parsePythonTracebacks(const std::vector<std::string_view>& lines) {
  std::vector<PyChain> chains;
  bool link_next = false;  // a chain separator was seen after the last traceback
  size_t i = 0;
  const size_t n = lines.size();
  while (i < n) {
    std::string_view t = trim(lines[i]);
    if (isSeparator(t)) {
      if (!chains.empty()) link_next = true;
      ++i;
      continue;
    }
    if (t != kTracebackHead) {
      // Anything but blank lines between a separator and the next traceback breaks the chain.
      if (!t.empty()) link_next = false;
      ++i;
      continue;
    }
    PyTraceback tb = parseOne(lines, i, 0);
    if (link_next && !chains.empty()) chains.back().tracebacks.push_back(std::move(tb));
    else chains.push_back(PyChain{{std::move(tb)}});
    link_next = false;
  }
  return chains;
}

std::vector<PyChain> parsePythonTracebacks(std::string_view text) {
  return parsePythonTracebacks(splitLines(text));
}

namespace {

// eu-stack -s: "    ../src/x.cc:42:7" (file:line[:column]) under the frame it belongs to.
bool parseSourceLine(std::string_view line, PyFrame& f) {
  if (line.empty() || (line[0] != ' ' && line[0] != '\t')) return false;
  std::string_view t = trim(line);
  if (t.empty() || t.find(' ') != std::string_view::npos) return false;
  size_t colon = t.rfind(':');
  if (colon == std::string_view::npos) return false;
  int n = 0;
  if (!parseInt(t.substr(colon + 1), n)) return false;
  // With a column the line number is the field before it.
  const size_t prev = t.rfind(':', colon - 1);
  int line_no = n;
  size_t file_end = colon;
  if (prev != std::string_view::npos && prev > 0 && parseInt(t.substr(prev + 1, colon - prev - 1), line_no)) {
    file_end = prev;
  } else {
    line_no = n;  // parseInt may have written a partial value
  }
  if (file_end == 0 || line_no <= 0) return false;
  f.file = std::string(t.substr(0, file_end));
  f.line = line_no;
  return true;
}

// A native frame, innermost first:
//   gdb:      "#3  0x00007f... in foo (a=1) at /src/x.cc:42", "#0  foo () at x.cc:1"
//   eu-stack: "#3  0x00007f51db268452 c10d::ProcessGroupGloo::allreduce(...)"
PyFrame parseNativeFrame(std::string_view t) {
  PyFrame f;
  std::string_view rest = t.substr(1);
  while (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') rest.remove_prefix(1);  // frame number
  rest = trim(rest);
  std::string_view address;
  if (startsWith(rest, "0x")) {
    const size_t sp = rest.find(' ');
    address = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : trim(rest.substr(sp));
  }
  const bool gdb_in = startsWith(rest, "in ");
  // gdb prints "name (args)" and " at file:line"; eu-stack the bare symbol.
  const bool gdb = gdb_in || rest.find(" (") != std::string_view::npos || rest.find(" at ") != std::string_view::npos;
  if (gdb) {
    if (gdb_in) rest = trim(rest.substr(3));
    f.function = std::string(rest.substr(0, rest.find(" (")));
    const size_t at = rest.rfind(" at ");
    if (at != std::string_view::npos) {
      std::string_view loc = rest.substr(at + 4);
      const size_t colon = loc.rfind(':');
      if (colon != std::string_view::npos && parseInt(loc.substr(colon + 1), f.line)) {
        f.file = std::string(loc.substr(0, colon));
      }
    }
  } else {
    // eu-stack: the whole symbol, signature included; the address when it has none.
    f.function = std::string(rest.empty() ? address : rest);
  }
  return f;
}

// py-spy dump, one frame a line under its thread, innermost first:
//   Python: "    Event.wait (/usr/lib/python3.11/threading.py:622)"
//   native (--native): "    c10d::Work::wait (/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0)",
//                      "    0x7f54019ebf16 (libc.so.6)"
std::optional<PyFrame> parsePySpyFrame(std::string_view line) {
  if (!startsWith(line, "    ")) return std::nullopt;
  std::string_view t = trim(line);
  const size_t open = t.rfind(" (");
  if (t.empty() || t.back() != ')' || open == std::string_view::npos || open == 0) return std::nullopt;
  PyFrame f;
  f.function = std::string(t.substr(0, open));
  const std::string_view where = t.substr(open + 2, t.size() - open - 3);
  const size_t colon = where.rfind(':');
  int n = 0;
  if (colon != std::string_view::npos && parseInt(where.substr(colon + 1), n) && n > 0) {
    f.file = std::string(where.substr(0, colon));
    f.line = n;
  }
  // A native frame keeps only its function: a shared library is no file:line.
  return f;
}

// "Process 1234: /usr/bin/python3 train.py": py-spy's first line; the pid,
// which is also the main thread's id.
std::optional<std::string> pySpyProcess(std::string_view t) {
  if (!startsWith(t, "Process ")) return std::nullopt;
  const size_t colon = t.find(':');
  if (colon == std::string_view::npos || colon == 8) return std::nullopt;
  const std::string_view pid = t.substr(8, colon - 8);
  if (pid.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  return std::string(pid);
}

}  // namespace

std::vector<StackThread> parseStackDump(std::string_view text) {
  std::vector<StackThread> threads;
  std::string eu_pid;  // eu-stack: "PID 123 - process" names the main thread's TID
  std::string spy_pid;  // py-spy: "Process 123: ..." likewise
  for (std::string_view line : splitLines(text)) {
    std::string_view t = trim(line);
    if (startsWith(t, "PID ") && contains(t, " - process")) {
      eu_pid = std::string(t.substr(4, t.find(' ', 4) - 4));
      continue;
    }
    if (auto pid = pySpyProcess(t)) {
      spy_pid = *pid;
      continue;
    }
    // py-spy: 'Thread 123 (idle): "MainThread"'.
    if (!spy_pid.empty() && startsWith(line, "Thread ")) {
      StackThread th;
      th.header = std::string(t);
      const std::string_view tid = t.substr(7, t.find(' ', 7) == std::string_view::npos ? 0 : t.find(' ', 7) - 7);
      th.current = tid == spy_pid;
      threads.push_back(std::move(th));
      continue;
    }
    if (!spy_pid.empty() && !threads.empty()) {
      if (auto f = parsePySpyFrame(line)) {
        threads.back().frames.push_back(std::move(*f));
        continue;
      }
    }
    const bool fh_current = startsWith(t, "Current thread 0x");
    const bool fh_thread = startsWith(t, "Thread 0x");
    const bool gdb_thread = startsWith(line, "Thread ") && contains(line, "(");
    const bool eu_thread = startsWith(line, "TID ") && !t.empty() && t.back() == ':';
    if (fh_current || fh_thread || gdb_thread || eu_thread) {
      StackThread th;
      th.header = std::string(t);
      th.current = fh_current || (eu_thread && !eu_pid.empty() && t.substr(4, t.size() - 5) == eu_pid);
      threads.push_back(std::move(th));
      continue;
    }
    if (threads.empty()) continue;
    if (auto f = parseFrameLine(line)) {
      threads.back().frames.push_back(std::move(*f));
      continue;
    }
    if (startsWith(t, "#")) {
      threads.back().frames.push_back(parseNativeFrame(t));
      continue;
    }
    auto& frames = threads.back().frames;
    if (!frames.empty() && frames.back().file.empty()) parseSourceLine(line, frames.back());
  }
  return threads;
}

bool isLibraryPath(std::string_view file) { return LibraryPaths().isLibrary(file); }

bool startedByThreading(const StackThread& t) {
  if (t.frames.empty()) return false;
  const PyFrame& outer = t.frames.back();
  const std::string_view file = outer.file;
  const bool threading_py = file == "threading.py" || (file.size() > 13 && file.substr(file.size() - 13) == "/threading.py");
  return threading_py && outer.function.rfind("_bootstrap", 0) == 0;
}

const PyFrame* userFrameIn(const StackThread& thread, const LibraryPaths& lib) {
  for (const PyFrame& f : thread.frames) {
    if (!lib.isLibrary(f.file) && f.line > 0) return &f;
  }
  return nullptr;
}

const PyFrame* userFrame(const std::vector<StackThread>& threads, const LibraryPaths& lib) {
  for (const StackThread& th : threads) {
    if (th.current && !startedByThreading(th)) {
      if (const PyFrame* f = userFrameIn(th, lib)) return f;
    }
  }
  for (auto it = threads.rbegin(); it != threads.rend(); ++it) {
    if (const PyFrame* f = userFrameIn(*it, lib)) return f;
  }
  return nullptr;
}

}  // namespace faultline::diagnose
