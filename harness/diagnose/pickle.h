// A reader for the data-only subset of Python's pickle format that torch's
// C++ pickler writes for Flight Recorder dumps (protocol 2: dicts, lists,
// tuples, strings, ints, floats, bools, None; memo puts and gets), into
// JSON (tuples become arrays). Anything else (a GLOBAL, a REDUCE: objects,
// tensors) is an error: the reader never builds objects and never runs code.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "harness/model/error.h"

namespace faultline::diagnose {

// Errors (kBadInput) name the opcode and its offset.
Result<nlohmann::json> unpickle(std::string_view bytes);

}  // namespace faultline::diagnose
