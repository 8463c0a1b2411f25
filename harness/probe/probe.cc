// The probe's implementation: JSON-line events, one write() each, on an O_APPEND fd.
// Formatting avoids the heap in the crash path; everything else may allocate.
#include "faultline/probe.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>

#include "harness/probe/fatal_signal.h"
#include "harness/probe/fault_spec.h"
#include "harness/probe/json_escape.h"

namespace {

std::atomic<int> g_fd{-1};
std::atomic<int> g_rank{-1};
std::atomic<bool> g_error_reported{false};
std::atomic<bool> g_exit_recorded{false};  // an `exit` event is written: one per process
std::once_flag g_init_once;
std::mutex g_reinit_mutex;

// A fixed-capacity string builder: usable in a signal handler, never allocates.
class LineBuf {
 public:
  LineBuf(char* data, size_t cap) : data_(data), cap_(cap) {}
  void raw(const char* s) {
    while (*s) put(*s++);
  }
  void raw(const char* s, size_t n) {
    for (size_t i = 0; i < n; ++i) put(s[i]);
  }
  void num(int64_t v) {
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
    do {
      tmp[n++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) put('-');
    while (n) put(tmp[--n]);
  }
  void hex(uint64_t v, int width) {
    static const char kDigits[] = "0123456789abcdef";
    for (int i = width - 1; i >= 0; --i) put(kDigits[(v >> (4 * i)) & 0xf]);
  }
  // A JSON string literal (harness/probe/json_escape.h): control characters
  // escaped, ill-formed UTF-8 as \ufffd, so a reader never rejects the line.
  void str(const char* s) { len_ = fl_json_string(data_, cap_, len_, s); }
  void key(const char* k) {
    put(',');
    str(k);
    put(':');
  }
  bool overflowed() const { return len_ >= cap_; }
  size_t size() const { return len_ < cap_ ? len_ : cap_; }
  const char* data() const { return data_; }

 private:
  void put(char c) {
    if (len_ < cap_) data_[len_] = c;
    ++len_;
  }
  char* data_;
  size_t cap_;
  size_t len_ = 0;
};

void mkdirs(const std::string& dir) {
  for (size_t pos = 1; pos != std::string::npos;) {
    pos = dir.find('/', pos + 1);
    ::mkdir(dir.substr(0, pos).c_str(), 0755);
  }
}

int parseRank(const char* s) {
  if (!s || !*s) return -1;
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  return (*end == '\0' && v >= 0 && v < INT_MAX) ? static_cast<int>(v) : -1;
}

void openEventsFile() {
  std::string path;
  if (const char* p = std::getenv("FAULTLINE_EVENTS"); p && *p) {
    path = p;
  } else if (const char* d = std::getenv("FAULTLINE_EVENTS_DIR"); d && *d && g_rank.load() >= 0) {
    path = std::string(d) + "/" + std::to_string(g_rank.load()) + "/events.jsonl";
  } else {
    return;
  }
  auto slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) mkdirs(path.substr(0, slash));
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) {
    int old = g_fd.exchange(fd);
    if (old >= 0) ::close(old);
  }
}

void initOnce() {
  if (g_rank.load() < 0) g_rank.store(parseRank(std::getenv("RANK")));
  openEventsFile();
}

// Starts a line with the fields every event has.
void head(LineBuf& b, const char* ev) {
  b.raw("{\"t\":");
  b.num(fl_probe_now_ns());
  b.raw(",\"rank\":");
  int rank = g_rank.load();
  if (rank >= 0) {
    b.num(rank);
  } else {
    b.raw("null");
  }
  b.raw(",\"pid\":");
  b.num(::getpid());
  b.key("ev");
  b.str(ev);
}

void emit(LineBuf& b) {
  b.raw("}\n");
  int fd = g_fd.load();
  if (fd < 0 || b.overflowed()) return;
  const char* p = b.data();
  size_t left = b.size();
  // O_APPEND makes each write() land whole at the end; a short write on a
  // regular file only happens when the disk is full, and then the line is lost.
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

constexpr size_t kLine = 4096;

// Fills `frames` with symbolised native frames; returns the count. In a
// signal handler `demangle` must be false: __cxa_demangle allocates, and the
// fault may have come from inside malloc (TSan: "signal-unsafe call inside of
// a signal"). Diagnosis demangles the names it shows.
int captureFrames(char (*frames)[256], int max, int skip, bool demangle) {
  void* addrs[64];
  int n = ::backtrace(addrs, 64);
  int out = 0;
  for (int i = skip; i < n && out < max; ++i) {
    LineBuf f(frames[out], 255);
    f.raw("#");
    f.num(out);
    f.raw(" 0x");
    f.hex(reinterpret_cast<uintptr_t>(addrs[i]), 12);
    Dl_info info;
    if (::dladdr(addrs[i], &info) != 0) {
      if (info.dli_sname) {
        f.raw(" ");
        int status = -1;
        char* demangled = demangle ? abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status) : nullptr;
        f.raw(status == 0 && demangled ? demangled : info.dli_sname);
        std::free(demangled);
        f.raw("+0x");
        f.hex(reinterpret_cast<uintptr_t>(addrs[i]) - reinterpret_cast<uintptr_t>(info.dli_saddr), 4);
      }
      if (info.dli_fname) {
        // module+offset lets addr2line resolve frames dladdr cannot name
        // (static functions, executables linked without -rdynamic).
        f.raw(" (");
        f.raw(info.dli_fname);
        f.raw("+0x");
        f.hex(reinterpret_cast<uintptr_t>(addrs[i]) - reinterpret_cast<uintptr_t>(info.dli_fbase), 8);
        f.raw(")");
      }
    }
    frames[out][f.size() < 255 ? f.size() : 254] = '\0';
    ++out;
  }
  return out;
}

void emitError(const char* kind, const char* type, const char* message, const char* file, int line,
               const char* const* stack, size_t n) {
  // Errors carry long messages and stacks: 64 KiB, on the heap only here.
  static thread_local char buf[65536];
  LineBuf b(buf, sizeof buf - 2);
  head(b, "error");
  b.key("kind");
  b.str(kind);
  b.key("type");
  b.str(type);
  b.key("message");
  b.str(message);
  b.key("file");
  b.str(file);
  b.key("line");
  if (line > 0) {
    b.num(line);
  } else {
    b.raw("null");
  }
  b.key("stack");
  b.raw("[");
  for (size_t i = 0; i < n; ++i) {
    if (i) b.raw(",");
    b.str(stack[i]);
  }
  b.raw("]");
  emit(b);
}

void reportWithBacktrace(const char* kind, const char* type, const char* message, const char* file, int line,
                         int skip, bool in_signal_handler) {
  static char frames[48][256];
  int n = captureFrames(frames, 48, skip, !in_signal_handler);
  const char* ptrs[48];
  for (int i = 0; i < n; ++i) ptrs[i] = frames[i];
  emitError(kind, type, message, file, line, ptrs, static_cast<size_t>(n));
}

const char* signalMessage(int sig, const siginfo_t* info, char* buf, size_t cap) {
  LineBuf b(buf, cap - 1);
  b.raw(fl_fatal_signal_text(sig));
  if (fl_fatal_signal_has_address(sig, info)) {
    b.raw(" at address 0x");
    b.hex(reinterpret_cast<uintptr_t>(info->si_addr), 12);
  }
  buf[b.size()] = '\0';
  return buf;
}

void onFatalSignal(int sig, siginfo_t* info, void*) {
  int saved = errno;
  // After a terminate handler reported the exception, its abort() adds nothing.
  if (!g_error_reported.exchange(true)) {
    char msg[128];
    reportWithBacktrace("signal", fl_fatal_signal_type(sig), signalMessage(sig, info, msg, sizeof msg), nullptr, 0, 2, true);
  }
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  errno = saved;
  // Re-raise with the default action: the process dies by the same signal, so
  // the exit status its parent sees is unchanged. A synchronous fault re-faults
  // on return; an abort() or kill() needs the explicit raise.
  if (info == nullptr || info->si_code <= 0) ::raise(sig);
}

std::terminate_handler g_previous_terminate = nullptr;

// Where a LibTorch/Gloo exception says it was raised: c10::Error's
// "Exception raised from F at FILE:LINE" or an enforce's "[enforce fail at FILE:LINE]".
bool sourceLocation(const std::string& what, std::string& file, int& line) {
  size_t start = std::string::npos, end = std::string::npos;
  if (size_t p = what.find("Exception raised from "); p != std::string::npos) {
    start = what.find(" at ", p);
    if (start != std::string::npos) start += 4;
    end = what.find_first_of(" \n", start);
  } else if (size_t q = what.find("[enforce fail at "); q != std::string::npos) {
    start = q + 17;
    end = what.find(']', start);
  }
  if (start == std::string::npos || end == std::string::npos) return false;
  const std::string loc = what.substr(start, end - start);
  const size_t colon = loc.rfind(':');
  if (colon == std::string::npos || colon + 1 >= loc.size()) return false;
  char* tail = nullptr;
  long l = std::strtol(loc.c_str() + colon + 1, &tail, 10);
  if (l <= 0 || (*tail != '\0' && *tail != ']')) return false;
  file = loc.substr(0, colon);
  line = static_cast<int>(l);
  return true;
}

void onTerminate() {
  if (!g_error_reported.exchange(true)) {
    std::string type = "unknown";
    std::string what = "std::terminate called without an active exception";
    if (auto eptr = std::current_exception()) {
      if (const std::type_info* ti = abi::__cxa_current_exception_type()) {
        int status = -1;
        char* d = abi::__cxa_demangle(ti->name(), nullptr, nullptr, &status);
        type = status == 0 && d ? d : ti->name();
        std::free(d);
      }
      try {
        std::rethrow_exception(eptr);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
        what = "non-std exception";
      }
    }
    std::string file;
    int line = 0;
    sourceLocation(what, file, line);
    reportWithBacktrace("cpp_exception", type.c_str(), what.c_str(), file.empty() ? nullptr : file.c_str(), line, 2,
                        false);
  }
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}


// Scripted faults in a native trainer (FAULTLINE_FAULT, docs/SCENARIOS.md
// "Faults in any trainer"): the probe strikes them from its own step and
// collective calls, so a trainer that links it needs no code for them.
struct ArmedFault {
  faultline::probe::FaultSpec spec;
  bool struck = false;
  long op_calls = 0;  // calls of spec.op so far
};

struct ArmedFaults {
  std::mutex mu;
  std::vector<ArmedFault> faults;
  int64_t start_ns = 0;
  int64_t straggle_ms = 0;    // a struck straggler: sleep in every step from then on
  bool hang_pending = false;  // a struck hung_collective at a step or time: at the next collective
};

ArmedFaults& armed() {
  static ArmedFaults* a = [] {
    auto* out = new ArmedFaults;  // never destroyed: used until the process ends
    out->start_ns = fl_probe_now_ns();
    const char* text = std::getenv("FAULTLINE_FAULT");
    if (!text || !*text) return out;
    std::string all(text);
    for (size_t pos = 0; pos <= all.size();) {
      size_t end = all.find(';', pos);
      if (end == std::string::npos) end = all.size();
      const std::string one = all.substr(pos, end - pos);
      pos = end + 1;
      if (one.empty()) continue;
      auto spec = faultline::probe::parseFaultSpec(one);
      if (!spec) {
        std::fprintf(stderr, "faultline probe: FAULTLINE_FAULT '%s': %s\n", one.c_str(), spec.error().c_str());
        continue;
      }
      if (faultline::probe::layerStrikes(faultline::probe::FaultLayer::kProbe, spec->kind)) {
        out->faults.push_back({std::move(*spec)});
      }
    }
    return out;
  }();
  return *a;
}

void announceFault(const ArmedFault& f, int64_t step) {
  if (!fl_probe_init()) return;
  char buf[kLine];
  LineBuf b(buf, sizeof buf);
  head(b, "fault");
  b.key("kind");
  b.str(std::string(faultline::probe::faultKindName(f.spec.kind)).c_str());
  b.key("step");
  b.num(step);
  b.key("point");
  b.str(f.spec.point().c_str());
  b.key("source");
  b.str("probe");
  b.key("rule");
  b.str(f.spec.text().c_str());
  emit(b);
}

[[noreturn]] void hangForever() {
  for (;;) ::pause();
}

// Strikes `f` now; returns only for the kinds that go on (straggler, a pending hang, sigstop once continued).
void strike(ArmedFaults& a, ArmedFault& f, int64_t step, bool in_collective) {
  using faultline::probe::FaultKind;
  f.struck = true;
  announceFault(f, step);
  const auto arg = [&](long dflt) { return f.spec.arg.empty() ? dflt : std::strtol(f.spec.arg.c_str(), nullptr, 10); };
  switch (f.spec.kind) {
    case FaultKind::kExit: ::_exit(static_cast<int>(arg(1)));
    case FaultKind::kSigkill: ::raise(SIGKILL); break;
    case FaultKind::kSegfault: ::raise(SIGSEGV); break;
    case FaultKind::kAbort: std::abort();
    case FaultKind::kSigterm: ::raise(SIGTERM); break;
    case FaultKind::kSigstop: ::raise(SIGSTOP); break;
    case FaultKind::kStraggler: a.straggle_ms = arg(200); break;
    case FaultKind::kHungCollective:
      if (in_collective) hangForever();  // never enters it: its peers wait there
      a.hang_pending = true;
      break;
    default: break;
  }
}

// The probe's hook at a step's begin (step >= 1) or a collective's (op, seq).
void strikeDue(int64_t step, const char* op, int64_t seq) {
  ArmedFaults& a = armed();
  if (a.faults.empty()) return;
  std::unique_lock<std::mutex> lock(a.mu);
  const int rank = g_rank.load();
  const bool collective = op != nullptr;
  static int64_t current_step = 0;
  if (!collective) current_step = step;
  const double since_s = static_cast<double>(fl_probe_now_ns() - a.start_ns) / 1e9;
  for (ArmedFault& f : a.faults) {
    if (f.struck || !f.spec.targets(rank) || !f.spec.inAttempt(faultline::probe::launchAttempt())) continue;
    const auto& s = f.spec;
    bool due = false;
    if (s.after_s) {
      due = since_s >= *s.after_s;
    } else if (s.collective) {
      due = collective && seq == *s.collective;
    } else if (!s.op.empty()) {
      due = collective && s.op == op && ++f.op_calls == s.nth;
    } else {
      due = !collective && step == s.step;
    }
    if (due) strike(a, f, current_step, collective);
  }
  const int64_t sleep_ms = !collective ? a.straggle_ms : 0;
  const bool hang = collective && a.hang_pending;
  lock.unlock();
  if (hang) hangForever();
  if (sleep_ms > 0) {
    struct timespec ts{static_cast<time_t>(sleep_ms / 1000), static_cast<long>(sleep_ms % 1000) * 1000000L};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

}  // namespace

extern "C" {

int fl_probe_init(void) {
  std::call_once(g_init_once, initOnce);
  return g_fd.load() >= 0;
}

int fl_probe_active(void) { return fl_probe_init(); }

void fl_probe_set_rank(int rank) {
  std::call_once(g_init_once, [] {});
  std::lock_guard<std::mutex> lock(g_reinit_mutex);
  g_rank.store(rank);
  if (!(std::getenv("FAULTLINE_EVENTS") && *std::getenv("FAULTLINE_EVENTS"))) openEventsFile();
  if (g_fd.load() < 0) openEventsFile();
}

int64_t fl_probe_now_ns(void) {
  struct timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

#define FL_EVENT(name)              \
  if (!fl_probe_init()) return;     \
  char fl_buf_[kLine];              \
  LineBuf b(fl_buf_, sizeof fl_buf_); \
  head(b, name)

void fl_probe_start(int world_size, const char* backend, const char* device) {
  FL_EVENT("start");
  b.key("world_size");
  b.num(world_size);
  b.key("backend");
  b.str(backend);
  b.key("device");
  b.str(device);
  // A restarted rank's events follow its earlier attempts' in the same file.
  if (const int attempt = faultline::probe::launchAttempt(); attempt > 0) {
    b.key("attempt");
    b.num(attempt);
  }
  emit(b);
}

void fl_probe_pg_init_begin(const char* backend) {
  FL_EVENT("pg_init_begin");
  if (backend) {
    b.key("backend");
    b.str(backend);
  }
  emit(b);
}

void fl_probe_pg_init(const char* backend) {
  FL_EVENT("pg_init");
  b.key("backend");
  b.str(backend);
  emit(b);
}

void fl_probe_pg_destroy(const char* backend) {
  FL_EVENT("pg_destroy");
  b.key("backend");
  b.str(backend);
  emit(b);
}

static void stepEvent(const char* ev, int64_t step, int64_t epoch) {
  FL_EVENT(ev);
  b.key("step");
  b.num(step);
  b.key("epoch");
  b.num(epoch);
  emit(b);
}

void fl_probe_step_begin(int64_t step, int64_t epoch) {
  stepEvent("step_begin", step, epoch);
  strikeDue(step, nullptr, -1);
}
void fl_probe_step_end(int64_t step, int64_t epoch) { stepEvent("step_end", step, epoch); }

static void collectiveEvent(const char* ev, const char* op, int64_t seq, int64_t numel, const char* dtype,
                            const char* site) {
  FL_EVENT(ev);
  b.key("op");
  b.str(op);
  b.key("seq");
  b.num(seq);
  b.key("numel");
  b.num(numel);
  b.key("dtype");
  b.str(dtype);
  if (site && *site) {
    b.key("site");
    b.str(site);
  }
  emit(b);
}

void fl_probe_collective_begin(const char* op, int64_t seq, int64_t numel, const char* dtype) {
  strikeDue(-1, op ? op : "", seq);  // before the event: a hung rank never entered the collective
  collectiveEvent("collective_begin", op, seq, numel, dtype, nullptr);
}
void fl_probe_collective_begin_at(const char* op, int64_t seq, int64_t numel, const char* dtype, const char* site) {
  strikeDue(-1, op ? op : "", seq);
  collectiveEvent("collective_begin", op, seq, numel, dtype, site);
}
void fl_probe_collective_end(const char* op, int64_t seq, int64_t numel, const char* dtype) {
  collectiveEvent("collective_end", op, seq, numel, dtype, nullptr);
}

void fl_probe_fingerprint(const char* what, int64_t step, uint64_t hash) {
  FL_EVENT("fingerprint");
  b.key("what");
  b.str(what);
  b.key("step");
  b.num(step);
  b.key("hash");
  b.raw("\"");
  b.hex(hash, 16);
  b.raw("\"");
  emit(b);
}

void fl_probe_samples(int64_t epoch, int64_t count, uint64_t hash, int64_t first, int64_t last,
                      const int64_t* indices, size_t n) {
  if (!fl_probe_init()) return;
  // Up to 4096 indices of up to 20 digits each: sized on the heap.
  std::string storage(kLine + (indices && count <= 4096 ? n * 21 : 0), '\0');
  LineBuf b(storage.data(), storage.size());
  head(b, "samples");
  b.key("epoch");
  b.num(epoch);
  b.key("count");
  b.num(count);
  b.key("hash");
  b.raw("\"");
  b.hex(hash, 16);
  b.raw("\"");
  b.key("first");
  b.num(first);
  b.key("last");
  b.num(last);
  if (indices && count <= 4096) {
    b.key("indices");
    b.raw("[");
    for (size_t i = 0; i < n; ++i) {
      if (i) b.raw(",");
      b.num(indices[i]);
    }
    b.raw("]");
  }
  emit(b);
}

void fl_probe_metric(const char* name, double value, const char* scope, int64_t step) {
  FL_EVENT("metric");
  b.key("name");
  b.str(name);
  b.key("value");
  char num[64];
  // JSON has no NaN or Infinity: those become null rather than a broken line.
  if (value != value || value > 1.7e308 || value < -1.7e308) {
    b.raw("null");
  } else {
    std::snprintf(num, sizeof num, "%.17g", value);
    b.raw(num);
  }
  b.key("scope");
  b.str(scope);
  b.key("step");
  b.num(step);
  emit(b);
}

void fl_probe_file_open(const char* path, const char* mode) {
  FL_EVENT("file_open");
  std::string abs = path ? path : "";
  if (!abs.empty() && abs[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) abs = std::string(cwd) + "/" + abs;
  }
  b.key("path");
  b.str(abs.c_str());
  b.key("mode");
  b.str(mode);
  emit(b);
}

void fl_probe_fault(const char* kind, int64_t step) {
  FL_EVENT("fault");
  b.key("kind");
  b.str(kind);
  b.key("step");
  b.num(step);
  emit(b);
}

void fl_probe_error(const char* kind, const char* type, const char* message, const char* file, int line,
                    const char* const* stack, size_t n) {
  if (!fl_probe_init()) return;
  g_error_reported.store(true);
  emitError(kind, type, message, file, line, stack, n);
}

void fl_probe_exit(int code) {
  if (g_exit_recorded.exchange(true)) return;
  FL_EVENT("exit");
  b.key("code");
  b.num(code);
  emit(b);
}

uint64_t fl_probe_hash_indices(const int64_t* indices, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    // splitmix64 finaliser: a sum of well-mixed values is order-independent
    // and still separates different sets.
    uint64_t z = static_cast<uint64_t>(indices[i]) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    sum += z ^ (z >> 31);
  }
  return sum;
}

uint64_t fl_probe_hash_bytes(const void* data, size_t size, uint64_t seed) {
  uint64_t h = seed ? seed : 0xcbf29ce484222325ULL;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

void fl_probe_install_crash_handlers(void) {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  fl_probe_init();
  // backtrace() loads libgcc_s on first use, which allocates: do it now, not
  // inside a signal handler.
  void* warm[2];
  ::backtrace(warm, 2);
  // An alternate stack, so a stack overflow can still be reported.
  static char altstack[1 << 16];
  stack_t ss{};
  ss.ss_sp = altstack;
  ss.ss_size = sizeof altstack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = onFatalSignal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
  g_previous_terminate = std::set_terminate(onTerminate);
  // The status a call of exit() asked for, written before the static
  // destructors of the libraries loaded before main run: a thread still at
  // work then (a data loader calling into a torch whose operators are being
  // unregistered) may crash the process on its way out, and its exit status
  // says only that crash.
  ::on_exit([](int status, void*) { fl_probe_exit(status & 0xff); }, nullptr);
}

}  // extern "C"
