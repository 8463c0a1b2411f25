// Findings from events.
#include "harness/diagnose/findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "harness/diagnose/instruments.h"
#include "harness/diagnose/logged_metrics.h"
#include "harness/diagnose/rank_list.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

std::string fmt(double v, int prec = 4) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v);
  return buf;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Why `what` is not fully observed on this rank; nullopt when it is, or when
// the rank says nothing about its patches.
std::optional<std::string> gapOf(const RankInput& r, ShimEvidence what) {
  const auto inst = rankInstruments(r.events);
  return inst ? missingEvidence(*inst, what) : std::nullopt;
}

}  // namespace

namespace {

// Where a fingerprint was taken, in run order: before DDP's broadcast (the
// shim's ddp_init; a probe's step 0, which has no `at`), right after it
// (ddp_ready), then at optimizer steps (the shim) or training steps (a probe).
struct Point {
  int order = 0;  // 0 init, 1 ddp_ready, 2 during training
  int64_t step = 0;
  bool operator<(const Point& o) const { return std::tie(order, step) < std::tie(o.order, o.step); }
};

Point pointOf(const Event& e) {
  if (e.at == "ddp_init" || (e.at.empty() && e.step <= 0)) return {0, e.step};
  if (e.at == "ddp_ready") return {1, e.step};
  return {2, e.step};
}

std::string pointText(const Point& p) {
  if (p.order == 0) return "at init (step " + std::to_string(p.step) + ")";
  if (p.order == 1) return "right after DDP's broadcast";
  return "at step " + std::to_string(p.step);
}

// point -> rank -> hash, of one fingerprint `what` (params, buffers).
using Prints = std::map<Point, std::map<int, std::string>>;

Prints fingerprints(const RunInput& in, const std::string& what) {
  Prints out;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev != "fingerprint" || e.hash.empty()) continue;
      if ((e.what.empty() ? std::string("params") : e.what) == what) out[pointOf(e)][r] = e.hash;
    }
  }
  return out;
}

// The ranks outside the largest group of equal hashes (ties: the group
// holding the lowest rank), and the groups as evidence; empty when all agree.
std::vector<int> oddRanks(const std::map<int, std::string>& hashes, std::string& evidence) {
  std::map<std::string, std::vector<int>> groups;
  for (const auto& [r, h] : hashes) groups[h].push_back(r);
  if (groups.size() < 2) return {};
  const std::vector<int>* major = nullptr;
  for (const auto& [h, rs] : groups) {
    if (!major || rs.size() > major->size() || (rs.size() == major->size() && rs.front() < major->front())) {
      major = &rs;
    }
  }
  std::vector<int> odd;
  for (const auto& [h, rs] : groups) {
    evidence += (evidence.empty() ? "" : "; ") + std::string("ranks ") + joinRanks(rs) + ": " + h;
    if (&rs != major) odd.insert(odd.end(), rs.begin(), rs.end());
  }
  std::sort(odd.begin(), odd.end());
  return odd;
}

bool agree(const std::map<int, std::string>& hashes) {
  std::string unused;
  return hashes.size() >= 2 && oddRanks(hashes, unused).empty();
}

}  // namespace

std::vector<Finding> findSeedMismatch(const RunInput& in) {
  const Prints by_point = fingerprints(in, "params");
  if (by_point.empty()) return {};
  const auto& [first, hashes] = *by_point.begin();
  if (hashes.size() < 2) return {};
  std::string evidence;
  const std::vector<int> odd = oddRanks(hashes, evidence);
  if (odd.empty()) return {};
  // Repaired: the next fingerprint that every rank of the first took agrees
  // (DDP's constructor broadcast rank 0's parameters over them).
  std::optional<Point> repaired_at;
  for (auto it = std::next(by_point.begin()); it != by_point.end(); ++it) {
    if (it->second.size() < hashes.size()) continue;
    if (agree(it->second)) repaired_at = it->first;
    break;
  }
  Finding f;
  f.kind = Kind::kSeedMismatch;
  f.ranks = odd;
  f.severity = repaired_at ? "warning" : "error";
  const bool at_init = first.order == 0;
  f.summary = std::string("parameter fingerprints differ across ranks ") +
              (at_init ? "at init (step " + std::to_string(first.step) + ")" : pointText(first)) + ": rank" +
              (odd.size() == 1 ? " " : "s ") + joinRanks(odd) + " diverged";
  if (repaired_at) {
    f.summary += "; DDP's broadcast overwrote the parameters with rank 0's (equal " + pointText(*repaired_at) +
                 "), but the other random streams (dropout, data augmentation, sampling) still differ across ranks";
  } else if (by_point.size() > 1) {
    f.summary += ", and they still differ later: nothing made the replicas equal";
  }
  f.evidence = "params fingerprint " + pointText(first) + ": " + evidence;
  return {f};
}

std::vector<Finding> findDivergedParams(const RunInput& in) {
  // Replicas that were equal (after DDP's broadcast, or from the start) and
  // then differ: their gradients were not all-reduced (a model used outside
  // its DDP wrapper, a manual gradient path) or their buffers were not
  // broadcast (broadcast_buffers=False). Never-equal replicas are the seed
  // mismatch's.
  std::vector<Finding> out;
  for (const std::string what : {"params", "buffers"}) {
    const Prints by_point = fingerprints(in, what);
    bool were_equal = false;
    Point equal_at;
    for (const auto& [pt, hashes] : by_point) {
      if (hashes.size() < 2) continue;
      std::string evidence;
      const std::vector<int> odd = oddRanks(hashes, evidence);
      if (odd.empty()) {
        were_equal = true;
        equal_at = pt;
        continue;
      }
      if (!were_equal) {
        if (what == "params") break;  // differed from the first: seed_mismatch
        // Buffers are fingerprinted only once they should agree.
      }
      Finding f;
      f.kind = Kind::kDivergedParams;
      f.ranks = odd;
      f.severity = "error";
      if (what == "params") {
        f.summary = "parameters diverged across ranks " + pointText(pt) + " (equal " + pointText(equal_at) +
                    "): rank" + (odd.size() == 1 ? " " : "s ") + joinRanks(odd) +
                    " trained on gradients that were not all-reduced (a model used outside its DDP wrapper, or a "
                    "manual gradient path)";
      } else {
        f.summary = std::string("buffers differ across ranks ") + pointText(pt) + ": rank" +
                    (odd.size() == 1 ? " " : "s ") + joinRanks(odd) + (odd.size() == 1 ? " kept its own" : " kept their own") +
                    " (DDP with broadcast_buffers=False): running statistics, and any checkpoint or evaluation, "
                    "depend on the rank";
      }
      f.evidence = what + " fingerprint " + pointText(pt) + ": " + evidence;
      out.push_back(std::move(f));
      break;
    }
  }
  return out;
}

std::vector<Finding> findUnshardedData(const RunInput& in) {
  // epoch -> rank -> samples event
  std::map<int64_t, std::map<int, const Event*>> by_epoch;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "samples") by_epoch[e.epoch][r] = &e;
    }
  }
  for (const auto& [epoch, ranks] : by_epoch) {
    if (ranks.size() < 2) continue;
    bool have_indices = true;
    for (const auto& [r, e] : ranks) have_indices = have_indices && !e->indices.empty() && e->count == static_cast<int64_t>(e->indices.size());
    int64_t total = 0;
    int64_t dup = 0;
    std::set<int> involved;
    if (have_indices) {
      std::unordered_map<int64_t, int> owner;  // index -> first rank, or -2 once shared
      for (const auto& [r, e] : ranks) {
        for (int64_t idx : e->indices) {
          ++total;
          auto [it, fresh] = owner.emplace(idx, r);
          if (!fresh) {
            ++dup;
            if (it->second >= 0) involved.insert(it->second);
            involved.insert(r);
          }
        }
      }
    } else {
      // Hashes only: equal (hash, count) pairs mean identical sample sets.
      std::map<std::pair<std::string, int64_t>, std::vector<int>> same;
      for (const auto& [r, e] : ranks) {
        total += std::max<int64_t>(e->count, 0);
        if (!e->hash.empty() && e->count > 0) same[{e->hash, e->count}].push_back(r);
      }
      for (const auto& [k, rs] : same) {
        if (rs.size() < 2) continue;
        dup += k.second * static_cast<int64_t>(rs.size() - 1);
        involved.insert(rs.begin(), rs.end());
      }
    }
    // DistributedSampler pads with fewer than world_size repeated samples; more is no sharding.
    const int64_t padding = std::max<int64_t>(static_cast<int64_t>(ranks.size()), in.world_size);
    if (total <= 0 || dup < padding) continue;
    const double pct = 100.0 * static_cast<double>(dup) / static_cast<double>(total);
    Finding f;
    f.kind = Kind::kUnshardedData;
    f.ranks.assign(involved.begin(), involved.end());
    f.severity = "error";
    f.summary = "sample sets overlap across ranks in epoch " + std::to_string(epoch) + ": " + fmt(pct, 3) +
                "% of samples are seen by more than one rank";
    f.evidence = std::to_string(dup) + " of " + std::to_string(total) + " samples repeated (" +
                 (have_indices ? "from indices" : "from set hashes") + ")";
    return {f};
  }
  return {};
}

std::vector<Finding> findUnsyncedMetrics(const RunInput& in) {
  struct Key {
    std::string name;
    int64_t step;
    bool operator<(const Key& o) const { return std::tie(name, step) < std::tie(o.name, o.step); }
  };
  std::map<Key, std::map<int, double>> local, global;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev != "metric" || !e.value) continue;
      (e.scope == "global" ? global : local)[{e.name, e.step}][r] = *e.value;
    }
  }
  auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-4 * std::max({1.0, std::fabs(a), std::fabs(b)}); };
  const size_t world = static_cast<size_t>(std::max(in.world_size, 1));
  for (const auto& [k, g] : global) {
    // Ranks that report one global value must agree.
    std::set<int> off;
    const double ref = g.begin()->second;
    for (const auto& [r, v] : g) {
      if (!close(v, ref)) off.insert(r);
    }
    std::string evidence;
    if (!off.empty()) {
      for (const auto& [r, v] : g) evidence += (evidence.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " + fmt(v, 6);
      Finding f;
      f.kind = Kind::kUnsyncedMetrics;
      for (const auto& [r, v] : g) f.ranks.push_back(r);
      f.severity = "error";
      f.summary = "global metric '" + k.name + "' differs across ranks at step " + std::to_string(k.step);
      f.evidence = evidence;
      return {f};
    }
    // A global value must be the all-reduced (mean or sum) of every rank's local value.
    auto lit = local.find(k);
    if (lit == local.end() || lit->second.size() < std::max<size_t>(world, 2)) continue;
    double sum = 0;
    for (const auto& [r, v] : lit->second) sum += v;
    const double mean = sum / static_cast<double>(lit->second.size());
    std::vector<int> bad;
    for (const auto& [r, v] : g) {
      if (!close(v, mean) && !close(v, sum)) bad.push_back(r);
    }
    if (bad.empty()) continue;
    std::string locals;
    for (const auto& [r, v] : lit->second) locals += (locals.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " " + fmt(v, 6);
    Finding f;
    f.kind = Kind::kUnsyncedMetrics;
    f.ranks = bad;
    f.severity = "error";
    const double reported = g.at(bad.front());
    std::string same_as;
    for (const auto& [r, v] : lit->second) {
      if (close(v, reported)) {
        same_as = " (equal to rank " + std::to_string(r) + "'s local value: not all-reduced)";
        break;
      }
    }
    f.summary = "rank " + std::to_string(bad.front()) + " reports '" + k.name + "' = " + fmt(reported, 6) +
                " as global at step " + std::to_string(k.step) + ", but the all-reduced mean is " + fmt(mean, 6) + same_as;
    f.evidence = "local values: " + locals;
    return {f};
  }
  return {};
}

std::vector<Finding> findConcurrentWrites(const RunInput& in) {
  std::map<std::string, std::set<int>> writers;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "file_open" && !e.path.empty() && (e.mode.find('w') != std::string::npos ||
                                                     e.mode.find('a') != std::string::npos)) {
        writers[e.path].insert(r);
      }
    }
  }
  std::vector<Finding> out;
  for (const auto& [path, ranks] : writers) {
    if (ranks.size() < 2) continue;
    Finding f;
    f.kind = Kind::kConcurrentWrites;
    f.ranks.assign(ranks.begin(), ranks.end());
    f.severity = "error";
    f.summary = std::to_string(ranks.size()) + " ranks (" + joinRanks(f.ranks) + ") opened " + path + " for writing";
    // Interleaving: lines that name different ranks in one file. A run
    // directory that was moved keeps its files: try the path's tail under it.
    auto text = readTail(path, 4 << 20);
    for (size_t slash = path.find('/', 1); !text && slash != std::string::npos && !in.dir.empty();
         slash = path.find('/', slash + 1)) {
      text = readTail(in.dir + path.substr(slash), 4 << 20);
    }
    if (!text) {
      f.evidence = "the file no longer exists";
    } else {
      std::set<int> named;
      for (std::string_view l : splitLines(*text)) {
        for (std::string_view key : {"rank=", "rank ", "\"rank\": ", "\"rank\":"}) {
          const size_t p = l.find(key);
          if (p == std::string_view::npos) continue;
          const size_t d = p + key.size();
          if (d < l.size() && l[d] >= '0' && l[d] <= '9') named.insert(std::atoi(std::string(l.substr(d, 6)).c_str()));
          break;
        }
      }
      f.evidence = std::to_string(text->size()) + " bytes";
      if (named.size() > 1) {
        f.evidence += "; lines from ranks " + joinRanks(std::vector<int>(named.begin(), named.end())) +
                      " are interleaved in the file";
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> findStraggler(const RunInput& in) {
  // Busy time per step: step duration minus time spent inside collectives
  // (DDP equalises step times; the straggler is the one the others wait for).
  std::map<int, double> med;
  std::map<int, std::vector<double>> busy_of;
  for (const auto& [r, ri] : in.ranks) {
    // Time in an untraced collective would count as work.
    if (gapOf(ri, ShimEvidence::kCollectives) || gapOf(ri, ShimEvidence::kSteps)) continue;
    std::vector<double> busy;
    int64_t begin = -1;
    int64_t coll_begin = -1;
    int64_t in_coll = 0;
    for (const Event& e : ri.events.events) {
      if (e.ev == "step_begin") {
        begin = e.t;
        in_coll = 0;
      } else if (e.ev == "collective_begin" && begin >= 0) {
        coll_begin = e.t;
      } else if (e.ev == "collective_end" && coll_begin >= 0) {
        in_coll += e.t - coll_begin;
        coll_begin = -1;
      } else if (e.ev == "step_end" && begin >= 0) {
        busy.push_back(static_cast<double>(e.t - begin - in_coll) / 1e6);
        begin = -1;
      }
    }
    // Five steps at least: in fewer, a rank the machine's scheduler slowed at
    // random (CI's spawn@2.13, 3 slow steps of 4 beside a build) reads as one
    // slow step after step.
    if (busy.size() >= 5) {
      med[r] = median(busy);
      busy_of[r] = std::move(busy);
    }
  }
  if (med.size() < 2) return {};
  std::vector<Finding> out;
  // Each rank against the others: every median sorted once, and "the others"
  // read from it by skipping one instance of the rank's own value (linear in
  // the ranks after one sort, where a copy per rank was quadratic).
  std::vector<double> all;
  for (const auto& [r, m] : med) all.push_back(m);
  std::sort(all.begin(), all.end());
  for (const auto& [r, m] : med) {
    const size_t skip = static_cast<size_t>(std::lower_bound(all.begin(), all.end(), m) - all.begin());
    const size_t n = all.size() - 1;
    auto other = [&](size_t k) { return all[k < skip ? k : k + 1]; };
    const double base = n % 2 ? other(n / 2) : (other(n / 2 - 1) + other(n / 2)) / 2;
    const size_t k90 = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
    const double p90 = other(k90 == 0 ? 0 : k90 - 1);
    // Slow in at least 2 steps of 3, by more than twice what 9 ranks in 10 of
    // the others take: ranks that share too few cores (64 on 2) are each slowed
    // at random steps, and against the median of all ranks some of them always
    // look slow. A straggler is slow step after step, and slower than nearly
    // every other rank.
    const double limit = 2.0 * p90 + 5.0;
    const auto& busy = busy_of.at(r);
    const auto slow = std::count_if(busy.begin(), busy.end(), [&](double b) { return b > limit; });
    if (3 * static_cast<size_t>(slow) >= 2 * busy.size()) {
      Finding f;
      f.kind = Kind::kStraggler;
      f.ranks = {r};
      f.severity = "warning";
      f.summary = "rank " + std::to_string(r) + " is a straggler: " + fmt(m, 3) + " ms of work per step vs " +
                  fmt(base, 3) + " ms on the other ranks";
      f.evidence = "median step time outside collectives";
      out.push_back(std::move(f));
    }
  }
  return out;
}

namespace {

// The chance that an event of probability p happens k times or more in n
// tries (a binomial tail).
double chanceOfAtLeast(int k, int n, double p) {
  if (k <= 0) return 1.0;
  if (k > n) return 0.0;
  double sum = 0;
  for (int i = k; i <= n; ++i) {
    const double log_term = std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) + i * std::log(p) +
                            (n - i) * std::log1p(-p);
    sum += std::exp(log_term);
  }
  return std::min(sum, 1.0);
}

}  // namespace

// A straggler node (multi-node): the other nodes wait for it collective after
// collective, the first aside. A node is ready for a collective when its last rank enters it;
// the last node ready by more than kGapNs over the next is the one the others
// waited for. One node that caused most of the waiting, in several
// collectives, for a tenth of the run's collective span or more, straggles,
// if it was late by far (kFarNs on average) or more often than chance.
// Busy time per step (findStraggler) cannot see it: a node stopped from
// outside, or slowed as a whole, shows as its peers' time in the collective,
// and its own ranks compare only with each other.
std::vector<Finding> findStragglerNode(const RunInput& in) {
  constexpr int64_t kGapNs = 20'000'000;  // 20 ms: well past one collective's jitter here
  constexpr int64_t kFarNs = 100'000'000;  // 100 ms on average: well past a loaded machine's
  std::map<std::string, int> node_index;
  std::vector<std::string> names;
  std::vector<std::vector<int>> node_ranks;
  for (const auto& [r, ri] : in.ranks) {
    if (ri.node.empty()) continue;
    auto [it, added] = node_index.emplace(ri.node, static_cast<int>(names.size()));
    if (added) {
      names.push_back(ri.node);
      node_ranks.emplace_back();
    }
    node_ranks[it->second].push_back(r);
  }
  if (names.size() < 2) return {};
  // seq -> each node's latest entry, and how many of its ranks entered.
  struct Ready {
    std::vector<int64_t> t;
    std::vector<int> entered;
  };
  std::unordered_map<int64_t, Ready> by_seq;
  int64_t first = 0, last = 0;
  for (const auto& [r, ri] : in.ranks) {
    if (ri.node.empty() || gapOf(ri, ShimEvidence::kCollectives)) continue;
    const int n = node_index.at(ri.node);
    for (const Event& e : ri.events.events) {
      if (e.ev != "collective_begin" || e.seq < 0) continue;
      Ready& rd = by_seq[e.seq];
      if (rd.t.empty()) {
        rd.t.assign(names.size(), 0);
        rd.entered.assign(names.size(), 0);
      }
      rd.t[n] = std::max(rd.t[n], e.t);
      ++rd.entered[n];
      first = first ? std::min(first, e.t) : e.t;
      last = std::max(last, e.t);
    }
  }
  // The first collective waits for whichever node started last (a launcher
  // starts nodes seconds apart, and torch's import takes what it takes): that
  // is the start-up's skew, not a straggler's, and it is not counted.
  std::optional<int64_t> first_seq;
  for (const auto& [seq, rd] : by_seq) first_seq = first_seq ? std::min(*first_seq, seq) : seq;
  std::vector<int64_t> waited(names.size(), 0), worst(names.size(), 0);
  std::vector<int> times(names.size(), 0);
  int64_t all_waited = 0;
  for (const auto& [seq, rd] : by_seq) {
    if (seq == first_seq) continue;
    bool complete = true;
    for (size_t n = 0; n < names.size(); ++n) complete = complete && rd.entered[n] == static_cast<int>(node_ranks[n].size());
    if (!complete) continue;  // a collective some rank never entered is a hang's, not a straggler's
    size_t latest = 0;
    for (size_t n = 1; n < names.size(); ++n) latest = rd.t[n] > rd.t[latest] ? n : latest;
    int64_t next = 0;
    for (size_t n = 0; n < names.size(); ++n) {
      if (n != latest) next = std::max(next, rd.t[n]);
    }
    const int64_t gap = rd.t[latest] - next;
    if (gap <= kGapNs) continue;
    waited[latest] += gap;
    worst[latest] = std::max(worst[latest], gap);
    ++times[latest];
    all_waited += gap;
  }
  std::vector<Finding> out;
  const int64_t span = last - first;
  int late_collectives = 0;
  for (int t : times) late_collectives += t;
  for (size_t n = 0; n < names.size(); ++n) {
    if (times[n] < 3 || span <= 0 || 10 * waited[n] < span || 5 * waited[n] < 4 * all_waited) continue;
    // Late by more than a loaded machine's scheduling jitter (51 ms at most,
    // seen at load 5 on 2 cores), or late more often than chance makes a node
    // when the nodes are equally slow: a short run's three late collectives
    // of 50 ms are a coin thrown three times.
    const bool far = waited[n] >= times[n] * kFarNs;
    const bool often = chanceOfAtLeast(times[n], late_collectives, 1.0 / static_cast<double>(names.size())) < 0.05;
    if (!far && !often) continue;
    Finding f;
    f.kind = Kind::kStraggler;
    f.ranks = node_ranks[n];
    f.severity = "warning";
    f.summary = "node " + names[n] + " is a straggler: the other nodes waited " + fmt(static_cast<double>(waited[n]) / 1e9, 3) +
                " s for it in " + std::to_string(times[n]) + " of " + std::to_string(by_seq.size()) +
                " collectives (up to " + fmt(static_cast<double>(worst[n]) / 1e6, 3) + " ms each), its " +
                rankRangeText(f.ranks) + " entering last";
    f.evidence = "collective_begin of every rank, by node: the last node ready, by more than 20 ms";
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> findNoPgDestroy(const RunInput& in) {
  std::vector<int> ranks;
  bool from_events = false;
  std::string warning;  // torch 2.x's own words, for ranks without events
  for (const auto& [r, ri] : in.ranks) {
    // A pg_destroy the shim could not see is no evidence of a missing one.
    if (gapOf(ri, ShimEvidence::kProcessGroup)) continue;
    bool init = false, destroy = false, exit0 = false;
    for (const Event& e : ri.events.events) {
      if (e.ev == "pg_init") init = true;
      if (e.ev == "pg_destroy") destroy = true;
      if (e.ev == "exit" && e.code == 0) exit0 = true;
    }
    // Only ranks that ended normally: a crashed rank cannot be expected to clean up.
    const bool clean_exit = exit0 || (ri.exit_known && ri.exit_code && *ri.exit_code == 0 && !ri.signal);
    const bool failed = (ri.exit_code && *ri.exit_code != 0) || ri.signal.has_value() ||
                        std::any_of(ri.errors.begin(), ri.errors.end(), [](const Evidence& e) { return !e.collateral; });
    if (init && !destroy && clean_exit) {
      ranks.push_back(r);
      from_events = true;
    } else if (!init && !ri.pg_not_destroyed.empty() && !failed) {
      // Uninstrumented: the process group's destructor said so itself.
      ranks.push_back(r);
      if (warning.empty()) warning = ri.pg_not_destroyed;
    }
  }
  if (ranks.empty()) return {};
  Finding f;
  f.kind = Kind::kNoPgDestroy;
  f.ranks = ranks;
  f.severity = "warning";
  f.summary = std::string("rank") + (ranks.size() == 1 ? " " : "s ") + joinRanks(ranks) +
              " exited without destroying the process group";
  f.evidence = from_events ? "pg_init without pg_destroy before a clean exit" : std::string();
  if (!warning.empty()) f.evidence += (f.evidence.empty() ? "" : "; ") + ("torch: " + warning);
  return {f};
}

std::vector<Finding> findFindings(const RunInput& in) {
  std::vector<Finding> out;
  for (auto fn : {findSeedMismatch, findDivergedParams, findUnshardedData, findUnsyncedMetrics,
                  findUnsyncedLoggedMetrics, findConcurrentWrites, findStraggler, findStragglerNode, findNoPgDestroy}) {
    auto v = fn(in);
    out.insert(out.end(), std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  }
  return out;
}

std::vector<UncheckedFinding> findUnchecked(const RunInput& in, const std::vector<Finding>& found) {
  struct Need {
    Kind kind;
    std::vector<ShimEvidence> evidence;
  };
  const Need needs[] = {
      {Kind::kSeedMismatch, {ShimEvidence::kFingerprint}},
      {Kind::kDivergedParams, {ShimEvidence::kFingerprint}},
      {Kind::kUnshardedData, {ShimEvidence::kSamples}},
      {Kind::kUnsyncedMetrics, {ShimEvidence::kMetricSinks}},
      {Kind::kStraggler, {ShimEvidence::kSteps, ShimEvidence::kCollectives}},
      {Kind::kNoPgDestroy, {ShimEvidence::kProcessGroup}},
  };
  std::vector<UncheckedFinding> out;
  for (const Need& n : needs) {
    if (std::any_of(found.begin(), found.end(), [&](const Finding& f) { return f.kind == n.kind; })) continue;
    UncheckedFinding u;
    u.kind = n.kind;
    for (const auto& [r, ri] : in.ranks) {
      for (ShimEvidence what : n.evidence) {
        if (auto gap = gapOf(ri, what)) {
          u.ranks.push_back(r);
          u.reason += (u.reason.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " + *gap;
          break;
        }
      }
    }
    if (!u.ranks.empty()) out.push_back(std::move(u));
  }
  return out;
}

nlohmann::json uncheckedJson(const std::vector<UncheckedFinding>& unchecked) {
  nlohmann::json out = nlohmann::json::array();
  for (const UncheckedFinding& u : unchecked) {
    out.push_back({{"kind", kindName(u.kind)}, {"ranks", u.ranks}, {"reason", u.reason}});
  }
  return out;
}

}  // namespace faultline::diagnose
