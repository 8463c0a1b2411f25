// The native half of fault injection: what a rank does to itself (crash,
// signal, exit, load a broken plugin, limit its memory). No LibTorch; the
// faults that need tensors or collectives live in the training loop.
#pragma once

#include <cstddef>
#include <string>

#include "harness/probe/fault_spec.h"

namespace faultline::trainer {

using probe::FaultSpec;

// Writes the `fault` event and a stderr line, so the test record says what was injected.
void announceFault(const FaultSpec& spec, long step, int rank);

[[noreturn]] void crashWithSegfault();
[[noreturn]] void crashWithAbort();
[[noreturn]] void killSelf(int signal);
[[noreturn]] void exitWithoutCleanup(int code);
[[noreturn]] void sleepForever();
void sleepMs(long ms);

// Loads the project's extension plugin, which references a symbol no library
// defines, and calls into it. Lazy binding: the dynamic loader kills the
// process ("symbol lookup error", exit 127). `now`: RTLD_NOW, so dlopen fails
// and this throws std::runtime_error carrying dlerror().
void callBrokenExtension(bool now);

// Caps this process's address space at its current size plus `headroom_mb`,
// so an allocation loop fails inside the process and the machine is never at risk.
void limitAddressSpace(size_t headroom_mb);

}  // namespace faultline::trainer
