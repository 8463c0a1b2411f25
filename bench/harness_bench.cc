// Google Benchmark micro- and in-process benchmarks of the launch/supervise stages:
// event-line tracking, and end-to-end launch/crash/teardown through superviseRun.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "harness/supervise/progress.h"
#include "harness/supervise/proc_fs.h"
#include "harness/supervise/supervisor.h"

namespace faultline::supervise {
namespace {

std::string tempDir() {
  char tmpl[] = "/tmp/fl-bench-XXXXXX";
  return ::mkdtemp(tmpl);
}

void removeDir(const std::string& d) {
  std::string cmd = "rm -rf '" + d + "'";
  (void)!std::system(cmd.c_str());
}

void BM_CollectiveTrackerLine(benchmark::State& state) {
  CollectiveTracker t;
  const std::string begin =
      R"({"t":1796048543654988505,"rank":3,"pid":4242,"ev":"collective_begin","op":"allreduce","seq":17,"numel":1048576,"dtype":"float32"})";
  const std::string end =
      R"({"t":1796048543654998505,"rank":3,"pid":4242,"ev":"collective_end","op":"allreduce","seq":17,"numel":1048576,"dtype":"float32"})";
  for (auto _ : state) {
    t.onLine(3, begin);
    t.onLine(3, end);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_CollectiveTrackerLine);

void BM_EventsFollowerTenThousandLines(benchmark::State& state) {
  const std::string dir = tempDir();
  const std::string path = dir + "/events.jsonl";
  {
    std::ofstream o(path);
    for (int i = 0; i < 10000; ++i) {
      o << R"({"t":1796048543654988505,"rank":0,"pid":1,"ev":"step_end","step":)" << i << R"(,"epoch":0})" << "\n";
    }
  }
  for (auto _ : state) {
    EventsFollower f(path);
    size_t n = f.readNew([](std::string_view) {});
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * 10000);
  removeDir(dir);
}
BENCHMARK(BM_EventsFollowerTenThousandLines)->Unit(benchmark::kMicrosecond);

// Spawn N ranks of /bin/true, supervise, tear down, verify: the harness's
// whole per-run overhead (cgroup, guardian, spawn, reap, leak check).
void BM_LaunchAndReap(benchmark::State& state) {
  const std::string dir = tempDir();
  for (auto _ : state) {
    SuperviseOptions o;
    o.launch.nproc = static_cast<int>(state.range(0));
    o.launch.command = {"/bin/true"};
    o.out_dir = dir + "/run";
    auto run = superviseRun(o);
    if (!run || run->record.trigger.kind != TriggerKind::kNone) state.SkipWithError("run failed");
  }
  removeDir(dir);
}
BENCHMARK(BM_LaunchAndReap)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime();

// Rank exit (stamped by the rank just before _exit) to the supervisor noticing it.
void BM_CrashDetectionLatency(benchmark::State& state) {
  const char* hostile = std::getenv("FL_HOSTILE");
  if (!hostile) {
    state.SkipWithError("set FL_HOSTILE to the fl_hostile fixture");
    return;
  }
  const std::string dir = tempDir();
  for (auto _ : state) {
    SuperviseOptions o;
    o.launch.nproc = 2;
    o.launch.command = {hostile, "delay=0.05", "1=stamp-exit:1", "*=sleep:30"};
    o.out_dir = dir + "/run";
    o.grace_s = 2;
    auto run = superviseRun(o);
    auto stamp = readSmallFile(o.out_dir + "/stamp-1-exit");
    if (!run || !stamp || !run->record.ranks[1].exit_ns) {
      state.SkipWithError("no stamp or no exit time");
      break;
    }
    const double latency = (*run->record.ranks[1].exit_ns - std::stoll(*stamp)) / 1e9;
    state.SetIterationTime(latency);
  }
  removeDir(dir);
}
BENCHMARK(BM_CrashDetectionLatency)->UseManualTime()->Unit(benchmark::kMicrosecond)->Iterations(20);

}  // namespace
}  // namespace faultline::supervise

BENCHMARK_MAIN();
