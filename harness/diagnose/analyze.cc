// Root-cause analysis: the analysed input, the first root-cause rule that
// names a cause (root_cause_rules.h), each rank's role, and the timeline.
#include "harness/diagnose/analyze.h"

#include <algorithm>
#include <map>

#include "harness/diagnose/node_rules.h"
#include "harness/diagnose/spans.h"

namespace faultline::diagnose {

std::vector<RankVerdict> assignRoles(const Analysis& a, const std::optional<Candidate>& root) {
  std::vector<RankVerdict> out;
  const RootCause* rc = root ? &root->cause : nullptr;
  std::optional<int> root_rank;
  if (root) root_rank = root->root_rank;
  static const std::vector<int> kNone;
  const std::vector<int>& waiting_ranks = root ? root->waiting_ranks : kNone;
  for (const auto& [r, st] : a.states) {
    RankVerdict v;
    v.rank = r;
    const RankInput& ri = *st.in;
    if (root && std::find(root->lost_ranks.begin(), root->lost_ranks.end(), r) != root->lost_ranks.end()) {
      // Its whole node went away (or was cut off): it is lost, not at fault.
      v.role = RankRole::kLost;
      v.diagnosis = "lost with node " + rc->node.value_or("?") + ": " + exitText(ri);
      if (st.has_evidence && st.evidence.collateral) v.diagnosis += "; " + shortDescribe(st.evidence);
    } else if (root_rank && *root_rank == r) {
      v.role = RankRole::kRootCause;
      v.diagnosis = rc ? rc->summary : rankEvidenceText(st);
    } else if (rc && rc->kind == Kind::kCollectiveMismatch && rc->blame != Blame::kAmbiguous &&
               std::find(rc->missing_ranks.begin(), rc->missing_ranks.end(), r) != rc->missing_ranks.end()) {
      v.role = RankRole::kRootCause;
      v.diagnosis = rc->summary;
    } else if (rc && (rc->blame == Blame::kAllRanks || rc->blame == Blame::kRanks) &&
               std::find(rc->ranks.begin(), rc->ranks.end(), r) != rc->ranks.end()) {
      // Blamed together: each failed by its own fault, none after another's.
      v.role = RankRole::kRootCause;
      v.diagnosis = rankEvidenceText(st) + (rc->blame == Blame::kAllRanks ? " (as every rank did)" : "");
    } else {
      switch (st.cls) {
        case FailureClass::kNone:
          v.role = RankRole::kClean;
          v.diagnosis = ri.exit_known ? exitText(ri) : (ri.started ? "no failure seen" : "never started");
          if (!ri.exit_known && a.in->supervisor && ri.started) {
            v.role = RankRole::kSurvivor;
            v.diagnosis = "still running when the run ended";
          }
          break;
        case FailureClass::kPrimary:
          v.role = RankRole::kCollateral;
          v.diagnosis = rankEvidenceText(st) + " (after the root cause)";
          break;
        case FailureClass::kCollateral:
          v.role = RankRole::kCollateral;
          v.diagnosis = rankEvidenceText(st) + " [collateral: " + st.evidence.collateral_reason + "]";
          break;
        case FailureClass::kTeardown:
        case FailureClass::kSurvivor:
          v.role = RankRole::kKilledByTeardown;
          v.diagnosis = exitText(ri);
          if (v.diagnosis.find("teardown") == std::string::npos) v.diagnosis += " in teardown";
          break;
      }
      if (std::find(waiting_ranks.begin(), waiting_ranks.end(), r) != waiting_ranks.end() &&
          v.role != RankRole::kRootCause) {
        // Read from a stack dump, a wait has no op and seq of the events.
        v.diagnosis += rc->collective ? "; was waiting in " + rc->collective->op + " #" + std::to_string(rc->collective->seq)
                                      : std::string("; was waiting in a collective (stack dump)");
      }
      if (rc && rc->blame == Blame::kAmbiguous &&
          std::find(rc->ranks.begin(), rc->ranks.end(), r) != rc->ranks.end()) {
        v.diagnosis += "; one of the candidates (ambiguous)";
      }
    }
    // Where it was in a hang is not known for a rank the shim could not trace.
    if (rc && (rc->kind == Kind::kHungCollective || rc->kind == Kind::kTimeout) && a.gaps.collectives.count(r)) {
      v.diagnosis += "; collective tracing unavailable (" + a.gaps.collectives.at(r) + ")";
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<TimelineEntry> buildTimeline(const Analysis& a, const std::optional<Candidate>& root) {
  std::vector<TimelineEntry> t;
  auto tms = [&](int64_t ns) { return msSinceStart(a, ns); };
  // When each rank failed.
  for (const auto& [r, st] : a.states) {
    if (st.t_ns && st.cls != FailureClass::kNone && st.t_precise) {
      t.push_back({tms(*st.t_ns), r, "rank " + std::to_string(r) + " " + rankEvidenceText(st), TimelineKind::kFailure});
    }
  }
  // What each rank's own events say, so a timeline shows steps, the injected
  // fault and a collective never left, not only exits.
  for (const auto& [r, ri] : a.in->ranks) {
    const auto& evs = ri.events.events;
    int64_t last_step = -1;
    for (const Event& e : evs) last_step = e.ev == "step_end" ? std::max(last_step, e.step) : last_step;
    const int64_t every = std::max<int64_t>(1, (last_step + 19) / 20);  // about 20 step marks a rank
    std::map<int64_t, const Event*> open;  // collective seq -> its begin
    bool syscall_marked = false;            // a failing call may be retried: mark the first
    for (const Event& e : evs) {
      if (e.t <= 0) continue;
      if (e.ev == "fault" && e.kind == "syscall") {
        if (!syscall_marked) t.push_back({tms(e.t), r, "fault injected: " + injectedSyscall(e), TimelineKind::kFault});
        syscall_marked = true;
      } else if (e.ev == "fault") {
        t.push_back({tms(e.t), r, "fault " + e.kind + " injected at step " + std::to_string(e.step), TimelineKind::kFault});
      } else if (e.ev == "pg_init") {
        t.push_back({tms(e.t), r, "process group up (" + e.backend + ")", TimelineKind::kStart});
      } else if (e.ev == "step_end" && e.step % every == 0) {
        t.push_back({tms(e.t), r, "step " + std::to_string(e.step) + " done", TimelineKind::kStep});
      } else if (e.ev == "collective_begin") {
        open[e.seq] = &e;
      } else if (e.ev == "collective_end") {
        open.erase(e.seq);
      }
    }
    for (const auto& [seq, e] : open) {
      t.push_back({tms(e->t), r, "entered " + e->op + " #" + std::to_string(seq) + ", never left", TimelineKind::kStuck});
    }
  }
  if (root && root->root_rank && a.states.count(*root->root_rank) && a.states.at(*root->root_rank).t_precise) {
    if (const auto& ns = a.states.at(*root->root_rank).t_ns) {
      t.push_back({tms(*ns), root->cause.rank, "root cause: " + root->cause.summary, TimelineKind::kRootCause});
    }
  }
  if (root && root->node_t_ns && *root->node_t_ns > 0) {
    t.push_back({tms(*root->node_t_ns), std::nullopt, "root cause: " + root->cause.summary, TimelineKind::kRootCause});
  }
  std::stable_sort(t.begin(), t.end(), [](const TimelineEntry& x, const TimelineEntry& y) { return x.t_ms < y.t_ms; });
  return t;
}

Diagnosis analyzeRun(const RunInput& in) {
  const Analysis a = analyse(in);
  const std::optional<Candidate> root = chooseRootCause(a);
  Diagnosis d;
  if (root) d.root_cause = root->cause;
  d.ranks = assignRoles(a, root);
  d.nodes = nodeReports(in, root);
  d.timeline = buildTimeline(a, root);
  SpanSet spans = buildSpans(a);
  d.spans = std::move(spans.spans);
  d.spans_dropped = spans.dropped;
  return d;
}

}  // namespace faultline::diagnose
