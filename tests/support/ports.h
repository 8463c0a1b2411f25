// TCP ports for tests that start a launcher of their own (torchrun's default
// 29500 is shared by every test that runs at once under ctest -j).
#pragma once

#include <string>

namespace faultline::testing {

// A port on 127.0.0.1 that was free a moment ago (launch::findFreePort), or
// 29500, torchrun's default, when none can be had.
int freePort();

// "--master_port=P" with P = freePort().
std::string freeTorchrunPortFlag();

}  // namespace faultline::testing
