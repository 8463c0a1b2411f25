// Parsers for native (C++/loader/OOM/signal) evidence.
#include "harness/diagnose/native_error.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

#include "harness/diagnose/text.h"

namespace faultline::diagnose {

std::string demangle(const std::string& name) {
  if (!startsWith(name, "_Z")) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

std::optional<Location> parseC10Location(std::string_view text) {
  auto o = parseC10Origin(text);
  return o ? std::optional<Location>(o->location) : std::nullopt;
}

std::optional<NativeOrigin> parseC10Origin(std::string_view text) {
  constexpr std::string_view kHead = "Exception raised from ";
  const size_t p = text.find(kHead);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(p + kHead.size());
  rest = rest.substr(0, rest.find('\n'));
  const size_t at = rest.find(" at ");
  if (at == std::string_view::npos) return std::nullopt;
  const std::string function(trim(rest.substr(0, at)));
  std::string_view loc = rest.substr(at + 4);
  const size_t paren = loc.find(" (");
  loc = trim(loc.substr(0, paren));
  const size_t colon = loc.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  // More digits than an int holds is no line number (and would overflow).
  if (loc.size() - colon - 1 > 9) return std::nullopt;
  int line = 0;
  for (char c : loc.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    line = line * 10 + (c - '0');
  }
  if (colon == 0) return std::nullopt;
  return NativeOrigin{Location{std::string(loc.substr(0, colon)), line}, function};
}

std::optional<Evidence> parseTerminate(const std::vector<std::string_view>& lines) {
  constexpr std::string_view kHead = "terminate called after throwing an instance of '";
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view l = lines[i];
    const size_t p = l.find(kHead);
    const bool without = contains(l, "terminate called without an active exception");
    if (p == std::string_view::npos && !without) continue;
    Evidence e;
    e.kind = Kind::kCppException;
    e.origin = "stderr";
    if (without) {
      e.type = "std::terminate";
      e.message = "terminate called without an active exception";
      return e;
    }
    std::string_view t = l.substr(p + kHead.size());
    const size_t quote = t.find('\'');
    if (quote == 0 || trim(t).empty()) {
      // Killed while it printed the head: not even the type came out.
      e.type = "std::terminate";
      e.message = "terminate called after throwing an exception (its report was cut off)";
      e.cut_off = true;
      return e;
    }
    e.type = std::string(t.substr(0, quote));
    std::string rest;
    for (size_t k = i + 1; k < lines.size() && k < i + 200; ++k) {
      const std::string_view w = lines[k];
      const size_t wp = w.find("what():");
      if (wp != std::string_view::npos && e.message.empty()) {
        e.message = std::string(trim(w.substr(wp + 7)));
        rest.clear();
        continue;
      }
      if (e.message.empty()) {
        if (!trim(w).empty()) break;  // no what() line follows
        continue;
      }
      if (startsWith(w, "frame #") || contains(w, "Exception raised from")) {
        rest.append(w).push_back('\n');
        if (contains(w, "Exception raised from")) break;
        continue;
      }
      // c10 messages go on for a few lines before "Exception raised from".
      if (trim(w).empty() || k > i + 12) break;
      rest.append(w).push_back('\n');
    }
    e.location = parseC10Location(rest);
    // A type with no what() after it: killed before its message came out (a
    // std::exception always has one; a thrown int or other non-std type does
    // not, and its fuller record, the probe's, says so).
    e.cut_off = e.message.empty();
    if (e.type == "std::bad_alloc" || contains(e.message, "can't allocate memory") ||
        contains(e.message, "out of memory")) {
      e.kind = Kind::kOom;
    }
    return e;
  }
  return std::nullopt;
}

std::optional<Evidence> parseUndefinedSymbol(std::string_view line) {
  constexpr std::string_view kUndef = "undefined symbol: ";
  const size_t p = line.find(kUndef);
  if (p == std::string_view::npos) return std::nullopt;
  Evidence e;
  e.kind = Kind::kUndefinedSymbol;
  e.origin = "stderr";
  std::string_view sym = line.substr(p + kUndef.size());
  size_t end = 0;
  while (end < sym.size() && sym[end] != ' ' && sym[end] != ',' && sym[end] != '\'' && sym[end] != '"' &&
         sym[end] != ')' && sym[end] != '\t')
    ++end;
  sym = sym.substr(0, end);
  if (sym.empty()) return std::nullopt;
  e.symbol = demangle(std::string(sym));
  std::string_view before = line.substr(0, p);
  constexpr std::string_view kLookup = "symbol lookup error: ";
  const size_t lp = before.find(kLookup);
  std::string object;
  if (lp != std::string_view::npos) {
    e.type = "symbol lookup error";
    object = std::string(trim(before.substr(lp + kLookup.size())));
    e.exit_code = 127;
  } else {
    // "ImportError: /x/lib.so: undefined symbol: SYM" / "OSError: ..." / dlerror() text.
    const size_t colon = before.find(": ");
    if (colon != std::string_view::npos) {
      std::string_view head = before.substr(0, colon);
      if (head.find(' ') == std::string_view::npos && head.find('/') == std::string_view::npos) {
        e.type = std::string(head);
        before.remove_prefix(colon + 2);
      }
    }
    object = std::string(trim(before));
  }
  while (!object.empty() && (object.back() == ':' || object.back() == ' ')) object.pop_back();
  e.message = (object.empty() ? std::string() : object + ": ") + "undefined symbol: " + e.symbol;
  return e;
}

std::optional<Evidence> parseOom(std::string_view line) {
  struct Pattern {
    std::string_view needle;
    std::string_view type;
  };
  static constexpr Pattern kPatterns[] = {
      {"CUDA out of memory", "torch.cuda.OutOfMemoryError"},
      {"DefaultCPUAllocator: can't allocate memory", "c10::Error"},
      {"std::bad_alloc", "std::bad_alloc"},
      {"MemoryError", "MemoryError"},
      {"Cannot allocate memory", "ENOMEM"},
      {"out of memory", "out of memory"},
  };
  for (const auto& p : kPatterns) {
    if (!contains(line, p.needle)) continue;
    Evidence e;
    e.kind = Kind::kOom;
    e.origin = "stderr";
    e.type = std::string(p.type);
    e.message = std::string(trim(line));
    return e;
  }
  return std::nullopt;
}

std::optional<Evidence> parseFatalSignal(std::string_view line) {
  struct Pattern {
    std::string_view needle;
    std::string_view signal;
  };
  static constexpr Pattern kPatterns[] = {
      {"Segmentation fault", "SIGSEGV"}, {"Bus error", "SIGBUS"},
      {"Floating point exception", "SIGFPE"}, {"Illegal instruction", "SIGILL"},
      {"Aborted", "SIGABRT"},
  };
  const std::string_view t = trim(line);
  const bool python_fatal = startsWith(t, "Fatal Python error: ");
  for (const auto& p : kPatterns) {
    if (!contains(t, p.needle)) continue;
    // Only whole-line reports: the Python fatal error, or a shell's "Segmentation fault (core dumped)".
    if (!python_fatal && !(startsWith(t, p.needle) && t.size() <= p.needle.size() + 16)) continue;
    Evidence e;
    e.kind = Kind::kSignal;
    e.origin = "stderr";
    e.type = std::string(p.signal);
    e.signal = std::string(p.signal);
    e.message = std::string(t);
    return e;
  }
  return std::nullopt;
}

}  // namespace faultline::diagnose
