// Whole-file writes that a reader never sees half done: temp file + rename().
#pragma once

#include <string>
#include <string_view>

#include "harness/model/error.h"

namespace faultline {

// Writes `text` to `path` through `path.tmp`: EINTR is retried; any other
// failure (ENOSPC, EMFILE, EIO, ...) is kIo naming the file, the call and
// errno, the temp file is removed, and `path` keeps what it held before.
Result<void> writeFileAtomically(const std::string& path, std::string_view text);

}  // namespace faultline
