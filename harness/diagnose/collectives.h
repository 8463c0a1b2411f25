// Hang and mismatch analysis from collective_begin/end events: the collective
// (op, seq) where ranks wait, the ranks that never entered it, or the rank
// that entered it with another op or size.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/diagnose/events.h"
#include "harness/model/report.h"

namespace faultline::diagnose {

struct CollectiveVerdict {
  Kind kind = Kind::kHungCollective;  // or kCollectiveMismatch
  CollectiveRef collective;
  std::optional<int> rank;      // the rank at fault, when one can be named
  std::vector<int> waiting;     // ranks blocked inside a collective at the end
  std::vector<int> missing;     // ranks that never entered `collective`
  std::string detail;           // one line, e.g. "rank 1 never entered allreduce #3; rank 0 waited in it"
};

// Collective mismatch: the first seq where instrumented ranks used a different
// op or numel. Needs events from at least two ranks.
std::optional<CollectiveVerdict> findCollectiveMismatch(const std::map<int, const EventLog*>& logs);

// Hang: some rank's last collective never ended. Names the first collective
// some rank never entered (up to the waiting one), and the ranks missing from it.
std::optional<CollectiveVerdict> findHungCollective(const std::map<int, const EventLog*>& logs);

}  // namespace faultline::diagnose
