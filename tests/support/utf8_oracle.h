// The tests' own check that text is well-formed UTF-8, written apart from the
// harness's policy (harness/model/utf8.h) so that a test of that policy does
// not grade it with itself: decode each sequence, then reject overlong forms,
// surrogates and code points past U+10FFFF.
#pragma once

#include <string_view>

namespace faultline::testing {

bool wellFormedUtf8(std::string_view s);

}  // namespace faultline::testing
