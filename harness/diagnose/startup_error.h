// A program that ends before it ran any code of its own: the interpreter
// could not open the script, or argparse rejected the command line. Neither
// is a traceback; both are the whole story of the rank's exit.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "harness/diagnose/evidence.h"

namespace faultline::diagnose {

// CPython's "python3: can't open file '/app/train.py': [Errno 2] No such file
// or directory" (Modules/main.c). Kind exit_code, the line as the message.
std::optional<Evidence> parseCantOpenFile(std::string_view line);

// argparse's "PROG: error: MESSAGE" right after its "usage: PROG ..." block
// (ArgumentParser.error exits 2). `i` is the "error:" line; nullopt unless a
// "usage:" line comes before it, within 40 lines.
std::optional<Evidence> parseUsageError(const std::vector<std::string_view>& lines, size_t i);

}  // namespace faultline::diagnose
