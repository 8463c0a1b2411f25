// Collective hang and mismatch analysis.
#include "harness/diagnose/collectives.h"

#include <algorithm>
#include <set>

#include "harness/diagnose/rank_list.h"

namespace faultline::diagnose {
namespace {

struct Call {
  std::string op;
  int64_t numel = -1;
  bool ended = false;
};

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
  return (v.size() == 1 ? "rank " : "ranks ") + joinRanks(v, ListStyle::kAnd);
}

}  // namespace

std::optional<CollectiveVerdict> findCollectiveMismatch(const std::map<int, const EventLog*>& logs) {
  const auto calls = collect(logs);
  if (calls.size() < 2) return std::nullopt;
  std::set<int64_t> seqs;
  for (const auto& [r, m] : calls) {
    for (const auto& [s, c] : m) seqs.insert(s);
  }
  std::set<std::pair<std::string, int64_t>> seen;  // (op, numel) used before this seq
  for (int64_t s : seqs) {
    std::map<std::pair<std::string, int64_t>, std::vector<int>> by;
    for (const auto& [r, m] : calls) {
      auto it = m.find(s);
      if (it != m.end() && !it->second.op.empty()) by[{it->second.op, it->second.numel}].push_back(r);
    }
    if (by.size() > 1) {
      // The odd rank: in the minority; on a tie, the one whose call was never seen before.
      size_t best = 0;
      for (const auto& [k, rs] : by) best = std::max(best, rs.size());
      std::vector<std::pair<std::pair<std::string, int64_t>, std::vector<int>>> majority, minority;
      for (const auto& kv : by) (kv.second.size() == best ? majority : minority).push_back(kv);
      if (majority.size() > 1) {
        std::vector<decltype(majority)::value_type> fresh, known;
        for (const auto& kv : majority) (seen.count(kv.first) ? known : fresh).push_back(kv);
        if (fresh.size() == 1 && !known.empty()) {
          minority.push_back(fresh[0]);
          majority = known;
        }
      }
      CollectiveVerdict v;
      v.kind = Kind::kCollectiveMismatch;
      const auto& [mkey, mranks] = majority.front();
      v.collective = CollectiveRef{mkey.first, s};
      std::vector<int> odd;
      std::string what;
      for (const auto& [k, rs] : minority) {
        odd.insert(odd.end(), rs.begin(), rs.end());
        what += (what.empty() ? "" : ", ") + k.first + " of " + std::to_string(k.second) + " elements";
      }
      std::sort(odd.begin(), odd.end());
      if (odd.size() == 1 && majority.size() == 1) v.rank = odd.front();
      v.missing = odd;
      for (const auto& [r, m] : calls) {
        auto it = m.rbegin();
        if (it != m.rend() && !it->second.ended) v.waiting.push_back(r);
      }
      if (majority.size() == 1 && !odd.empty()) {
        v.detail = ranksWord(odd) + " called " + what + " at collective #" + std::to_string(s) + " while " +
                   ranksWord(mranks) + " called " + mkey.first + " of " + std::to_string(mkey.second) + " elements";
      } else {
        v.detail = "ranks disagree at collective #" + std::to_string(s);
      }
      return v;
    }
    for (const auto& [k, rs] : by) seen.insert(k);
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
  for (int64_t s : seqs) {
    std::vector<int> missing;
    std::string op;
    for (const auto& [r, m] : calls) {
      auto it = m.find(s);
      if (it == m.end()) missing.push_back(r);
      else if (op.empty()) op = it->second.op;
    }
    if (!missing.empty()) {
      v.collective = CollectiveRef{op, s};
      v.missing = missing;
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
  if (v.missing.size() == 1) v.rank = v.missing.front();
  std::vector<int> waiters_here;
  for (int r : waiting) {
    if (std::find(v.missing.begin(), v.missing.end(), r) == v.missing.end()) waiters_here.push_back(r);
  }
  v.waiting = waiters_here;
  v.detail = ranksWord(v.missing) + " never entered " + v.collective.op + " #" + std::to_string(v.collective.seq);
  if (!waiters_here.empty()) v.detail += "; " + ranksWord(waiters_here) + " waited in a collective";
  return v;
}

}  // namespace faultline::diagnose
