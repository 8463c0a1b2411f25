// Findings from events.
#include "harness/diagnose/findings.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

#include "harness/diagnose/instruments.h"
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

// Nearest-rank percentile, p in [0, 1].
double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[k == 0 ? 0 : k - 1];
}

// Why `what` is not fully observed on this rank; nullopt when it is, or when
// the rank says nothing about its patches.
std::optional<std::string> gapOf(const RankInput& r, ShimEvidence what) {
  const auto inst = rankInstruments(r.events);
  return inst ? missingEvidence(*inst, what) : std::nullopt;
}

}  // namespace

std::vector<Finding> findSeedMismatch(const RunInput& in) {
  // step -> rank -> hash, for parameter fingerprints.
  std::map<int64_t, std::map<int, std::string>> by_step;
  for (const auto& [r, ri] : in.ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "fingerprint" && (e.what == "params" || e.what.empty()) && !e.hash.empty()) {
        by_step[e.step][r] = e.hash;
      }
    }
  }
  for (const auto& [step, hashes] : by_step) {
    if (hashes.size() < 2) continue;
    std::map<std::string, std::vector<int>> groups;
    for (const auto& [r, h] : hashes) groups[h].push_back(r);
    if (groups.size() < 2) continue;
    // The ranks outside the largest group (ties: the group holding the lowest rank) differ.
    const std::vector<int>* major = nullptr;
    for (const auto& [h, rs] : groups) {
      if (!major || rs.size() > major->size() || (rs.size() == major->size() && rs.front() < major->front())) {
        major = &rs;
      }
    }
    std::vector<int> odd;
    std::string evidence;
    for (const auto& [h, rs] : groups) {
      evidence += (evidence.empty() ? "" : "; ") + std::string("ranks ") + joinRanks(rs) + ": " + h;
      if (&rs != major) odd.insert(odd.end(), rs.begin(), rs.end());
    }
    std::sort(odd.begin(), odd.end());
    Finding f;
    f.kind = Kind::kSeedMismatch;
    f.ranks = odd;
    f.severity = "error";
    const bool at_init = step == by_step.begin()->first;
    f.summary = std::string("parameter fingerprints differ across ranks ") +
                (at_init ? "at init (step " + std::to_string(step) + ")" : "from step " + std::to_string(step)) +
                ": rank" + (odd.size() == 1 ? " " : "s ") + joinRanks(odd) + " diverged";
    f.evidence = "params fingerprint at step " + std::to_string(step) + ": " + evidence;
    return {f};
  }
  return {};
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
    if (busy.size() >= 3) {
      med[r] = median(busy);
      busy_of[r] = std::move(busy);
    }
  }
  if (med.size() < 2) return {};
  std::vector<Finding> out;
  for (const auto& [r, m] : med) {
    std::vector<double> others;
    for (const auto& [o, om] : med) {
      if (o != r) others.push_back(om);
    }
    const double base = median(others);
    // Slow in at least 2 steps of 3, by more than twice what 9 ranks in 10 of
    // the others take: ranks that share too few cores (64 on 2) are each slowed
    // at random steps, and against the median of all ranks some of them always
    // look slow. A straggler is slow step after step, and slower than nearly
    // every other rank.
    const double limit = 2.0 * percentile(others, 0.9) + 5.0;
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
  for (auto fn : {findSeedMismatch, findUnshardedData, findUnsyncedMetrics, findConcurrentWrites, findStraggler,
                  findNoPgDestroy}) {
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
      {Kind::kUnshardedData, {ShimEvidence::kSamples}},
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
