// The torchelastic error file (TORCHELASTIC_ERROR_FILE), written by
// @record-decorated entry points: {"message": {"message": "T: msg",
// "extraInfo": {"py_callstack": "Traceback ...", "timestamp": "<seconds>"}}}.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "harness/diagnose/evidence.h"

namespace faultline::diagnose {

// nullopt for text that is not such a JSON document (malformed, truncated).
std::optional<Evidence> parseErrorFile(std::string_view text);

}  // namespace faultline::diagnose
