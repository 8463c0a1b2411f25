// Collective hang and mismatch analysis.
#include "harness/diagnose/collectives.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <tuple>

#include "harness/diagnose/rank_list.h"

namespace faultline::diagnose {
namespace {

struct Call {
  std::string op;
  int64_t numel = -1;
  bool ended = false;
  const Event* begin = nullptr;  // its collective_begin (site, callers, rank_cond)
};

using Key = std::pair<std::string, int64_t>;  // (op, numel)

// seq -> call, per rank.
std::map<int, std::map<int64_t, Call>> collect(const std::map<int, const EventLog*>& logs) {
  std::map<int, std::map<int64_t, Call>> out;
  for (const auto& [r, log] : logs) {
    auto& calls = out[r];
    for (const Event& e : log->events) {
      if (e.seq < 0) continue;
      if (e.ev == "collective_begin") {
        Call& c = calls[e.seq];
        c.op = e.op;
        c.numel = e.numel;
        c.begin = &e;
      } else if (e.ev == "collective_end") {
        Call& c = calls[e.seq];
        if (c.op.empty()) c.op = e.op;
        c.ended = true;
      }
    }
  }
  return out;
}

std::string ranksWord(const std::vector<int>& v) {
  return ranksText(v, ListStyle::kAnd);
}

// One side: the ranks that made `call` (null: no call at that seq).
CollectiveSide sideOf(const std::vector<int>& ranks, const Call* call) {
  CollectiveSide s;
  s.ranks = ranks;
  if (!call) return s;
  s.op = call->op;
  if (call->numel >= 0) s.numel = call->numel;
  if (call->begin) {
    s.site = call->begin->site;
    s.callers = call->begin->callers;
    s.rank_condition = call->begin->rank_cond;
  }
  return s;
}

// " (train.py:40, under `if rank == 0`)"
std::string whereText(const CollectiveSide& s) {
  std::string cond;
  if (!s.rank_condition.empty()) {
    // "FILE:LINE: if TEST" -> "if TEST"
    const size_t p = s.rank_condition.find(": ");
    cond = "under `" + (p == std::string::npos ? s.rank_condition : s.rank_condition.substr(p + 2)) + "`";
  }
  if (s.site.empty() && cond.empty()) return "";
  return " (" + shortSite(s.site) + (s.site.empty() || cond.empty() ? "" : ", ") + cond + ")";
}

std::string callText(const CollectiveSide& s) {
  return s.op + (s.numel ? " of " + std::to_string(*s.numel) + " elements" : "") + whereText(s);
}

// A call as the history compares it: op, size and call site ("" where the
// shim gave none), so that the same broadcast from another line (DDP's
// buffer sync in validation, not in training) is another call.
using SiteKey = std::tuple<std::string, int64_t, std::string>;

SiteKey siteKey(const std::string& op, int64_t numel, const std::string& site) { return {op, numel, site}; }

// The calls every rank made before `seq`, and the calls any rank made before it.
struct History {
  std::set<SiteKey> by_every, by_any;
};

History historyBefore(const std::map<int, std::map<int64_t, Call>>& calls, int64_t seq) {
  History h;
  bool first = true;
  for (const auto& [r, m] : calls) {
    std::set<SiteKey> mine;
    for (const auto& [s, c] : m) {
      if (s >= seq) break;
      if (!c.op.empty()) mine.insert(siteKey(c.op, c.numel, c.begin ? c.begin->site : ""));
    }
    h.by_any.insert(mine.begin(), mine.end());
    if (first) {
      h.by_every = mine;
      first = false;
    } else {
      std::set<SiteKey> both;
      std::set_intersection(h.by_every.begin(), h.by_every.end(), mine.begin(), mine.end(),
                            std::inserter(both, both.end()));
      h.by_every = std::move(both);
    }
  }
  return h;
}

// Whether any rank outside `ranks` made a call at `site` anywhere in the run.
bool siteReachedByOthers(const std::map<int, std::map<int64_t, Call>>& calls, const std::vector<int>& ranks,
                         const std::string& site) {
  for (const auto& [r, m] : calls) {
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) continue;
    for (const auto& [s, c] : m) {
      if (c.begin && c.begin->site == site) return true;
    }
  }
  return false;
}

// Whether every rank of `ranks` made a call at `site` before collective `seq`.
bool siteReachedBefore(const std::map<int, std::map<int64_t, Call>>& calls, const std::vector<int>& ranks,
                       const std::string& site, int64_t seq) {
  for (int r : ranks) {
    const auto& m = calls.at(r);
    bool seen = false;
    for (auto it = m.begin(); it != m.end() && it->first < seq && !seen; ++it) {
      seen = it->second.begin && it->second.begin->site == site;
    }
    if (!seen) return false;
  }
  return true;
}

void blameSide(CollectiveVerdict& v, const std::vector<int>& ranks, std::string why) {
  v.culprits = ranks;
  v.blame = ranks.size() == 1 ? Blame::kRank : Blame::kRanks;
  if (ranks.size() == 1) v.rank = ranks.front();
  v.why = std::move(why);
}

void ambiguous(CollectiveVerdict& v) {
  v.blame = Blame::kAmbiguous;
  v.culprits.clear();
  for (const CollectiveSide& s : v.sides) v.culprits.insert(v.culprits.end(), s.ranks.begin(), s.ranks.end());
  std::sort(v.culprits.begin(), v.culprits.end());
  v.rank.reset();
}

}  // namespace

std::string shortSite(const std::string& site) {
  const size_t s = site.rfind('/');
  return s == std::string::npos ? site : site.substr(s + 1);
}

std::optional<CollectiveVerdict> findCollectiveMismatch(const std::map<int, const EventLog*>& logs) {
  const auto calls = collect(logs);
  if (calls.size() < 2) return std::nullopt;
  std::set<int64_t> seqs;
  for (const auto& [r, m] : calls) {
    for (const auto& [s, c] : m) seqs.insert(s);
  }
  for (int64_t s : seqs) {
    std::map<Key, std::vector<int>> by;
    std::map<Key, const Call*> example;
    for (const auto& [r, m] : calls) {
      auto it = m.find(s);
      if (it == m.end() || it->second.op.empty()) continue;
      const Key k{it->second.op, it->second.numel};
      by[k].push_back(r);
      // The side's call as its first rank with a site made it.
      if (!example.count(k) || (!example[k]->begin && it->second.begin)) example[k] = &it->second;
    }
    if (by.size() < 2) continue;
    CollectiveVerdict v;
    v.kind = Kind::kCollectiveMismatch;
    std::vector<CollectiveSide> sides;
    for (const auto& [k, rs] : by) sides.push_back(sideOf(rs, example.at(k)));
    for (const auto& [r, m] : calls) {
      auto it = m.rbegin();
      if (it != m.rend() && !it->second.ended) v.waiting.push_back(r);
    }
    // 1. The only side under a rank condition took the path the others did not.
    std::vector<size_t> conditional;
    for (size_t i = 0; i < sides.size(); ++i) {
      if (!sides[i].rank_condition.empty()) conditional.push_back(i);
    }
    std::optional<size_t> odd;
    std::string why;
    if (conditional.size() == 1 && sides.size() == 2) {
      odd = conditional.front();
      why = "its call runs only on some ranks (" + shortSite(sides[*odd].rank_condition) + ")";
    }
    // 2. A strict majority: every other side is odd.
    size_t best = 0, at_best = 0;
    for (const CollectiveSide& sd : sides) best = std::max(best, sd.ranks.size());
    for (const CollectiveSide& sd : sides) at_best += sd.ranks.size() == best ? 1 : 0;
    std::optional<size_t> majority;
    if (at_best == 1) {
      for (size_t i = 0; i < sides.size(); ++i) {
        if (sides[i].ranks.size() == best) majority = i;
      }
    }
    // 3. Call sites: one side's call is at a line no other rank reached in
    // the run (an extra collective: validation on rank 0 only, through the
    // DDP model, which broadcasts buffers), while its ranks made the other
    // side's call at its line before (a regular call). pytorch/pytorch#54059.
    if (!odd && !majority && sides.size() == 2 && !sides[0].site.empty() && !sides[1].site.empty() &&
        sides[0].site != sides[1].site) {
      for (size_t i = 0; i < 2 && !odd; ++i) {
        const CollectiveSide& mine = sides[i];
        const CollectiveSide& theirs = sides[1 - i];
        if (!siteReachedByOthers(calls, mine.ranks, mine.site) && siteReachedBefore(calls, mine.ranks, theirs.site, s)) {
          odd = i;
          why = "its call at " + shortSite(mine.site) + " is one no other rank reached in the run: an extra collective";
        }
      }
    }
    // 4. The pattern: every rank made one side's call before, no rank the other's.
    if (!odd && !majority && sides.size() == 2) {
      const History h = historyBefore(calls, s);
      const SiteKey k0 = siteKey(sides[0].op, sides[0].numel.value_or(-1), sides[0].site);
      const SiteKey k1 = siteKey(sides[1].op, sides[1].numel.value_or(-1), sides[1].site);
      const bool known0 = h.by_every.count(k0), known1 = h.by_every.count(k1);
      const bool fresh0 = !h.by_any.count(k0), fresh1 = !h.by_any.count(k1);
      if (known0 && fresh1) odd = 1;
      if (known1 && fresh0) odd = 0;
      if (odd) {
        why = "every rank made the other call in earlier collectives; this one no rank made before";
      }
    }
    if (odd) {
      // The blamed side first, then the others.
      std::vector<CollectiveSide> ordered{sides[*odd]};
      for (size_t i = 0; i < sides.size(); ++i) {
        if (i != *odd) ordered.push_back(sides[i]);
      }
      v.sides = ordered;
      blameSide(v, sides[*odd].ranks, why);
      v.missing = sides[*odd].ranks;
      const CollectiveSide& other = v.sides[1];
      v.collective = CollectiveRef{other.op, s};
      v.detail = ranksWord(v.sides[0].ranks) + " called " + callText(v.sides[0]) + " at collective #" +
                 std::to_string(s) + " while " + ranksWord(other.ranks) + " called " + callText(other);
      for (size_t i = 2; i < v.sides.size(); ++i) {
        v.detail += " and " + ranksWord(v.sides[i].ranks) + " " + callText(v.sides[i]);
      }
    } else if (majority) {
      const CollectiveSide& maj = sides[*majority];
      std::vector<CollectiveSide> ordered;
      std::vector<int> oddr;
      std::string what;
      for (size_t i = 0; i < sides.size(); ++i) {
        if (i == *majority) continue;
        ordered.push_back(sides[i]);
        oddr.insert(oddr.end(), sides[i].ranks.begin(), sides[i].ranks.end());
        what += (what.empty() ? "" : ", ") + callText(sides[i]);
      }
      std::sort(oddr.begin(), oddr.end());
      ordered.push_back(maj);
      v.sides = ordered;
      blameSide(v, oddr, "");
      v.missing = oddr;
      v.collective = CollectiveRef{maj.op, s};
      v.detail = ranksWord(oddr) + " called " + what + " at collective #" + std::to_string(s) + " while " +
                 ranksWord(maj.ranks) + " called " + callText(maj);
    } else {
      v.sides = sides;
      ambiguous(v);
      v.collective = CollectiveRef{sides.front().op, s};
      std::string each;
      for (const CollectiveSide& sd : sides) {
        each += (each.empty() ? "" : ", ") + ranksWord(sd.ranks) + " called " + callText(sd);
      }
      v.detail = "ranks disagree at collective #" + std::to_string(s) + ": " + each;
    }
    return v;
  }
  return std::nullopt;
}

std::optional<CollectiveVerdict> findHungCollective(const std::map<int, const EventLog*>& logs) {
  const auto calls = collect(logs);
  std::vector<int> waiting;
  int64_t max_open = -1;
  for (const auto& [r, m] : calls) {
    if (m.empty()) continue;
    const auto& last = *m.rbegin();
    if (!last.second.ended) {
      waiting.push_back(r);
      max_open = std::max(max_open, last.first);
    }
  }
  if (waiting.empty()) return std::nullopt;
  // The first collective, up to the last one waited in, that some rank never entered.
  std::set<int64_t> seqs;
  for (const auto& [r, m] : calls) {
    for (const auto& [s, c] : m) {
      if (s <= max_open) seqs.insert(s);
    }
  }
  CollectiveVerdict v;
  v.kind = Kind::kHungCollective;
  v.waiting = waiting;
  std::vector<int> entered;
  const Call* their_call = nullptr;
  for (int64_t s : seqs) {
    std::vector<int> missing, in;
    const Call* call = nullptr;
    for (const auto& [r, m] : calls) {
      auto it = m.find(s);
      if (it == m.end()) {
        missing.push_back(r);
      } else {
        in.push_back(r);
        if (!call || (!call->begin && it->second.begin)) call = &it->second;
      }
    }
    if (!missing.empty()) {
      v.collective = CollectiveRef{call ? call->op : "", s};
      v.missing = missing;
      entered = in;
      their_call = call;
      break;
    }
  }
  if (v.missing.empty()) {
    // Every rank entered it: the waiters' first open collective.
    int64_t first_open = max_open;
    std::string op;
    for (int r : waiting) {
      const auto& last = *calls.at(r).rbegin();
      if (last.first <= first_open) first_open = last.first, op = last.second.op;
    }
    v.collective = CollectiveRef{op, first_open};
    v.detail = ranksWord(waiting) + " blocked in " + op + " #" + std::to_string(first_open) +
               " that every rank entered";
    return v;
  }
  std::vector<int> waiters_here;
  for (int r : waiting) {
    if (std::find(v.missing.begin(), v.missing.end(), r) == v.missing.end()) waiters_here.push_back(r);
  }
  v.waiting = waiters_here;
  const CollectiveSide in_side = sideOf(entered, their_call);
  CollectiveSide out_side = sideOf(v.missing, nullptr);
  if (entered.size() > v.missing.size()) {
    // A majority entered it: the ranks missing from it are the odd ones.
    v.sides = {out_side, in_side};
    blameSide(v, v.missing, "");
  } else {
    const int64_t s = v.collective.seq;
    // Ranks that numbered a later call but never made this one skipped it.
    std::vector<int> skipped;
    for (int r : v.missing) {
      const auto& m = calls.at(r);
      if (!m.empty() && m.rbegin()->first > s) skipped.push_back(r);
    }
    const History h = historyBefore(calls, s);
    const bool kept = their_call && h.by_every.count(siteKey(their_call->op, their_call->numel,
                                                             their_call->begin ? their_call->begin->site : ""));
    if (!in_side.rank_condition.empty()) {
      v.sides = {in_side, out_side};
      blameSide(v, entered, "its call runs only on some ranks (" + shortSite(in_side.rank_condition) + ")");
    } else if (skipped == v.missing) {
      v.sides = {out_side, in_side};
      blameSide(v, v.missing, "it went on to later collectives without this one");
    } else if (kept) {
      v.sides = {out_side, in_side};
      blameSide(v, v.missing, "every rank made this call in earlier collectives");
    } else {
      v.sides = {in_side, out_side};
      ambiguous(v);
    }
  }
  v.detail = ranksWord(v.missing) + " never entered " + v.collective.op + " #" + std::to_string(v.collective.seq);
  if (!in_side.site.empty() || !in_side.rank_condition.empty()) v.detail += whereText(in_side);
  if (!waiters_here.empty()) v.detail += "; " + ranksWord(waiters_here) + " waited in a collective";
  return v;
}

}  // namespace faultline::diagnose
