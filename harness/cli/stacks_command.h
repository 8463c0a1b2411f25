// `faultline stacks`: every stack this machine can drive, its torch version,
// what it starts, and whether it works (with the reason when it does not).
#pragma once

#include <iosfwd>
#include <string>

namespace faultline::cli {

// `json`: one object per stack instead of the table. Exit status 0, or 1 when
// no stack but external works.
int stacksCommand(const std::string& self_exe, bool json, std::ostream& out, std::ostream& err);

}  // namespace faultline::cli
