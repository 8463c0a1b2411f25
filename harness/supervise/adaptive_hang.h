// Adaptive hang detection: a hang is called as soon as ranks have waited in
// a collective far longer than that collective has ever taken in this run
// while a rank that should join it is missing and idle. Pure: fed the
// tracker's state, the clock and what /proc said of each rank; the watch loop
// (watch_loop.cc) does the reading and the timing.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/supervise/progress.h"

namespace faultline::supervise {

struct AdaptiveOptions {
  double factor = 10;  // a wait this many times the learned p99 is a hang; 0: adaptive detection off
  double floor_s = 0.5;  // never a threshold below this
  // Completed collectives (every rank's, pooled) needed before a threshold
  // exists; before that only the fixed --hang-timeout applies.
  size_t min_samples = 30;
};

struct Threshold {
  int64_t ns = 0;      // max(floor, factor * p99)
  int64_t p99_ns = 0;  // of `basis`
  size_t samples = 0;  // durations learned of `basis`
  std::string basis;   // the op ("allreduce"), or "all ops" when the op has too few of its own
};

// The threshold for a wait in `op`: from that op's durations when it has
// min_samples, else from every op's; nullopt with too little history (the
// first collectives of a run) or with adaptive detection off.
std::optional<Threshold> adaptiveThreshold(const DurationHistory& history, const std::string& op,
                                           const AdaptiveOptions& opts);

// Ranks waiting in one default-group collective (op, seq) that some live
// rank has not entered.
struct LongWait {
  std::string op;
  int64_t seq = -1;
  std::vector<int> waiting;
  std::vector<int> missing;
  int64_t since_ns = 0;   // when the last of the waiting ranks entered (its clock, CLOCK_REALTIME)
  int64_t waited_ns = 0;  // since then, at the time asked: every one has waited this long
  Threshold threshold;
  bool due() const { return waited_ns >= threshold.ns; }
};

// The open collective whose wait is furthest past (or closest to) its
// threshold, among those every live rank must take part in: default-group
// collectives (a `seq`, no `group`), not send/recv. None when some live rank
// has written no event yet or cannot be traced (a failed patch), when a
// missing rank wrote an `error` event (it is on its way out: its exit
// decides), or when no threshold exists yet.
std::optional<LongWait> longestWait(const CollectiveTracker& tracker, const std::set<int>& live, int64_t now_ns,
                                    const AdaptiveOptions& opts);

// What /proc says a process (with its children) has done so far.
struct Activity {
  uint64_t cpu_ticks = 0;  // utime + stime of the process tree
  uint64_t io_chars = 0;   // rchar + wchar (/proc/PID/io): reads and writes of any kind, the page cache's too
  char state = '?';        // R running, D in I/O, S sleeping, T stopped
};

// Whether each rank has been busy lately: CPU time (two clock ticks or more,
// so that an idle thread's wake-up is not work), I/O, or a running or I/O
// state since the last time it was seen busy. Reset when no wait is long.
class ActivityWatch {
 public:
  void sample(int rank, const Activity& a, int64_t now_ns);
  // ns since the rank was last seen busy (since its first sample if never).
  int64_t idleNs(int rank, int64_t now_ns) const;
  bool stopped(int rank) const;  // state T at the last sample
  // Seen busy after its first sample (not merely sampled too briefly).
  bool seenBusy(int rank) const;
  void reset() { seen_.clear(); }
  bool empty() const { return seen_.empty(); }

 private:
  struct Seen {
    Activity ref;  // at the last time it was busy
    int64_t busy_ns = 0;
    char state = '?';
    bool busy_since_first = false;
  };
  std::map<int, Seen> seen_;
};

// The verdict on a due LongWait: a hang when every missing rank has been
// idle for half the threshold (so that it was idle for a stretch, not one
// quiet sample); else the busy ones are stragglers, and the wait goes on.
struct WaitVerdict {
  bool hang = false;
  std::vector<int> busy;  // missing ranks seen working within the window: stragglers
  int64_t idle_ns = 0;    // the shortest idleness among the missing ranks
};
WaitVerdict judgeWait(const LongWait& w, const ActivityWatch& activity, int64_t now_ns);

// "ranks 0,2 waited 612 ms in allreduce seq 40, over 10x its learned p99 of
// 31 ms (480 durations; threshold 500 ms); rank 1 is not in it and idle (no
// CPU, no I/O) for 310 ms": the trigger's words.
std::string describeHang(const LongWait& w, const WaitVerdict& v, const AdaptiveOptions& opts,
                         const std::vector<int>& stopped);
// "rank 1 busy (CPU or I/O) outside allreduce seq 40 while ranks 0,2 waited
// 3.2 s in it (adaptive threshold 500 ms, learned p99 ...): a straggler, not
// an adaptive hang".
std::string describeStraggler(const LongWait& w, const std::vector<int>& busy);

// "612 ms", "3.2 s".
std::string durationText(int64_t ns);

}  // namespace faultline::supervise
