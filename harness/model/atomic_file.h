// Whole-file writes that a reader never sees half done: temp file + rename().
#pragma once

#include <string>
#include <string_view>

#include "harness/model/error.h"

namespace faultline {

// Writes `text` to `path` through `path.tmp`; kIo naming the file and errno on failure.
Result<void> writeFileAtomically(const std::string& path, std::string_view text);

}  // namespace faultline
