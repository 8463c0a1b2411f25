// A Python rank stuck on its way out, read from its native threads: torch
// 1.x's Gloo teardown deadlock. The main thread destroys the process group
// (~ProcessGroupGloo, run as DDP's Reducer lets go of it) with the GIL held
// and waits for the group's worker threads; a worker that finished a
// collective drops the last reference to a tensor whose Python object is
// gone and waits for the GIL to free it. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/python_traceback.h"

namespace faultline::diagnose {

struct TeardownDeadlock {
  std::string destroying;  // the destroying thread's innermost frames, "A <- B" ("~ProcessGroupGloo <- ~Reducer")
  std::string waiting;     // the worker's, down to its GIL wait ("PyEval_AcquireThread <- ~TensorImpl <- runLoop")
};

// The deadlock where one thread is inside ~ProcessGroupGloo and another,
// a Gloo worker (ProcessGroupGloo::runLoop), waits for the GIL (take_gil,
// PyEval_AcquireThread, PyEval_RestoreThread, PyGILState_Ensure); nullopt
// otherwise, or with no native threads.
std::optional<TeardownDeadlock> glooTeardownDeadlock(const std::vector<StackThread>& native);

}  // namespace faultline::diagnose
