// Earlier failures of a rank's parts (threads, DataLoader workers) as the cause of its later error.
#include "harness/diagnose/earlier_failure.h"

#include <string.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "harness/model/outcome.h"

namespace faultline::diagnose {
namespace {

constexpr std::string_view kWorker = "DataLoader worker (pid";

// libc's strsignal text ("Killed", "Segmentation fault") back to a signal name.
std::optional<std::string> signalFromText(std::string_view text) {
  text = trim(text);
  while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.remove_suffix(1);
  for (int s = 1; s < 65; ++s) {
    const char* d = strsignal(s);
    if (d && text == d) return signalName(s);
  }
  return std::nullopt;
}

bool isTeardownSignalName(const std::string& s) { return s == "SIGTERM" || s == "SIGINT" || s == "SIGHUP"; }

// Does `e` come before `later` in the rank's output? Events by their clock; the
// same text file by position (errors keep the order they were found in).
bool precedes(const std::vector<Evidence>& errors, size_t e, size_t later) {
  const Evidence& a = errors[e];
  const Evidence& b = errors[later];
  if (a.origin == "events.jsonl" && b.origin == "events.jsonl" && a.t_ns && b.t_ns) return *a.t_ns < *b.t_ns;
  if (a.origin == b.origin) return e < later;
  // Two sources, both timed: in order only when certainly so. A torchelastic
  // error file's time is whole seconds (it happened within the second after);
  // on a node of a multi-node job it is a rank's only error file.
  if (a.t_ns && b.t_ns) {
    const int64_t a_latest = *a.t_ns + (a.origin == "error.json" ? 1'000'000'000 : 1);
    return a_latest <= *b.t_ns;
  }
  return false;
}

}  // namespace

std::optional<Evidence> parseWorkerDeath(std::string_view text) {
  const size_t p = text.find(kWorker);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(p);
  // "(pid 123)" or "(pid(s) 123, 124)": the parenthesis that closes the pids.
  const size_t pids = kWorker.size() + (startsWith(rest.substr(kWorker.size()), "(s)") ? 3 : 0);
  const size_t close = rest.find(')', pids);
  if (close == std::string_view::npos) return std::nullopt;
  Evidence e;
  e.origin = "stderr";
  e.worker = std::string(rest.substr(0, close + 1));
  std::string_view after = rest.substr(close + 1);
  after = after.substr(0, after.find('\n'));
  constexpr std::string_view kSignal = " is killed by signal: ";
  constexpr std::string_view kExit = " exited unexpectedly";
  if (startsWith(after, kSignal)) {
    std::string_view what = after.substr(kSignal.size());
    auto sig = signalFromText(what.substr(0, what.find(". ")));
    if (!sig) return std::nullopt;
    e.kind = Kind::kSignal;
    e.signal = *sig;
    e.type = *sig;
    if (*sig == "SIGKILL") e.note = "possible OOM kill (SIGKILL with no other evidence)";
    if (isTeardownSignalName(*sig)) {
      e.collateral = true;
      e.collateral_reason = collateralKindName(CollateralKind::kTeardownSignal);
    }
  } else if (startsWith(after, kExit)) {
    e.kind = Kind::kExitCode;
    constexpr std::string_view kCode = " with exit code ";
    if (startsWith(after.substr(kExit.size()), kCode)) {
      std::string_view c = after.substr(kExit.size() + kCode.size());
      int v = 0;
      size_t k = 0;
      for (; k < c.size() && k < 9 && c[k] >= '0' && c[k] <= '9'; ++k) v = v * 10 + (c[k] - '0');
      if (k > 0) e.exit_code = v;
    }
    if (e.exit_code) e.type = "exit code " + std::to_string(*e.exit_code);
  } else {
    return std::nullopt;
  }
  e.message = std::string(trim(rest.substr(0, rest.find('\n'))));
  while (!e.message.empty() && e.message.back() == ' ') e.message.pop_back();
  return e;
}

std::optional<Evidence> parseWorkerFatal(std::string_view line) {
  constexpr std::string_view kHead = "ERROR: Unexpected ";
  constexpr std::string_view kTail = " encountered in worker.";
  const std::string_view t = trim(line);
  const size_t h = t.find(kHead);
  const size_t w = t.find(kTail);
  if (h == std::string_view::npos || w == std::string_view::npos || w < h) return std::nullopt;
  const std::string_view what = t.substr(h + kHead.size(), w - h - kHead.size());
  std::string sig;
  if (what == "segmentation fault") sig = "SIGSEGV";
  else if (what == "bus error") sig = "SIGBUS";
  else if (what == "floating-point exception") sig = "SIGFPE";
  else return std::nullopt;
  Evidence e;
  e.kind = Kind::kSignal;
  e.origin = "stderr";
  e.signal = sig;
  e.type = sig;
  e.worker = "DataLoader worker";
  e.message = std::string(t.substr(h + 7));  // without "ERROR: "
  return e;
}

bool inDataLoader(const std::vector<Location>& frames) {
  return std::any_of(frames.begin(), frames.end(),
                     [](const Location& f) { return f.file.find("torch/utils/data/") != std::string::npos; });
}

namespace {

// Whether torch's "DataLoader worker (pid(s) 12, 345)" names this pid.
bool namesPid(const std::string& worker, int pid) {
  const std::string p = std::to_string(pid);
  for (size_t at = worker.find(p); at != std::string::npos; at = worker.find(p, at + 1)) {
    const bool starts = at == 0 || !std::isdigit(static_cast<unsigned char>(worker[at - 1]));
    const size_t end = at + p.size();
    const bool ends = end == worker.size() || !std::isdigit(static_cast<unsigned char>(worker[end]));
    if (starts && ends) return true;
  }
  return false;
}

// The main process lost its connection to one of its DataLoader workers: the
// read of a batch, or of the fd a tensor comes through, found the other end
// gone (reset, closed, end of file).
bool lostItsWorker(const Evidence& e) {
  static constexpr std::string_view kLost[] = {"ConnectionResetError", "ConnectionAbortedError", "BrokenPipeError",
                                               "EOFError", "ConnectionError"};
  const bool lost = std::find(std::begin(kLost), std::end(kLost), e.type) != std::end(kLost) ||
                    classifyCollateral(e.type + ": " + e.message) == CollateralKind::kPeerClosed;
  return lost && inDataLoader(e.frames);
}

// The worker whose connection the main process lost, from what says it
// died: the supervisor's exit of a child of the rank (pid and signal) and the
// worker's own crash report (torch's handler line), either or both.
std::optional<Evidence> workerCrash(const Evidence* report, const ProcessExit* exit, const Evidence& lost) {
  if (!report && !exit) return std::nullopt;
  Evidence e;
  if (report) e = *report;
  e.kind = Kind::kSignal;
  if (exit) {
    e.signal = *exit->signal;
    e.type = *exit->signal;
    e.worker = "DataLoader worker (pid " + std::to_string(exit->pid) + ")";
  } else {
    e.worker = "DataLoader worker";
  }
  e.message = e.worker + " died of " + e.signal;
  if (report) e.message += " (its own report: \"" + report->message + "\")";
  e.note = "the main process then lost its connection to it (" + lost.type + ")";
  e.origin = lost.origin;
  e.t_ns = lost.t_ns;
  return e;
}

// A worker death torch says no more of than "exited unexpectedly": of the
// signal the supervisor saw the worker it names die of, if it did.
void howItDied(Evidence& death, const std::vector<ProcessExit>& crashed_children) {
  if (death.kind != Kind::kExitCode || death.exit_code) return;
  for (const ProcessExit& c : crashed_children) {
    if (!namesPid(death.worker, c.pid)) continue;
    death.kind = Kind::kSignal;
    death.signal = *c.signal;
    death.type = *c.signal;
    return;
  }
}

// A worker death torch raised in a collective, caught by the trainer before
// `term` (rankFailure): its kind from what torch says, else from the
// supervisor's record of the worker; the caught exception its layer.
std::optional<Evidence> caughtWorkerDeath(const std::vector<Evidence>& caught,
                                          const std::vector<ProcessExit>& crashed_children, const Evidence& term) {
  for (const Evidence& c : caught) {
    if (term.t_ns && c.t_ns && *c.t_ns > *term.t_ns) continue;
    std::optional<Evidence> death = parseWorkerDeath(c.message);
    if (!death) continue;
    death->origin = c.origin;
    death->t_ns = c.t_ns;
    howItDied(*death, crashed_children);
    death->chain = {describe(c) + "; " + c.note};
    death->note = c.note;
    return death;
  }
  return std::nullopt;
}

}  // namespace

std::optional<Evidence> rankFailure(const std::vector<Evidence>& errors, const std::vector<ProcessExit>& crashed_children,
                                    const std::vector<Evidence>& caught) {
  const Evidence* term = terminalError(errors);
  if (!term) return std::nullopt;
  const size_t ti = static_cast<size_t>(term - errors.data());
  if (!term->thread.empty() || !term->worker.empty()) return *term;  // already a part's own failure
  std::optional<Evidence> cause;
  // The worker death the error reports (torch raises it where the main
  // process noticed: a SIGCHLD handler, a queue that stayed empty).
  std::vector<std::string> texts{term->message};
  texts.insert(texts.end(), term->inner.begin(), term->inner.end());
  texts.insert(texts.end(), term->chain.rbegin(), term->chain.rend());
  for (const std::string& t : texts) {
    if ((cause = parseWorkerDeath(t))) break;
  }
  if (cause) {
    cause->origin = term->origin;
    cause->t_ns = term->t_ns;
    // The worker's own report of its crash (torch's handler line, faulthandler's
    // dump) says more: where, and why (shared memory for a bus error). Any
    // file of the rank's may hold it, but not after the error in the same file.
    for (size_t i = 0; i < errors.size(); ++i) {
      const Evidence& w = errors[i];
      if (i == ti || w.kind != Kind::kSignal || precedes(errors, ti, i)) continue;
      // "exited unexpectedly" (noticed by a queue that stayed empty) does not
      // say how; the worker's own report of a fatal signal does.
      if (cause->kind == Kind::kExitCode && !cause->exit_code && !w.worker.empty()) {
        cause->kind = Kind::kSignal;
        cause->signal = w.signal;
        cause->type = w.signal;
      }
      if (w.signal != cause->signal) continue;
      if (w.location && !cause->location) cause->location = w.location;
      if (!w.function.empty() && cause->function.empty()) cause->function = w.function;
      if (!w.worker.empty() && cause->note.empty()) cause->note = w.message;
    }
    // Still unexplained: the supervisor saw the worker torch names die, and of what.
    howItDied(*cause, crashed_children);
  } else if (lostItsWorker(*term)) {
    // No sentence of torch's names the dead worker; a child of the rank that
    // died of a signal before the error (the supervisor saw it), and the
    // worker's own crash report before the lost connection, do.
    const Evidence* report = nullptr;
    for (size_t i = 0; i < errors.size() && !report; ++i) {
      const Evidence& w = errors[i];
      if (i != ti && w.kind == Kind::kSignal && !w.worker.empty() && !precedes(errors, ti, i)) report = &w;
    }
    // The supervisor stamps an exit when it reads the proc connector's event,
    // which can come a little after the rank's own error event under load.
    constexpr int64_t kExitStampSlackNs = 500'000'000;
    const ProcessExit* exit = nullptr;
    for (const ProcessExit& c : crashed_children) {
      if (!term->t_ns || c.t_ns <= *term->t_ns + kExitStampSlackNs) {
        if (!report || report->signal == *c.signal) exit = &c;
        break;
      }
    }
    cause = workerCrash(report, exit, *term);
  }
  if (!cause && term->collateral) cause = caughtWorkerDeath(caught, crashed_children, *term);
  if (!cause) {
    // A thread that died before the rank's error, of its own fault.
    for (size_t i = 0; i < errors.size() && !cause; ++i) {
      const Evidence& e = errors[i];
      if (i != ti && !e.thread.empty() && !e.collateral && precedes(errors, i, ti)) cause = e;
    }
  }
  if (!cause || cause->collateral) return *term;
  // The later error and its wrappers are the outer layers, outermost first.
  // The later error's own inner layers (the queue.Empty that noticed a dead
  // worker) lie between it and the earlier failure.
  std::vector<std::string> outer = term->chain;
  outer.push_back(describe(*term));
  outer.insert(outer.end(), term->inner.begin(), term->inner.end());
  outer.insert(outer.end(), cause->chain.begin(), cause->chain.end());
  cause->chain = std::move(outer);
  return cause;
}

}  // namespace faultline::diagnose
