// Evidence helpers.
#include "harness/diagnose/evidence.h"

#include "harness/diagnose/native_error.h"

namespace faultline::diagnose {

std::string describe(const Evidence& e) {
  std::string s;
  if (e.kind == Kind::kUndefinedSymbol && (e.type.empty() || e.type == "symbol lookup error")) {
    s = "undefined symbol: " + e.symbol;
  } else if (e.kind == Kind::kUndefinedSymbol) {
    s = e.type + ": undefined symbol: " + e.symbol;
  } else if (e.kind == Kind::kSignal) {
    s = e.signal.empty() ? e.type : e.signal;
    if (!e.function.empty()) s += " in " + e.function;
    if (!e.message.empty()) s += " (" + e.message + ")";
  } else {
    s = e.type;
    if (!e.message.empty()) s += (s.empty() ? "" : ": ") + e.message;
  }
  if (e.location) {
    std::string file = e.location->file;
    s += " (" + file + ":" + std::to_string(e.location->line) + ")";
  }
  if (!e.thread.empty()) s += " in thread " + e.thread;
  if (!e.worker.empty() && e.message.find(e.worker) == std::string::npos) s += " in " + e.worker;
  return s;
}

std::string describeNativeOrigin(const Evidence& e) {
  if (!e.native_location) return {};
  std::string s = "raised in C++";
  if (!e.native_function.empty()) s += " from " + e.native_function;
  return s + " at " + e.native_location->file + ":" + std::to_string(e.native_location->line);
}

void refineKind(Evidence& e) {
  if (e.collateral || e.kind == Kind::kSignal) return;
  const std::string text = e.type + ": " + e.message;
  if (e.kind != Kind::kUndefinedSymbol) {
    if (auto u = parseUndefinedSymbol(text)) {
      e.kind = Kind::kUndefinedSymbol;
      e.symbol = u->symbol;
      return;
    }
  }
  if (e.kind == Kind::kCppException || e.kind == Kind::kPythonException) {
    if (parseOom(text)) e.kind = Kind::kOom;
  }
}

}  // namespace faultline::diagnose
