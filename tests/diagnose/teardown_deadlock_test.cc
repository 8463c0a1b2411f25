// torch 1.x's Gloo teardown deadlock read from a Python rank's native
// threads: a real eu-stack dump (tests/fixtures/stacks) and hand-written
// ones where it is not there.
#include "harness/diagnose/teardown_deadlock.h"

#include <gtest/gtest.h>

#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

TEST(TeardownDeadlock, ARealDumpNamesTheDestructorAndTheWorkersGilWait) {
  const auto threads = parseStackDump(
      testing::readFile(testing::sourceDir() + "/tests/fixtures/stacks/eustack113_gloo_teardown_deadlock.txt"));
  const auto d = glooTeardownDeadlock(threads);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->destroying, "~ProcessGroupGloo <- ~Reducer");
  EXPECT_EQ(d->waiting, "PyEval_AcquireThread <- destroy_pyobj_if_needed <- ~TensorImpl <- runLoop");
}

// The same destructor joining workers that wait for work (a teardown still
// going) is no deadlock; nor is a worker waiting for the GIL while no thread
// destroys the group (a rank busy in Python).
TEST(TeardownDeadlock, NotWithoutBothSides) {
  const std::string destroying =
      "TID 10:\n"
      "#0  0x00007f0000000001 __futex_abstimed_wait_common\n"
      "#1  0x00007f0000000002 std::thread::join()\n"
      "#2  0x00007f0000000003 c10d::ProcessGroupGloo::~ProcessGroupGloo()\n"
      "#3  0x00007f0000000004 c10d::Reducer::~Reducer()\n";
  const std::string idle_worker =
      "TID 11:\n"
      "#0  0x00007f0000000005 __futex_abstimed_wait_common\n"
      "#1  0x00007f0000000006 pthread_cond_wait@@GLIBC_2.3.2\n"
      "#2  0x00007f0000000007 c10d::ProcessGroupGloo::runLoop(int)\n";
  const std::string gil_worker =
      "TID 12:\n"
      "#0  0x00007f0000000008 pthread_cond_timedwait@@GLIBC_2.3.2\n"
      "#1  0x00007f0000000009 take_gil\n"
      "#2  0x00007f000000000a c10::TensorImpl::~TensorImpl()\n"
      "#3  0x00007f000000000b c10d::ProcessGroupGloo::runLoop(int)\n";
  EXPECT_FALSE(glooTeardownDeadlock(parseStackDump("PID 10 - process\n" + destroying + idle_worker)));
  EXPECT_FALSE(glooTeardownDeadlock(parseStackDump("PID 10 - process\n" + idle_worker + gil_worker)));
  EXPECT_FALSE(glooTeardownDeadlock({}));
  const auto d = glooTeardownDeadlock(parseStackDump("PID 10 - process\n" + destroying + idle_worker + gil_worker));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->waiting, "take_gil <- ~TensorImpl <- runLoop");
}

}  // namespace
}  // namespace faultline::diagnose
