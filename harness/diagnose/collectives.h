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
  std::vector<int> missing;     // ranks that never entered `collective` (mismatch: the odd side)
  std::string detail;           // one line, e.g. "rank 1 never entered allreduce #3; rank 0 waited in it"
  // Who is to blame (issue 18): one rank, one side of several ranks, or
  // ambiguous (no majority and no evidence for a side: `culprits` are then
  // every side's ranks); `why` is the evidence, "" for a plain majority.
  Blame blame = Blame::kNone;
  std::vector<int> culprits;
  std::string why;
  std::vector<CollectiveSide> sides;  // each side's call at `collective`, the blamed side first
};

// Collective mismatch: the first seq where instrumented ranks used a different
// op or numel. Needs events from at least two ranks. The odd side is, in this
// order: the only side whose call is under a rank condition (the shim's
// rank_cond), the minority, or the only side whose call no rank made before
// while every rank made the other's (the pattern they all kept); otherwise
// ambiguous.
std::optional<CollectiveVerdict> findCollectiveMismatch(const std::map<int, const EventLog*>& logs);

// Hang: some rank's last collective never ended. Names the first collective
// some rank never entered (up to the waiting one), and the ranks missing from it.
// With no majority in it (as many ranks missing as entered), the missing side
// is blamed only on evidence: it skipped that seq and went on, or every rank
// made the waiters' call before (the pattern it broke); the waiting side when
// its call is under a rank condition. Otherwise `blame` is kAmbiguous and the
// caller may still decide from what the missing ranks were doing (stack dumps).
std::optional<CollectiveVerdict> findHungCollective(const std::map<int, const EventLog*>& logs);

// "train.py:42" from "/app/train.py:42"; "" stays "".
std::string shortSite(const std::string& site);

}  // namespace faultline::diagnose
