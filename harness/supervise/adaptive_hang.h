// Adaptive hang detection, two rules over one wait (ranks in a collective, or
// in the rendezvous, that some live rank has not entered):
//   the idle rule, which needs no history: every missing rank idle outside
//     any collective (no CPU, no I/O, not running) for idle_s while its
//     peers wait; a hang whatever the run's rhythm, from the first
//     collective on (rendezvous_idle_s at the rendezvous);
//   the learned rule, faster once there is a rhythm: the peers have waited
//     far longer than that collective has ever taken in this run, and the
//     missing rank is idle.
// A missing rank that is busy is a straggler; one waiting for its
// DataLoader's next batch (the shim's data_begin) is busy by definition.
// Pure: fed the tracker's state, the clock and what /proc said of each rank;
// the watch loop (watch_loop.cc) does the reading and the timing.
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
  // Completed collectives (every rank's, pooled) needed before a learned
  // threshold exists; before that the idle rule alone applies.
  size_t min_samples = 30;
  // The idle rule: the missing ranks idle this long while their peers wait
  // in a collective is a hang; at the rendezvous (init_process_group, where
  // ranks arrive further apart), rendezvous_idle_s (2.5x idle_s from the
  // CLI and scenarios). 0: the rule is off.
  double idle_s = 1.0;
  double rendezvous_idle_s = 2.5;
};

struct Threshold {
  int64_t ns = 0;      // learned: max(floor, factor * p99); else the idle rule's window
  int64_t p99_ns = 0;  // of `basis`
  size_t samples = 0;  // durations learned of `basis`
  std::string basis;   // the op ("allreduce"), or "all ops" when the op has too few of its own
  bool learned = true; // false: no rhythm yet, only the idle rule
};

// The threshold for a wait in `op`: from that op's durations when it has
// min_samples, else from every op's; nullopt with too little history (the
// first collectives of a run) or with adaptive detection off.
std::optional<Threshold> adaptiveThreshold(const DurationHistory& history, const std::string& op,
                                           const AdaptiveOptions& opts);

// Ranks waiting in one default-group collective (op, seq), or in the
// rendezvous, that some live rank has not entered.
struct LongWait {
  std::string op;          // "init_process_group" for the rendezvous
  int64_t seq = -1;
  bool rendezvous = false;
  std::vector<int> waiting;
  std::vector<int> missing;
  // Missing ranks the idle rule does not judge: inside a collective of their
  // own (a subgroup's, a point-to-point: waiting on someone else), or
  // waiting for their DataLoader.
  std::vector<int> missing_in_collective;
  std::vector<int> missing_in_data_wait;
  // Missing ranks inside a blocking c10d store call: rank -> "get 'key'".
  // Judged like any: idle there while its peers wait is a deadlock too.
  std::map<int, std::string> missing_in_store;
  size_t completed = 0;   // collectives completed in the run so far
  int64_t since_ns = 0;   // when the last of the waiting ranks entered (its clock, CLOCK_REALTIME)
  int64_t waited_ns = 0;  // since then, at the time asked: every one has waited this long
  Threshold threshold;    // the learned rule's, or the idle rule's window when none is learned
  int64_t idle_window_ns = 0;  // the idle rule's window (0: off)
  bool due() const { return waited_ns >= threshold.ns; }
  // When /proc must begin to be read: early enough for either rule to judge
  // (the learned rule's half threshold; 100 ms for the idle rule).
  int64_t watchFromNs() const;
};

// The open collective whose wait is furthest past (or closest to) its
// threshold, among those every live rank must take part in: default-group
// collectives (a `seq`: the default group's, or a group of every rank that
// shares its numbering), not send/recv; else the rendezvous,
// while ranks wait in it and some live rank has not begun it. None when some
// live rank has written no event yet or cannot be traced (a failed patch),
// when a missing rank wrote an `error` event (it is on its way out: its exit
// decides), or when neither rule is on.
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

// The verdict on a LongWait. The learned rule: once due, a hang when every
// missing rank has been idle for half the threshold (so that it was idle for
// a stretch, not one quiet sample). The idle rule: once the peers have
// waited the idle window, a hang when every missing rank is outside any
// collective, not waiting for its DataLoader, and idle for the whole window.
// Else the busy ones (and those waiting for data) are stragglers, and the
// wait goes on.
struct WaitVerdict {
  bool hang = false;
  bool by_idle_rule = false;  // called by the idle rule (no learned rhythm needed)
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
