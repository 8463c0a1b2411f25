// superviseRun: containment, watch loop, teardown, in that order.
#include "harness/supervise/supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "harness/launch/clock.h"
#include "harness/model/stack_name.h"
#include "harness/os/sys.h"
#include "harness/supervise/proc_fs.h"
#include "harness/supervise/watch_loop.h"

namespace faultline::supervise {
namespace {

// SIGINT and SIGTERM across a run. The watch loop handles them while it runs;
// outside it they are held pending: before the loop (it unblocks them once its
// handler is in place, so a Ctrl-C there interrupts the run and still gets a
// report) and after it (the loop's signal_set puts SIG_DFL back as it goes; a
// signal in that gap killed the harness between a finished teardown and the
// report). On the way out the caller's dispositions come back first, then its
// mask: a caller that ignores them by then (the CLI, to keep its report)
// discards a late one and never dies of it.
class InterruptGate {
 public:
  InterruptGate() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    ::sigaction(SIGINT, nullptr, &old_int_);
    ::sigaction(SIGTERM, nullptr, &old_term_);
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_mask_);
  }
  // Before the watch loop is destroyed.
  void close() { ::pthread_sigmask(SIG_BLOCK, &set_, nullptr); }
  ~InterruptGate() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  }
  InterruptGate(const InterruptGate&) = delete;
  InterruptGate& operator=(const InterruptGate&) = delete;

 private:
  sigset_t set_;
  sigset_t old_mask_;
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace

std::string newRunId() {
  static std::atomic<int> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%d-%llx-%d", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(launch::realtimeNs() & 0xffffffffffULL), counter++);
  return buf;
}

Result<SupervisedRun> superviseRun(const SuperviseOptions& in) {
  SuperviseOptions opts = in;
  if (opts.launch.command.empty()) return fail(ErrorCode::kBadUsage, "no command given");
  if (!opts.launcher) opts.launcher = launch::launcherNamed(opts.launch.launcher);
  if (!opts.launcher) {
    return fail(ErrorCode::kBadUsage, "unknown launcher '" + opts.launch.launcher + "', expected " + stackLauncherList());
  }
  const int fds_before = countOpenFds();
  InterruptGate gate;
  if (opts.launch.run_id.empty()) opts.launch.run_id = newRunId();
  RunLayout layout(launch::absolutePath(opts.out_dir));
  if (auto r = launch::createRunDirs(layout, 0); !r) return tl::unexpected(r.error());
  if (auto r = launch::clearPreviousRun(layout); !r) return tl::unexpected(r.error());
  if (opts.provisional_report) {
    if (auto w = writeReport(*opts.provisional_report, layout.reportPath()); !w) return tl::unexpected(w.error());
  }
  // A run that never starts is the caller's to report (bad usage writes no
  // report at all): the provisional one goes again.
  const auto not_started = [&](const Error& e) {
    if (opts.provisional_report) os::sys().unlink(layout.reportPath().c_str());
    return tl::unexpected(e);
  };
  auto containment = Containment::create(opts.launch.run_id, opts.allow_cgroup);
  if (!containment) return not_started(containment.error());
  SupervisedRun run;
  {
    WatchLoop loop(opts, layout, **containment);
    if (auto r = loop.start(); !r) {
      gate.close();
      (*containment)->finish();
      return not_started(r.error());
    }
    loop.runMainPhase();
    loop.teardown();
    run = loop.result();
    gate.close();
  }
  (*containment)->finish();
  containment->reset();
  run.record.harness_fds = HarnessFds{fds_before, countOpenFds()};
  return run;
}

}  // namespace faultline::supervise
