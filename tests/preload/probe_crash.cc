// A trainer-like program that links the probe and installs its crash handlers,
// then segfaults: under the interposer the crash must be reported once.
#include "faultline/probe.h"

int main() {
  fl_probe_install_crash_handlers();
  volatile int* p = nullptr;
  *p = 1;
  return 0;
}
