// Attempts and recovery: each attempt's ranks and how it ended; whether a
// later attempt brought the job to its end.
#include "harness/diagnose/recovery.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "harness/diagnose/analysis.h"
#include "harness/diagnose/evidence.h"

namespace faultline::diagnose {
namespace {

// Every rank exited 0, or said its work was done before its launcher ended it (Ray).
bool everyRankEndedClean(const std::map<int, RankInput>& ranks) {
  return !ranks.empty() && std::all_of(ranks.begin(), ranks.end(), [](const auto& kv) {
    return kv.second.exit_known && (kv.second.exit_code == 0 || kv.second.work_done);
  });
}

std::string endedCleanText(const std::map<int, RankInput>& ranks) {
  const bool all_zero = std::all_of(ranks.begin(), ranks.end(), [](const auto& kv) { return kv.second.exit_code == 0; });
  return all_zero ? "every rank exited 0" : "every rank's work was done (its launcher ended the processes)";
}

// The rank's own error, as the shim recorded it (its `error` event).
std::optional<Evidence> errorOf(const RankInput& r) {
  for (const Event& e : r.events.events) {
    if (e.ev == "error") return evidenceFromEvent(e);
  }
  return std::nullopt;
}

// "NameError: ... (train.py:40)", else the exit status: what the failure was.
std::string failureText(const RankInput& r) {
  std::string s = exitText(r);
  if (auto e = errorOf(r)) s += ": " + shortDescribe(*e);
  return s;
}

// What makes two failures the same: the error's type and where it was
// raised, else the signal or exit code.
std::string signature(const RankInput& r) {
  if (auto e = errorOf(r)) {
    return e->type + "@" + (e->location ? baseName(e->location->file) + ":" + std::to_string(e->location->line) : "");
  }
  return exitText(r);
}

// A restart whose Gloo rendezvous connected to a port nobody listened on:
// torch 2.x's torchrun handed it the first attempt's store, keys and all
// (its static rendezvous, or c10d sharing the agent's store), and it read a
// dead rank's address (docs/SCENARIOS.md, "Recovery"). What to do about it.
std::string staleStoreAdvice(const RankInput& r) {
  const auto e = errorOf(r);
  if (!e || e->message.find("connectFullMesh failed") == std::string::npos ||
      e->message.find("Connection refused") == std::string::npos) {
    return "";
  }
  return " (the restart's Gloo rendezvous connected to a port nobody listened on: torchrun gave it the first "
         "attempt's store, with a dead rank's address in it; run it with --rdzv_backend=c10d and "
         "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1)";
}

struct Attempt {
  int index = 0;
  const std::map<int, RankInput>* ranks = nullptr;
  std::optional<int> first_failed;  // the earliest failed rank
};

std::vector<Attempt> collect(const RunInput& in) {
  std::vector<Attempt> out;
  out.push_back({0, &in.ranks, std::nullopt});
  for (const AttemptInput& a : in.attempts) out.push_back({a.attempt, &a.ranks, std::nullopt});
  for (Attempt& a : out) {
    std::optional<int64_t> at;
    for (const auto& [r, ri] : *a.ranks) {
      if (!failedExit(ri)) continue;
      // When it failed: its own error, where the shim recorded one (a Ray
      // worker raises and lives on until Ray ends every worker at once), else its exit.
      int64_t t = ri.exit_ns.value_or(std::numeric_limits<int64_t>::max());
      if (auto e = errorOf(ri); e && e->t_ns) t = std::min(t, *e->t_ns);
      if (!a.first_failed || t < *at) a.first_failed = r, at = t;
    }
  }
  return out;
}

int64_t runStart(const RunInput& in) {
  if (in.supervisor && in.supervisor->start_ns > 0) return in.supervisor->start_ns;
  int64_t t = std::numeric_limits<int64_t>::max();
  for (const auto& [r, ri] : in.ranks) {
    if (ri.start_ns) t = std::min(t, *ri.start_ns);
  }
  return t == std::numeric_limits<int64_t>::max() ? 0 : t;
}

int64_t msAfter(int64_t t_ns, int64_t start_ns) { return start_ns > 0 ? std::max<int64_t>(0, (t_ns - start_ns) / 1000000) : 0; }

// Rank 0's parameter fingerprints (what=params): hash -> the step after
// which the parameters were that (ddp_ready: step 0). The latest step wins.
std::map<std::string, int64_t> fingerprintSteps(const RankInput& r) {
  std::map<std::string, int64_t> out;
  for (const Event& e : r.events.events) {
    if (e.ev != "fingerprint" || e.what != "params" || e.hash.empty()) continue;
    if (e.at == "ddp_ready" || e.at == "optimizer_step") out[e.hash] = std::max(out[e.hash], e.at == "ddp_ready" ? 0 : e.step);
  }
  return out;
}

// The step of the first attempt the last one started from: its parameters
// right after DDP's broadcast, or after its first step (a checkpoint loaded
// into the wrapped model) one step before the match.
std::optional<int64_t> resumedFrom(const RunInput& in, const std::map<int, RankInput>& last) {
  const auto first0 = in.ranks.find(0);
  const auto last0 = last.find(0);
  if (first0 == in.ranks.end() || last0 == last.end()) return std::nullopt;
  const auto steps = fingerprintSteps(first0->second);
  for (const Event& e : last0->second.events.events) {
    if (e.ev != "fingerprint" || e.what != "params") continue;
    if (e.at == "ddp_ready") {
      if (auto it = steps.find(e.hash); it != steps.end()) return it->second;
    } else if (e.at == "optimizer_step" && e.step == 1) {
      if (auto it = steps.find(e.hash); it != steps.end() && it->second >= 1) return it->second - 1;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// Rank 0's parameters as the run left them: the last fingerprint of its
// parameters after an optimizer step (every step's, where restarts are
// allowed: FAULTLINE_FINGERPRINT_EVERY_STEP).
std::optional<std::string> finalParams(const std::map<int, RankInput>& ranks) {
  const auto r0 = ranks.find(0);
  if (r0 == ranks.end()) return std::nullopt;
  std::optional<std::string> last;
  for (const Event& e : r0->second.events.events) {
    if (e.ev == "fingerprint" && e.what == "params" && e.at == "optimizer_step" && !e.hash.empty()) last = e.hash;
  }
  return last;
}

// Whether the job that recovered ended with the parameters of the fault-free
// twin, and what the summary says of it.
std::pair<std::optional<bool>, std::string> sameResult(const RunInput& in, const std::map<int, RankInput>& last) {
  if (in.twin.empty()) return {std::nullopt, ""};
  if (!everyRankEndedClean(in.twin)) return {std::nullopt, "the fault-free twin run did not end clean, so nothing to compare"};
  const auto mine = finalParams(last);
  const auto twins = finalParams(in.twin);
  if (!mine || !twins) return {std::nullopt, "no final parameter fingerprint of rank 0 to compare with the fault-free twin's"};
  if (*mine == *twins) return {true, "the final parameters equal the fault-free run's"};
  return {false, "the final parameters differ from the fault-free run's (for a deterministic trainer: the resume lost state)"};
}

std::optional<int64_t> firstStepEndNs(const std::map<int, RankInput>& ranks) {
  std::optional<int64_t> t;
  for (const auto& [r, ri] : ranks) {
    for (const Event& e : ri.events.events) {
      if (e.ev == "step_end" && e.t > 0 && (!t || e.t < *t)) t = e.t;
    }
  }
  return t;
}

std::string plural(int n, const std::string& one) { return std::to_string(n) + " " + one + (n == 1 ? "" : "s"); }

}  // namespace

std::vector<AttemptReport> attemptsOf(const RunInput& in) {
  const bool allowed = in.supervisor && in.supervisor->max_restarts > 0;
  if (in.attempts.empty() && !allowed) return {};
  const int64_t start = runStart(in);
  std::vector<AttemptReport> out;
  for (const Attempt& a : collect(in)) {
    AttemptReport rep;
    rep.attempt = a.index;
    std::optional<int64_t> begin, end;
    bool all_ended = !a.ranks->empty();
    for (const auto& [r, ri] : *a.ranks) {
      rep.ranks.push_back({r, ri.pid.value_or(0), ri.exit_code, ri.signal});
      if (ri.start_ns) begin = begin ? std::min(*begin, *ri.start_ns) : *ri.start_ns;
      if (ri.exit_ns) {
        end = end ? std::max(*end, *ri.exit_ns) : *ri.exit_ns;
      } else {
        all_ended = false;
      }
      rep.last_step = std::max(rep.last_step, maxStepEnd(ri));
    }
    rep.start_ms = begin ? msAfter(*begin, start) : 0;
    if (end && all_ended) rep.end_ms = msAfter(*end, start);
    rep.failed_rank = a.first_failed;
    if (a.first_failed) {
      rep.ended = "rank " + std::to_string(*a.first_failed) + " " + failureText(a.ranks->at(*a.first_failed));
    } else {
      rep.ended = everyRankEndedClean(*a.ranks) ? endedCleanText(*a.ranks) : "its ranks' exits are not all known";
    }
    out.push_back(std::move(rep));
  }
  return out;
}

std::optional<Recovery> judgeRecovery(const RunInput& in, const std::vector<AttemptReport>& attempts) {
  if (attempts.empty()) return std::nullopt;
  Recovery v;
  v.restarts = static_cast<int>(attempts.size()) - 1;
  const AttemptReport& first = attempts.front();
  const AttemptReport& last = attempts.back();
  const std::vector<Attempt> runs = collect(in);
  const bool last_clean = !last.failed_rank && everyRankEndedClean(*runs.back().ranks) &&
                          static_cast<int>(last.ranks.size()) >= std::max(in.world_size, 1);
  v.recovered = first.failed_rank.has_value() && v.restarts > 0 && last_clean;
  if (v.recovered) {
    const RankInput& failed_rank = in.ranks.at(*first.failed_rank);
    if (auto t = firstStepEndNs(*runs.back().ranks); t && failed_rank.exit_ns) {
      v.time_to_recover_ms = std::max<int64_t>(0, (*t - *failed_rank.exit_ns) / 1000000);
    }
  }
  if (v.restarts > 0) {
    v.resumed_from_step = resumedFrom(in, *runs.back().ranks);
    if (v.resumed_from_step && first.last_step >= 0) v.steps_lost = std::max<int64_t>(0, first.last_step - *v.resumed_from_step);
  }
  // A crash loop: the same rank failed first, the same way, in every attempt.
  if (v.restarts > 0 && first.failed_rank) {
    const int r = *first.failed_rank;
    const std::string sig = signature(in.ranks.at(r));
    const bool same = std::all_of(runs.begin(), runs.end(), [&](const Attempt& a) {
      return a.first_failed == r && signature(a.ranks->at(r)) == sig;
    });
    if (same) v.crash_loop_rank = r;
  }
  if (!first.failed_rank) {
    v.summary = "no failure to recover from";
  } else if (v.recovered) {
    v.summary = "recovered after " + plural(v.restarts, "restart");
    if (v.time_to_recover_ms) v.summary += ", back at work " + std::to_string(*v.time_to_recover_ms) + " ms after the failure";
    if (v.resumed_from_step) {
      v.summary += "; resumed from step " + std::to_string(*v.resumed_from_step) +
                   (v.steps_lost ? ", " + plural(static_cast<int>(*v.steps_lost), "step") + " lost" : "");
    } else {
      v.summary += "; where it resumed is not known (no parameter fingerprint of the first attempt matches)";
    }
    const auto [same, said] = sameResult(in, *runs.back().ranks);
    v.same_result = same;
    if (!said.empty()) v.summary += "; " + said;
  } else if (v.crash_loop_rank) {
    const std::string all = attempts.size() == 2 ? "both attempts" : "all " + plural(static_cast<int>(attempts.size()), "attempt");
    v.summary = "not recovered: rank " + std::to_string(*v.crash_loop_rank) + " failed the same way in " + all +
                " (a crash loop): " + first.ended;
  } else if (v.restarts == 0) {
    v.summary = "not recovered: the launcher made no restart (max_restarts " +
                std::to_string(in.supervisor ? in.supervisor->max_restarts : 0) + ")";
    // A launcher that crashed in its own code could not restart anything.
    if (in.launcher && in.launcher->launcher_crashed && in.launcher->wrapper) {
      const PyTraceback& w = *in.launcher->wrapper;
      v.summary += ": it crashed first (" + w.shortType() + (w.message.empty() ? "" : ": " + w.message) + ")";
    }
  } else {
    // The supervisor says when it ended a restarted attempt that hung.
    std::string hung;
    if (in.supervisor) {
      const std::string prefix = kRestartedAttemptHung;
      for (const std::string& n : in.supervisor->notes) {
        if (n.rfind(prefix, 0) == 0) hung = n.substr(prefix.size());
      }
    }
    v.summary = "not recovered after " + plural(v.restarts, "restart") + ": " +
                (hung.empty() ? "the last attempt ended: " + last.ended : "the last attempt hung (" + hung + ")");
    if (hung.empty() && last.failed_rank) v.summary += staleStoreAdvice(runs.back().ranks->at(*last.failed_rank));
  }
  return v;
}

}  // namespace faultline::diagnose
