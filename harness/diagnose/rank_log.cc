// Rank output scanner: runs every evidence parser over a rank's text.
#include "harness/diagnose/rank_log.h"

#include <string.h>

#include <algorithm>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/earlier_failure.h"
#include "harness/diagnose/native_error.h"
#include "harness/diagnose/startup_error.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

constexpr std::string_view kPgNotDestroyed = "destroy_process_group() was not called";

std::optional<CollateralKind> collateralOf(const std::string& type, const std::string& message,
                                           const std::vector<Location>& frames) {
  // A connection lost while a DataLoader takes a batch from its worker is the
  // rank's own worker dying, not a peer: torch 1.13 can say so as
  // ConnectionResetError before its SIGCHLD handler says "killed by signal".
  auto c = classifyCollateral(type + ": " + message);
  if (c == CollateralKind::kPeerClosed && inDataLoader(frames)) return std::nullopt;
  return c;
}

void classify(Evidence& e) {
  if (auto c = collateralOf(e.type, e.message, e.frames)) {
    e.collateral = true;
    e.collateral_reason = collateralKindName(*c);
  }
}

}  // namespace

namespace {

// The chain's exceptions, outermost first: the one that propagated, back to
// its first cause, each followed by the chain torch's ExceptionWrapper
// embedded in its message (a DataLoader worker's traceback).
void flatten(const std::vector<PyTraceback>& chain, std::vector<const PyTraceback*>& out) {
  for (size_t i = chain.size(); i-- > 0;) {
    if (chain[i].type.empty()) continue;  // truncated: nothing to name
    out.push_back(&chain[i]);
    flatten(chain[i].embedded, out);
  }
}

// Exceptions that name no failure: how Python says "no more" or "nothing
// yet". As the innermost layer they are how the failure was noticed, not what failed.
bool namesNoFailure(const PyTraceback& tb) {
  const std::string t = tb.shortType();
  return tb.message.empty() && (t == "StopIteration" || t == "StopAsyncIteration" || t == "GeneratorExit" || t == "Empty");
}

Evidence fromTraceback(const PyTraceback& tb, const LibraryPaths& lib) {
  Evidence e;
  e.kind = Kind::kPythonException;
  e.origin = "stderr";
  e.type = tb.type;
  e.message = tb.message;
  for (const PyFrame& f : tb.frames) {
    e.frames.push_back(Location{f.file, f.line});
    e.frame_sources.push_back(f.source);
  }
  pickLocation(e, lib);
  if (!e.location && tb.innermost()) {
    e.location = Location{tb.innermost()->file, tb.innermost()->line};
    e.source_line = tb.innermost()->source;
  }
  if (auto o = parseC10Origin(tb.full_message)) {
    e.native_location = o->location;
    e.native_function = o->function;
  }
  return e;
}

}  // namespace

bool pickLocation(Evidence& e, const LibraryPaths& lib) {
  for (size_t i = e.frames.size(); i-- > 0;) {
    if (!lib.isLibrary(e.frames[i].file)) {
      e.location = e.frames[i];
      e.source_line = i < e.frame_sources.size() ? e.frame_sources[i] : std::string();
      return true;
    }
  }
  return false;
}

Evidence evidenceFromChain(const PyChain& chain, const LibraryPaths& lib) {
  std::vector<const PyTraceback*> onion;
  flatten(chain.tracebacks, onion);
  if (onion.empty()) return fromTraceback(chain.original(), lib);
  // Each layer read once: the root, the others' one-liners, their frames.
  std::vector<Evidence> layers;
  layers.reserve(onion.size());
  for (const PyTraceback* tb : onion) layers.push_back(fromTraceback(*tb, lib));
  size_t root = onion.size() - 1;
  while (root > 0 && namesNoFailure(*onion[root])) --root;
  Evidence e = layers[root];
  // A first cause raised and caught inside a library (torch.save's writer,
  // out of disk space) has no frame of the user's: the user's code was where
  // the nearest outer layer says (the torch.save call that saw it fail).
  if (e.location && lib.isLibrary(e.location->file)) {
    for (size_t i = root; i-- > 0;) {
      const Evidence& outer = layers[i];
      if (outer.location && !lib.isLibrary(outer.location->file)) {
        e.location = outer.location;
        e.source_line = outer.source_line;
        break;
      }
    }
  }
  for (size_t i = 0; i < onion.size(); ++i) {
    if (i == root) continue;
    (i < root ? e.chain : e.inner).push_back(describe(layers[i]));
  }
  e.thread = chain.original().thread;  // threading.excepthook's line comes before the first traceback
  classify(e);
  refineKind(e);
  for (size_t i = 0; i < onion.size(); ++i) {
    // A collateral error that triggers another one (peer closed -> cleanup fails) stays collateral.
    if (auto c = collateralOf(onion[i]->type, onion[i]->message, layers[i].frames); c && !e.collateral) {
      e.collateral = true;
      e.collateral_reason = collateralKindName(*c);
    }
  }
  return e;
}

RankLog scanRankLog(std::string_view text) {
  RankLog out;
  // torch 2.x prefixes a rank's traceback lines with "[rank1]: " (and a
  // --tee capture adds "[default1]:"); the parsers see the lines without them.
  const std::vector<std::string_view> whole_lines = splitLines(text);  // to find a line by offset
  std::vector<std::string_view> lines = whole_lines;
  for (std::string_view& l : lines) {
    // Another process writing to the same stderr can push the prefix off the
    // start: torch's DataLoader worker crash report ends in its string's NUL
    // ("...encountered in worker.\n\0"), so the next line reads "\0[rank1]: Traceback".
    std::string_view t = l;
    while (!t.empty() && (t.front() == '\0' || t.front() == ' ')) t.remove_prefix(1);
    l = stripRankPrefixes(t.size() < l.size() && splitRankPrefix(t) ? t : l);
  }
  const std::vector<PyChain> chains = parsePythonTracebacks(lines);
  std::vector<std::pair<size_t, size_t>> covered;  // line ranges inside tracebacks
  struct Found {
    size_t line;
    Evidence e;
  };
  std::vector<Found> found;
  for (const PyChain& chain : chains) {
    covered.emplace_back(chain.tracebacks.front().first_line, chain.tracebacks.back().last_line);
    if (chain.original().type.empty()) continue;  // truncated: nothing to name
    found.push_back({chain.tracebacks.front().first_line, evidenceFromChain(chain)});
  }
  auto inTraceback = [&](size_t i) {
    for (const auto& [a, b] : covered) {
      if (i >= a && i <= b) return true;
    }
    return false;
  };
  // The per-line parsers run only on lines holding one of their anchors,
  // found with memmem over the whole text: logs are large, evidence is rare.
  static constexpr std::string_view kAnchors[] = {
      "terminate called", "undefined symbol: ", "Fatal Python error", "Segmentation fault", "Bus error",
      "Floating point exception", "Illegal instruction", "Aborted", "out of memory", "can't allocate memory",
      "bad_alloc", "MemoryError", "Cannot allocate memory", "encountered in worker", "can't open file '", ": error: ",
  };
  std::vector<size_t> hit_lines;
  for (std::string_view a : kAnchors) {
    const char* base = text.data();
    size_t pos = 0;
    while (pos < text.size()) {
      const void* p = memmem(base + pos, text.size() - pos, a.data(), a.size());
      if (!p) break;
      const size_t off = static_cast<size_t>(static_cast<const char*>(p) - base);
      // The line holding `off`: the last line starting at or before it.
      auto it = std::upper_bound(whole_lines.begin(), whole_lines.end(), off, [&](size_t o, std::string_view l) {
        return o < static_cast<size_t>(l.data() - base);
      });
      if (it != whole_lines.begin()) {
        const size_t li = static_cast<size_t>(it - whole_lines.begin()) - 1;
        hit_lines.push_back(li);
        pos = static_cast<size_t>(whole_lines[li].data() - base) + whole_lines[li].size() + 1;  // next line
      } else {
        pos = off + 1;
      }
    }
  }
  // The reference trainer's fault announcements (reference-trainer/faults.cc).
  static constexpr std::string_view kAnnounce = "] injecting fault ";
  for (size_t pos = 0; pos < text.size();) {
    const void* p = memmem(text.data() + pos, text.size() - pos, kAnnounce.data(), kAnnounce.size());
    if (!p) break;
    const size_t at = static_cast<size_t>(static_cast<const char*>(p) - text.data()) + kAnnounce.size();
    size_t end = at;
    while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
    const size_t nl = text.rfind('\n', at);
    const size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
    if (end > at && text.substr(line_start, at - line_start).find("[faultline-trainer rank ") != std::string_view::npos) {
      out.announced_faults.emplace_back(text.substr(at, end - at));
    }
    pos = end;
  }
  std::sort(hit_lines.begin(), hit_lines.end());
  hit_lines.erase(std::unique(hit_lines.begin(), hit_lines.end()), hit_lines.end());
  for (size_t i : hit_lines) {
    const std::string_view l = lines[i];
    if (inTraceback(i)) continue;
    if (contains(l, "terminate called")) {
      const size_t end = std::min(lines.size(), i + 300);
      std::vector<std::string_view> rest(lines.begin() + static_cast<long>(i), lines.begin() + static_cast<long>(end));
      if (auto e = parseTerminate(rest)) {
        classify(*e);
        refineKind(*e);
        found.push_back({i, std::move(*e)});
      }
      continue;
    }
    if (auto e = parseUndefinedSymbol(l)) {
      found.push_back({i, std::move(*e)});
      continue;
    }
    if (auto e = parseWorkerFatal(l)) {
      found.push_back({i, std::move(*e)});
      continue;
    }
    if (auto e = parseFatalSignal(l)) {
      // faulthandler prints the stack right after "Fatal Python error".
      std::string dump;
      for (size_t k = i + 1; k < lines.size() && k < i + 200; ++k) {
        dump.append(lines[k]).push_back('\n');
      }
      const std::vector<StackThread> threads = parseStackDump(dump);  // must outlive f
      if (const PyFrame* f = userFrame(threads)) e->location = Location{f->file, f->line};
      found.push_back({i, std::move(*e)});
      continue;
    }
    if (contains(l, "what():")) continue;  // part of a terminate block
    if (auto e = parseOom(l)) {
      found.push_back({i, std::move(*e)});
      continue;
    }
    if (auto e = parseCantOpenFile(l)) {
      found.push_back({i, std::move(*e)});
      continue;
    }
    if (auto e = parseUsageError(lines, i)) {
      found.push_back({i, std::move(*e)});
      continue;
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.line < b.line; });
  for (auto& f : found) out.errors.push_back(std::move(f.e));
  if (const size_t w = text.find(kPgNotDestroyed); w != std::string_view::npos) {
    for (std::string_view l : lines) {
      if (l.data() <= text.data() + w && text.data() + w < l.data() + l.size()) {
        out.pg_not_destroyed = std::string(trim(l));
        break;
      }
    }
  }
  // Stack dumps (SIGUSR1 faulthandler output goes to the rank's stderr).
  if (contains(text, "(most recent call first):")) out.stacks = parseStackDump(text);
  return out;
}

const Evidence* terminalError(const std::vector<Evidence>& errors) {
  const Evidence* last_primary = nullptr;
  const Evidence* last_collateral = nullptr;
  const Evidence* last_cpp = nullptr;
  const Evidence* last_python = nullptr;
  // A report cut short counts only where nothing fuller was recorded.
  const bool any_whole = std::any_of(errors.begin(), errors.end(), [](const Evidence& e) { return !e.cut_off; });
  for (const Evidence& e : errors) {
    if (e.cut_off && any_whole) continue;
    if (e.collateral) {
      last_collateral = &e;
    } else {
      last_primary = &e;
      if (e.kind == Kind::kCppException || e.kind == Kind::kOom || e.kind == Kind::kUndefinedSymbol) last_cpp = &e;
      if (e.kind == Kind::kPythonException) last_python = &e;
    }
  }
  // An abort after an exception is how the exception ended the process:
  // terminate() after a C++ throw, or an interpreter that aborts on its way
  // out after an uncaught Python exception (a fatal error at shutdown), which
  // a crash handler then reports as SIGABRT.
  if (last_primary && last_primary->kind == Kind::kSignal && last_primary->signal == "SIGABRT" &&
      (last_cpp || last_python)) {
    return last_cpp ? last_cpp : last_python;
  }
  return last_primary ? last_primary : last_collateral;
}

}  // namespace faultline::diagnose
