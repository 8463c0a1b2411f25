// How the trainer writes files: atomically (temp file + rename) by default,
// or in place and unsynchronised when a concurrent_writes fault asks for the
// classic bug. Every open for writing is announced as a file_open event. No LibTorch.
#pragma once

#include <string>
#include <string_view>

namespace faultline::trainer {

// Writes `bytes` to `path` through `path.tmp.<pid>` and rename(); throws
// std::runtime_error naming the path and errno on failure.
void writeFileAtomically(const std::string& path, std::string_view bytes);
// Opens `path` for writing without truncation coordination and writes `bytes`
// (truncating when `append` is false): what several ranks do when every rank
// runs rank 0's code.
void writeFileInPlace(const std::string& path, std::string_view bytes, bool append);
void makeDirectories(const std::string& dir);

}  // namespace faultline::trainer
