#include "harness/diagnose/logged_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>


namespace faultline::diagnose {
namespace {

struct Value {
  int rank;
  const Event* e;
};

using NameKey = std::pair<std::string, std::string>;  // sink, name

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

bool agree(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::max({1.0, std::fabs(a), std::fabs(b)}); }

// How each metric sink (the shim's metric_log `sink`) is named to a reader,
// whose value it writes, and the fix in its own words.
enum class Fix { kSyncDist, kSyncOnCompute, kGatherForMetrics, kAllReduce };
struct Sink {
  std::string_view name;
  std::string_view call;  // what the user called
  bool framework;         // a framework's own logging: a TensorBoard or wandb write of its names is its
  bool main_writes;       // the main process (rank 0) writes every rank's call
  Fix fix;
};
constexpr Sink kSinks[] = {
    {"lightning", "Lightning's self.log", true, true, Fix::kSyncDist},
    {"torchmetrics", "torchmetrics' compute()", false, false, Fix::kSyncOnCompute},
    {"accelerate", "Accelerator.log", true, true, Fix::kGatherForMetrics},
    {"accelerate.print", "Accelerator.print", false, true, Fix::kGatherForMetrics},
    {"tensorboard", "SummaryWriter.add_scalar", false, false, Fix::kAllReduce},
    {"wandb", "wandb.log", false, false, Fix::kAllReduce},
};
// A sink this reader does not know: named as written, each caller its own writer.
constexpr Sink kOtherSink = {"", "", false, false, Fix::kAllReduce};

const Sink& sinkOf(const std::string& name) {
  for (const Sink& s : kSinks) {
    if (s.name == name) return s;
  }
  return kOtherSink;
}

bool isFramework(const std::string& sink) { return sinkOf(sink).framework; }

// A name that says it is one rank's: rank3/loss, loss_rank_1, local_acc, gpu0_util.
bool namesOneRank(const std::string& name) {
  static const std::regex re(R"((rank|local|worker|device|gpu|proc)([_\-/ .]?[0-9]+|\b|_))", std::regex::icase);
  return std::regex_search(name, re);
}

// A measure of the machine, not of the model (a step's time, throughput,
// memory): each rank's own by nature, and not what syncing is for.
bool measuresTheMachine(const std::string& name) {
  static const std::regex re(
      R"((^|[^a-z])(time|times|duration|elapsed|latency|throughput|speed|sec|secs|seconds|ms|fps|mem|memory|rss)([^a-z]|$))",
      std::regex::icase);
  return std::regex_search(name, re);
}

bool looksLikeEvaluation(const std::string& name) {
  static const std::regex re(R"((^|[^a-z])(val|valid|validation|eval|evaluation|test|dev)([^a-z]|$))",
                             std::regex::icase);
  return std::regex_search(name, re);
}

std::string sinkText(const std::string& sink) {
  const Sink& s = sinkOf(sink);
  return s.call.empty() ? sink : std::string(s.call);
}

std::string fixFor(const std::string& sink, const std::string& name, const Event& e) {
  switch (sinkOf(sink).fix) {
    case Fix::kSyncDist:
      if (!e.type.empty())  // a torchmetrics Metric object, logged with its sync turned off
        return "Leave the torchmetrics Metric's sync_on_compute=True (its default) so compute() gathers every rank's "
               "state, and self.log('" + name + "', metric) the Metric object.";
      return "self.log('" + name + "', ..., sync_dist=True): Lightning all-reduces the value (mean) across ranks "
             "before the loggers and callbacks see it.";
    case Fix::kSyncOnCompute:
      return "Leave sync_on_compute=True (torchmetrics' default) so compute() gathers every rank's state.";
    case Fix::kGatherForMetrics:
      return "accelerator.gather_for_metrics((predictions, references)) before computing '" + name +
             "' (or accelerator.reduce(t, reduction='mean')), then accelerator.log on every rank.";
    case Fix::kAllReduce:
      break;
  }
  return "torch.distributed.all_reduce(t) on every rank (divide by the world size for a mean) before .item(), "
         "then log '" + name + "' from rank 0.";
}

std::string withoutSuffix(const std::string& s, const std::string& suffix) {
  if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
    return s.substr(0, s.size() - suffix.size());
  return s;
}

std::string atText(const Event& e) {
  if (e.step >= 0) return (e.epoch_level == true ? "epoch " : "step ") + std::to_string(e.step);
  return "value " + std::to_string(e.n);
}

std::vector<int> loggedBy(const std::string& sink, const std::vector<Value>& vs) {
  // Lightning's loggers and accelerate's trackers and print write on rank 0 (the main process) alone.
  if (sinkOf(sink).main_writes) return {0};
  std::vector<int> out;
  for (const auto& v : vs) out.push_back(v.rank);
  return out;
}

Finding makeFinding(const NameKey& key, const std::vector<Value>& vs, const std::string& why) {
  const auto& [sink, name] = key;
  const Event& first = *vs.front().e;
  LoggedMetric m;
  m.name = name;
  m.sink = sink;
  m.n = first.n;
  if (first.step >= 0) m.step = first.step;
  for (const auto& v : vs) m.values.push_back({v.rank, *v.e->value});
  m.logged_by = loggedBy(sink, vs);
  m.why = why;
  m.sync = first.sync;
  m.site = first.site;

  bool monitored = false;
  std::string stage;
  for (const auto& v : vs) {
    monitored = monitored || v.e->monitored == true;
    if (stage.empty()) stage = v.e->stage;
  }
  const bool evaluation = stage == "validation" || stage == "test" || (stage.empty() && looksLikeEvaluation(name));

  Finding f;
  f.kind = Kind::kUnsyncedMetrics;
  for (const auto& v : vs) f.ranks.push_back(v.rank);
  f.severity = monitored || evaluation ? "error" : "warning";
  f.fix = fixFor(sink, name, first);

  std::string values;
  for (const auto& v : m.values) values += (values.empty() ? "" : ", ") + ("rank " + std::to_string(v.rank) + " " + num(v.value));
  const std::string logged = m.logged_by.size() == 1 ? "rank " + std::to_string(m.logged_by.front()) + "'s"
                                                      : "each rank's own";
  if (why == "differs_across_ranks") {
    f.summary = "metric '" + name + "' logged through " + sinkText(sink) + " differs across ranks at " + atText(first) +
                ": " + logged + " value was logged, not the job's";
    f.evidence = values + " (differ where a synchronised value agrees)";
  } else {
    f.summary = "metric '" + name + "' logged through " + sinkText(sink) + " by rank " +
                std::to_string(vs.front().rank) + " alone at " + atText(first) +
                " never met a collective: it is that rank's own value";
    f.evidence = values + "; computed after a pass over that rank's share of the data (a DistributedSampler), from a "
                          "tensor no all_reduce, all_gather or reduce wrote, and none ran on that rank since the name's "
                          "previous value";
  }
  const bool sync_dist = sinkOf(sink).fix == Fix::kSyncDist;
  if (first.sync == false && !first.type.empty())
    f.evidence += "; a torchmetrics " + first.type + " with sync_on_compute=False";
  else if (first.sync == false && sync_dist && first.epoch_level == true)
    f.evidence += "; self.log without sync_dist=True (Lightning warns: \"It is recommended to use `self.log('" +
                  withoutSuffix(name, "_epoch") + "', ..., sync_dist=True)` when logging on epoch level\")";
  else if (first.sync == false && sync_dist)
    f.evidence += "; self.log without sync_dist=True";
  else if (first.sync == false && sinkOf(sink).fix == Fix::kSyncOnCompute)
    f.evidence += "; a torchmetrics " + name + " with sync_on_compute=False";
  else if (first.sync == false)
    f.evidence += "; " + sinkText(sink) + " with sync_on_compute=False";
  if (monitored) f.evidence += "; a ModelCheckpoint or EarlyStopping monitors it, so each rank decides on its own value";
  if (!first.site.empty()) f.evidence += "; logged at " + first.site;
  f.metric = std::move(m);
  return f;
}

// The Metric's finding, for a value a TensorBoard or wandb write (or a print)
// took from its compute(): judged by the name it was written as, and said so.
void writtenAs(Finding& f, const Event& write) {
  if (looksLikeEvaluation(write.name)) f.severity = "error";
  f.evidence += "; rank " + std::to_string(write.rank) + " wrote its compute() through " + sinkText(write.sink) +
                " as '" + write.name + "'" + (write.site.empty() ? "" : " at " + write.site);
}

}  // namespace

std::vector<Finding> findUnsyncedLoggedMetrics(const RunInput& in) {
  if (in.world_size == 1) return {};
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<Value>> values;
  std::vector<NameKey> order;  // names in the order first seen
  std::map<NameKey, std::set<int>> ranks_of;
  std::set<std::string> framework_names;
  // A TensorBoard or wandb write (or a print) of the value a torchmetrics
  // Metric's compute() just returned on that rank is the Metric's: its
  // finding, with sync_on_compute as the fix, is the one.
  std::map<NameKey, const Event*> written_as;  // the Metric's name -> the write
  std::set<NameKey> metric_writes;
  for (const auto& [r, ri] : in.ranks) {
    const Event* computed = nullptr;  // this rank's last torchmetrics compute()
    for (const Event& e : ri.events.events) {
      if (e.ev != "metric_log" || !e.value || e.sink.empty() || e.n < 1) continue;
      NameKey key{e.sink, e.name};
      if (!ranks_of.count(key)) order.push_back(key);
      ranks_of[key].insert(r);
      values[{e.sink, e.name, e.n}].push_back({r, &e});
      if (isFramework(e.sink)) framework_names.insert(e.name);
      if (sinkOf(e.sink).fix == Fix::kSyncOnCompute) {
        computed = &e;
      } else if (!isFramework(e.sink) && computed && agree(*e.value, *computed->value)) {
        written_as.emplace(NameKey{computed->sink, computed->name}, &e);
        metric_writes.insert(key);
      }
    }
  }
  std::vector<Finding> out;
  for (const auto& key : order) {
    const auto& [sink, name] = key;
    if (namesOneRank(name) || measuresTheMachine(name)) continue;
    // A TensorBoard or wandb write (or a print) of a name a framework logged is the framework's.
    if (!isFramework(sink) && sinkOf(sink).fix != Fix::kSyncOnCompute && framework_names.count(name)) continue;
    if (metric_writes.count(key)) continue;
    const auto written = written_as.find(key);
    auto judged = [&](Finding f) {
      if (written != written_as.end()) writtenAs(f, *written->second);
      out.push_back(std::move(f));
    };
    const bool alone = ranks_of[key].size() == 1;
    for (auto it = values.lower_bound({sink, name, 1}); it != values.end(); ++it) {
      if (std::get<0>(it->first) != sink || std::get<1>(it->first) != name) break;
      const auto& vs = it->second;
      if (!alone && vs.size() >= 2) {
        const double ref = *vs.front().e->value;
        if (std::all_of(vs.begin(), vs.end(), [&](const Value& v) { return agree(*v.e->value, ref); })) continue;
        judged(makeFinding(key, vs, "differs_across_ranks"));
        break;
      }
      if (alone && vs.front().e->collective == false && vs.front().e->shard == true) {
        judged(makeFinding(key, vs, "no_collective"));
        break;
      }
    }
  }
  // Errors first: the finding a reader should see is the one that decides something.
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.severity == "error" && b.severity != "error"; });
  return out;
}

}  // namespace faultline::diagnose
