// Native evidence in a rank's output: uncaught C++ exceptions (std::terminate,
// c10::Error's "Exception raised from"), dynamic-loader undefined symbols,
// out-of-memory texts, and fatal-signal messages.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/diagnose/evidence.h"

namespace faultline::diagnose {

// abi::__cxa_demangle of a mangled C++ name ("_ZN3foo3barEv" -> "foo::bar()");
// the input unchanged when it is no mangled name.
std::string demangle(const std::string& name);

// "terminate called after throwing an instance of 'c10::Error'" + "  what():  ..."
// (message up to the first line; location from "Exception raised from F at FILE:LINE").
std::optional<Evidence> parseTerminate(const std::vector<std::string_view>& lines);

// c10's "Exception raised from FUNC at FILE:LINE (most recent call first):" anywhere in text.
struct NativeOrigin {
  Location location;
  std::string function;  // FUNC ("meta", "throwTimeoutError")
};
std::optional<NativeOrigin> parseC10Origin(std::string_view text);
std::optional<Location> parseC10Location(std::string_view text);

// "prog: symbol lookup error: /lib.so: undefined symbol: _Z..." (exit 127) or a
// dlopen/ImportError/OSError message "...: undefined symbol: SYM". The symbol is demangled.
std::optional<Evidence> parseUndefinedSymbol(std::string_view line);

// "std::bad_alloc", "DefaultCPUAllocator: can't allocate memory", "CUDA out of
// memory", "MemoryError", "Cannot allocate memory": an oom Evidence.
std::optional<Evidence> parseOom(std::string_view line);

// "Fatal Python error: Segmentation fault", "Segmentation fault (core dumped)",
// "Aborted (core dumped)": a signal Evidence with the signal name.
std::optional<Evidence> parseFatalSignal(std::string_view line);

}  // namespace faultline::diagnose
