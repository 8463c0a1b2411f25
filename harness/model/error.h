// The harness's error value: a code chosen by what the caller should do next,
// a message (lower case, concrete values, no trailing period) and context.
#pragma once

#include <string>
#include <utility>

#include <tl/expected.hpp>

namespace faultline {

enum class ErrorCode {
  kBadUsage,   // the command line is wrong: exit 2
  kBadInput,   // an input file is wrong (names file:line:col): exit 2
  kIo,         // a file or directory could not be read or written
  kSystem,     // a system call failed (names the call and errno)
  kHarness,    // faultline itself failed: exit 3
};

struct Error {
  ErrorCode code = ErrorCode::kHarness;
  std::string message;
  std::string context;  // e.g. the path or the pid involved

  std::string str() const { return context.empty() ? message : context + ": " + message; }
};

template <class T>
using Result = tl::expected<T, Error>;

inline tl::unexpected<Error> fail(ErrorCode code, std::string message, std::string context = {}) {
  return tl::unexpected<Error>(Error{code, std::move(message), std::move(context)});
}

// Maps an error to the exit status of CONTRACT.md section 1.
inline int exitCodeFor(const Error& e) {
  switch (e.code) {
    case ErrorCode::kBadUsage:
    case ErrorCode::kBadInput:
      return 2;
    default:
      return 3;
  }
}

}  // namespace faultline
