// TCP ports for tests.
#include "tests/support/ports.h"

#include "harness/launch/rank_env.h"

namespace faultline::testing {

int freePort() {
  auto port = launch::findFreePort();
  return port ? *port : 29500;
}

std::string freeTorchrunPortFlag() { return "--master_port=" + std::to_string(freePort()); }

}  // namespace faultline::testing
