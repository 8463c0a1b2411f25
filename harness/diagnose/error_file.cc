// Parser for torchelastic error files.
#include "harness/diagnose/error_file.h"

#include <cstdint>

#include <nlohmann/json.hpp>

#include "harness/diagnose/collateral.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {

std::optional<Evidence> parseErrorFile(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(sanitizeUtf8(text), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("message")) return std::nullopt;
  const nlohmann::json& m = j["message"];
  std::string message;
  std::string callstack;
  std::optional<int64_t> t_ns;
  if (m.is_string()) {
    message = m.get<std::string>();
  } else if (m.is_object()) {
    if (m.contains("message") && m["message"].is_string()) message = m["message"].get<std::string>();
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      const auto& x = m["extraInfo"];
      if (x.contains("py_callstack") && x["py_callstack"].is_string()) callstack = x["py_callstack"].get<std::string>();
      if (x.contains("timestamp")) {
        int64_t secs = 0;
        if (x["timestamp"].is_string()) {
          try {
            secs = std::stoll(x["timestamp"].get<std::string>());
          } catch (...) {
            secs = 0;
          }
        } else if (x["timestamp"].is_number_integer()) {
          secs = x["timestamp"].get<int64_t>();
        }
        // Past INT64_MAX ns (year 2262) is no real time, and would overflow.
        if (secs > 0 && secs <= INT64_MAX / 1'000'000'000) t_ns = secs * 1'000'000'000;
      }
    }
  } else {
    return std::nullopt;
  }
  Evidence e;
  e.kind = Kind::kPythonException;
  e.origin = "error.json";
  e.t_ns = t_ns;  // whole seconds only: used when nothing finer exists
  auto chains = parsePythonTracebacks(callstack);
  if (!chains.empty() && !chains.back().original().type.empty()) {
    e = evidenceFromChain(chains.back());
    e.origin = "error.json";
    e.t_ns = t_ns;
    return e;
  } else {
    const size_t colon = message.find(": ");
    if (colon != std::string::npos && message.find(' ') > colon) {
      e.type = message.substr(0, colon);
      e.message = message.substr(colon + 2);
    } else {
      e.message = message;
    }
  }
  if (auto c = classifyCollateral(e.type + ": " + e.message)) {
    e.collateral = true;
    e.collateral_reason = collateralKindName(*c);
  }
  return e;
}

}  // namespace faultline::diagnose
