// superviseRun: containment, watch loop, teardown, in that order.
#include "harness/supervise/supervisor.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "harness/launch/clock.h"
#include "harness/supervise/watch_loop.h"

namespace faultline::supervise {

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
  if (opts.launch.run_id.empty()) opts.launch.run_id = newRunId();
  launch::RunLayout layout(launch::absolutePath(opts.out_dir));
  if (auto r = layout.create(0); !r) return tl::unexpected(r.error());
  if (auto r = layout.clearPrevious(); !r) return tl::unexpected(r.error());
  auto containment = Containment::create(opts.launch.run_id, opts.allow_cgroup);
  if (!containment) return tl::unexpected(containment.error());
  SupervisedRun run;
  {
    WatchLoop loop(opts, layout, **containment);
    if (auto r = loop.start(); !r) {
      (*containment)->finish();
      return tl::unexpected(r.error());
    }
    loop.runMainPhase();
    loop.teardown();
    run = loop.result();
  }
  (*containment)->finish();
  return run;
}

}  // namespace faultline::supervise
