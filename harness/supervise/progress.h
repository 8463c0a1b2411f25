// Progress of a run as seen in its files: new event lines per rank, and who
// is inside a collective (collective_begin without its collective_end).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harness/supervise/durations.h"

namespace faultline::supervise {

// Reads what was appended to an events.jsonl since the last call and hands
// out complete lines; a partial last line is kept for the next call.
class EventsFollower {
 public:
  explicit EventsFollower(std::string path) : path_(std::move(path)) {}
  // Returns the number of complete lines delivered.
  size_t readNew(const std::function<void(std::string_view)>& on_line);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  off_t offset_ = 0;
  std::string partial_;
};

struct OpenCollective {
  std::string op;
  int64_t seq = -1;   // -1: a subgroup's (group_seq) or not given
  int64_t t_ns = 0;   // the rank's own clock (CLOCK_REALTIME) at collective_begin
  std::string group;  // member ranks of a subgroup ("0,2"); "" for the default group
};

// A blocking c10d store call a rank is inside (the shim's store_begin).
struct StoreWait {
  std::string op;   // get, wait
  std::string key;  // the key (wait's keys joined by ",")
  int64_t t_ns = 0;
};

// Pure: fed event lines, answers which ranks are waiting in which collective.
// The fields of one event line the supervisor acts on besides collectives.
struct LineFields {
  int rank = -1;
  std::string ev;                // "" for a malformed line
  std::optional<int64_t> step;   // step_begin / step_end
  std::optional<int64_t> seq;    // collective_begin / collective_end
  std::optional<int64_t> pid;    // the writing process
  // start: the thread that does the rank's work, where it is not the
  // process's main thread (Ray Train's training thread)
  std::optional<int64_t> tid;
};

class CollectiveTracker {
 public:
  // A JSON line of CONTRACT.md section 3; malformed lines are counted and ignored.
  // Returns the line's fields (fault delivery watches steps and collectives).
  LineFields onLine(int file_rank, std::string_view line);
  bool instrumented() const { return !seen_.empty(); }
  bool anyInCollective() const;
  // Some rank's collectives are not all traced (a shim patch failed there):
  // "nobody is in a collective" cannot be known.
  bool anyUntraced() const { return !untraced_.empty(); }
  std::optional<OpenCollective> openCollective(int rank) const;
  const std::map<int, OpenCollective>& openCollectives() const { return open_; }
  // The default-group seq the rank has gone past: its last ended collective's,
  // or one before its open one; -1 when none.
  int64_t seqPassed(int rank) const;
  std::set<int> ranksSeen() const { return seen_; }
  // What completed collectives and steps took (collective_begin to its
  // collective_end on the same rank; step_begin to step_end): the rhythm the
  // adaptive hang detection learns.
  const DurationHistory& durations() const { return durations_; }
  // Ranks that wrote an `error` event: on their way out, not hanging.
  bool erred(int rank) const { return erred_.count(rank) > 0; }
  // Rendezvous (init_process_group): ranks that began it and have not
  // joined (pg_init_begin without pg_init), with when they began; whether a
  // rank began it at all, or joined.
  const std::map<int, int64_t>& inRendezvous() const { return rendezvous_; }
  bool begunRendezvous(int rank) const { return rendezvous_.count(rank) > 0 || joined_.count(rank) > 0; }
  // A rank waiting for its next batch (the shim's data_begin without its
  // data_end): its DataLoader, not the rank, decides when it goes on.
  bool inDataWait(int rank) const { return data_wait_.count(rank) > 0; }
  // The rank destroyed its default process group (pg_destroy, no pg_init since).
  bool destroyed(int rank) const { return destroyed_.count(rank) > 0; }
  // Ranks inside a blocking store call (store_begin without its store_end).
  const std::map<int, StoreWait>& storeWaits() const { return store_; }
  // How many default-group collectives completed, every rank's pooled.
  size_t collectivesCompleted() const { return durations_.allOps().count(); }
  size_t malformedLines() const { return malformed_; }
  // "ranks 0,2 in allreduce seq 7; rank 1 not in a collective"; a rank whose
  // collective patches did not apply: "rank 3 collective tracing unavailable
  // (patch dist.all_reduce failed: TypeError: ...)".
  std::string describe() const;

 private:
  // A restarted rank's new process: the old one's calls, waits and gaps go.
  void forgetProcess(int rank);

  std::set<int> seen_;
  std::map<int, int64_t> pid_;                // rank -> the process that wrote its last `start`
  std::map<int, OpenCollective> open_;        // rank -> collective it is inside
  std::map<int, OpenCollective> last_ended_;  // rank -> last collective it left
  // rank -> collective patches that did not apply there (`instrument` events):
  // patch name -> error. Such a rank is not said to be outside a collective.
  std::map<int, std::map<std::string, std::string>> untraced_;
  std::map<int, int64_t> step_begin_;  // rank -> t of its open step_begin
  std::set<int> erred_;
  std::map<int, int64_t> rendezvous_;  // rank -> t of its pg_init_begin, until its pg_init
  std::set<int> joined_;               // ranks that wrote pg_init
  std::set<int> destroyed_;            // ranks that wrote pg_destroy after their last pg_init
  std::map<int, int64_t> data_wait_;   // rank -> t of its open data_begin
  std::map<int, StoreWait> store_;     // rank -> its open store_begin
  DurationHistory durations_;
  size_t malformed_ = 0;
};

}  // namespace faultline::supervise
