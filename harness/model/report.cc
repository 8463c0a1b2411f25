// JSON form of the run report (CONTRACT.md section 4) and its atomic writer.
#include "harness/model/report.h"
#include "harness/model/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace faultline {
namespace {

using nlohmann::json;

constexpr std::array<std::pair<Kind, const char*>, 23> kKinds{{
    {Kind::kPythonException, "python_exception"},
    {Kind::kCppException, "cpp_exception"},
    {Kind::kUndefinedSymbol, "undefined_symbol"},
    {Kind::kSignal, "signal"},
    {Kind::kExitCode, "exit_code"},
    {Kind::kHungCollective, "hung_collective"},
    {Kind::kCollectiveMismatch, "collective_mismatch"},
    {Kind::kRendezvousFailure, "rendezvous_failure"},
    {Kind::kShutdownHang, "shutdown_hang"},
    {Kind::kLauncherError, "launcher_error"},
    {Kind::kOom, "oom"},
    {Kind::kTimeout, "timeout"},
    {Kind::kSeedMismatch, "seed_mismatch"},
    {Kind::kUnshardedData, "unsharded_data"},
    {Kind::kUnsyncedMetrics, "unsynced_metrics"},
    {Kind::kConcurrentWrites, "concurrent_writes"},
    {Kind::kStraggler, "straggler"},
    {Kind::kNoPgDestroy, "no_pg_destroy"},
    {Kind::kDivergedParams, "diverged_params"},
    {Kind::kNodeLost, "node_lost"},
    {Kind::kNetworkPartition, "network_partition"},
    {Kind::kStoreWait, "store_wait"},
    {Kind::kUnknown, "unknown"},
}};

constexpr std::array<std::pair<Blame, const char*>, 6> kBlames{{
    {Blame::kRank, "rank"},
    {Blame::kRanks, "ranks"},
    {Blame::kAllRanks, "all_ranks"},
    {Blame::kAmbiguous, "ambiguous"},
    {Blame::kNone, "none"},
    {Blame::kNode, "node"},
}};

constexpr std::array<std::pair<RankRole, const char*>, 6> kRoles{{
    {RankRole::kRootCause, "root_cause"},
    {RankRole::kCollateral, "collateral"},
    {RankRole::kClean, "clean"},
    {RankRole::kKilledByTeardown, "killed_by_teardown"},
    {RankRole::kSurvivor, "survivor"},
    {RankRole::kLost, "lost"},
}};

constexpr std::array<std::pair<Escalation, const char*>, 3> kEscalations{{
    {Escalation::kNone, "none"},
    {Escalation::kSigterm, "sigterm"},
    {Escalation::kSigkill, "sigkill"},
}};

constexpr std::array<std::pair<TeardownBy, const char*>, 3> kTeardownBys{{
    {TeardownBy::kNone, "none"},
    {TeardownBy::kFaultline, "faultline"},
    {TeardownBy::kLauncher, "launcher"},
}};

constexpr std::array<std::pair<TimelineKind, const char*>, 12> kTimelineKinds{{
    {TimelineKind::kNote, "note"},
    {TimelineKind::kStart, "start"},
    {TimelineKind::kFault, "fault"},
    {TimelineKind::kStep, "step"},
    {TimelineKind::kStuck, "stuck"},
    {TimelineKind::kFailure, "failure"},
    {TimelineKind::kTrigger, "trigger"},
    {TimelineKind::kExit, "exit"},
    {TimelineKind::kSignal, "signal"},
    {TimelineKind::kDump, "dump"},
    {TimelineKind::kTeardown, "teardown"},
    {TimelineKind::kRootCause, "root_cause"},
}};

template <class E, size_t N>
std::string nameOf(const std::array<std::pair<E, const char*>, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <class E, size_t N>
std::optional<E> valueOf(const std::array<std::pair<E, const char*>, N>& table, const std::string& name) {
  for (const auto& [v, n] : table) {
    if (name == n) return v;
  }
  return std::nullopt;
}

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

json toJson(const CollectiveSide& s) {
  return {
      {"ranks", s.ranks},
      {"op", s.op.empty() ? json(nullptr) : json(s.op)},
      {"numel", opt(s.numel)},
      {"site", s.site.empty() ? json(nullptr) : json(s.site)},
      {"callers", s.callers},
      {"rank_condition", s.rank_condition.empty() ? json(nullptr) : json(s.rank_condition)},
  };
}

json toJson(const LoggedMetric& m) {
  json values = json::array();
  for (const auto& v : m.values) values.push_back({{"rank", v.rank}, {"value", v.value}});
  return {{"name", m.name},
          {"sink", m.sink},
          {"n", m.n},
          {"step", opt(m.step)},
          {"values", values},
          {"logged_by", m.logged_by},
          {"why", m.why},
          {"sync", opt(m.sync)},
          {"site", m.site.empty() ? json(nullptr) : json(m.site)}};
}

json toJson(const RootCause& rc) {
  json layers = json::array();
  for (const auto& l : rc.layers) layers.push_back({{"layer", l.layer}, {"text", l.text}});
  json sides = json::array();
  for (const auto& s : rc.sides) sides.push_back(toJson(s));
  json j = {
      {"kind", kindName(rc.kind)},
      {"rank", opt(rc.rank)},
      {"blame", blameName(rc.blame)},
      {"ranks", rc.ranks},
      {"sides", sides},
      {"summary", rc.summary},
      {"exception_type", opt(rc.exception_type)},
      {"message", opt(rc.message)},
      {"location", rc.location ? json{{"file", rc.location->file}, {"line", rc.location->line}} : json(nullptr)},
      {"native_location", rc.native_location ? json{{"file", rc.native_location->file},
                                                    {"line", rc.native_location->line},
                                                    {"function", opt(rc.native_function)}}
                                             : json(nullptr)},
      {"symbol", opt(rc.symbol)},
      {"signal", opt(rc.signal)},
      {"exit_code", opt(rc.exit_code)},
      {"collective", rc.collective ? json{{"op", rc.collective->op}, {"seq", rc.collective->seq}} : json(nullptr)},
      {"waiting_ranks", rc.waiting_ranks},
      {"missing_ranks", rc.missing_ranks},
      {"layers", layers},
  };
  if (rc.node) j["node"] = *rc.node;  // multi-node only
  return j;
}

// The problems' keys in report.json, each beside its field.
template <class P>
auto problemFields(P& p) {
  return std::array<std::pair<const char*, decltype(&p.harness_error)>, 5>{
      {{"harness_error", &p.harness_error},
       {"unsupported_reason", &p.unsupported_reason},
       {"bad_input", &p.bad_input},
       {"diagnose_error", &p.diagnose_error},
       {"fault_not_struck", &p.fault_not_struck}}};
}

// Reading: a small cursor that remembers the path, so an error names the field.
class Reader {
 public:
  Reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  const json* field(const char* key, bool required = true) {
    if (!j_.is_object()) return bad("an object");
    auto it = j_.find(key);
    if (it == j_.end()) {
      if (required && !error_) error_ = Error{ErrorCode::kBadInput, "missing field", path_ + "." + key};
      return nullptr;
    }
    return &*it;
  }

  template <class T>
  void get(const char* key, T& out, bool required = true) {
    const json* v = field(key, required);
    if (!v) return;
    try {
      out = v->get<T>();
    } catch (const json::exception& e) {
      if (!error_) error_ = Error{ErrorCode::kBadInput, std::string("wrong type: ") + e.what(), path_ + "." + key};
    }
  }

  template <class T>
  void getOpt(const char* key, std::optional<T>& out) {
    const json* v = field(key, false);
    if (!v || v->is_null()) return;
    T value{};
    get(key, value);
    out = value;
  }

  template <class E, size_t N>
  void getEnum(const char* key, const std::array<std::pair<E, const char*>, N>& table, E& out) {
    std::string name;
    get(key, name);
    if (error_ || !field(key, false)) return;
    auto v = valueOf(table, name);
    if (!v) {
      error_ = Error{ErrorCode::kBadInput, "unknown value '" + name + "'", path_ + "." + key};
      return;
    }
    out = *v;
  }

  const std::optional<Error>& error() const { return error_; }
  void adopt(const std::optional<Error>& e) {
    if (e && !error_) error_ = e;
  }

 private:
  const json* bad(const char* what) {
    if (!error_) error_ = Error{ErrorCode::kBadInput, std::string("expected ") + what, path_};
    return nullptr;
  }
  const json& j_;
  std::string path_;
  std::optional<Error> error_;
};

LoggedMetric loggedMetricFrom(Reader& r) {
  LoggedMetric m;
  r.get("name", m.name);
  r.get("sink", m.sink);
  r.get("n", m.n, false);
  r.getOpt("step", m.step);
  if (const json* vs = r.field("values", false); vs && vs->is_array()) {
    for (const auto& v : *vs) {
      Reader vr(v, "report.findings[].metric.values[]");
      LoggedMetric::RankValue rv;
      vr.get("rank", rv.rank);
      vr.get("value", rv.value);
      r.adopt(vr.error());
      m.values.push_back(rv);
    }
  }
  r.get("logged_by", m.logged_by, false);
  r.get("why", m.why, false);
  r.getOpt("sync", m.sync);
  std::optional<std::string> site;
  r.getOpt("site", site);
  m.site = site.value_or("");
  return m;
}

std::optional<RootCause> readRootCause(const json& j, Reader& parent) {
  if (j.is_null()) return std::nullopt;
  RootCause rc;
  Reader r(j, "root_cause");
  r.getEnum("kind", kKinds, rc.kind);
  r.getOpt("rank", rc.rank);
  r.getOpt("node", rc.node);
  r.get("summary", rc.summary);
  r.getOpt("exception_type", rc.exception_type);
  r.getOpt("message", rc.message);
  r.getOpt("symbol", rc.symbol);
  r.getOpt("signal", rc.signal);
  r.getOpt("exit_code", rc.exit_code);
  if (const json* loc = r.field("location", false); loc && !loc->is_null()) {
    Reader lr(*loc, "root_cause.location");
    Location l;
    lr.get("file", l.file);
    lr.get("line", l.line);
    r.adopt(lr.error());
    rc.location = l;
  }
  if (const json* loc = r.field("native_location", false); loc && !loc->is_null()) {
    Reader lr(*loc, "root_cause.native_location");
    Location l;
    lr.get("file", l.file);
    lr.get("line", l.line);
    lr.getOpt("function", rc.native_function);
    r.adopt(lr.error());
    rc.native_location = l;
  }
  if (const json* c = r.field("collective", false); c && !c->is_null()) {
    Reader cr(*c, "root_cause.collective");
    CollectiveRef ref;
    cr.get("op", ref.op);
    cr.get("seq", ref.seq);
    r.adopt(cr.error());
    rc.collective = ref;
  }
  r.get("waiting_ranks", rc.waiting_ranks, false);
  r.get("missing_ranks", rc.missing_ranks, false);
  r.get("ranks", rc.ranks, false);
  if (r.field("blame", false)) {
    r.getEnum("blame", kBlames, rc.blame);
  } else {
    // Reports written before `blame` read as their rank says.
    rc.blame = rc.rank ? Blame::kRank : Blame::kNone;
    if (rc.ranks.empty() && rc.rank) rc.ranks = {*rc.rank};
  }
  if (const json* ss = r.field("sides", false); ss && ss->is_array()) {
    for (const auto& sj : *ss) {
      Reader sr(sj, "root_cause.sides[]");
      CollectiveSide side;
      sr.get("ranks", side.ranks);
      if (sj.is_object() && sj.contains("op") && !sj["op"].is_null()) sr.get("op", side.op);
      sr.getOpt("numel", side.numel);
      if (sj.is_object() && sj.contains("site") && !sj["site"].is_null()) sr.get("site", side.site);
      sr.get("callers", side.callers, false);
      if (sj.is_object() && sj.contains("rank_condition") && !sj["rank_condition"].is_null()) {
        sr.get("rank_condition", side.rank_condition);
      }
      r.adopt(sr.error());
      rc.sides.push_back(side);
    }
  }
  if (const json* ls = r.field("layers", false); ls && ls->is_array()) {
    for (const auto& l : *ls) {
      Reader lr(l, "root_cause.layers[]");
      Layer layer;
      lr.get("layer", layer.layer);
      lr.get("text", layer.text);
      r.adopt(lr.error());
      rc.layers.push_back(layer);
    }
  }
  parent.adopt(r.error());
  return rc;
}

}  // namespace

std::string kindName(Kind k) { return nameOf(kKinds, k); }
std::optional<Kind> kindFromName(const std::string& name) { return valueOf(kKinds, name); }
std::string blameName(Blame b) { return nameOf(kBlames, b); }
std::optional<Blame> blameFromName(const std::string& name) { return valueOf(kBlames, name); }
std::string roleName(RankRole r) { return nameOf(kRoles, r); }
std::optional<RankRole> roleFromName(const std::string& name) { return valueOf(kRoles, name); }
std::string escalationName(Escalation e) { return nameOf(kEscalations, e); }
std::optional<Escalation> escalationFromName(const std::string& name) { return valueOf(kEscalations, name); }
std::string teardownByName(TeardownBy b) { return nameOf(kTeardownBys, b); }
std::optional<TeardownBy> teardownByFromName(const std::string& name) { return valueOf(kTeardownBys, name); }
std::string timelineKindName(TimelineKind k) { return nameOf(kTimelineKinds, k); }
std::optional<TimelineKind> timelineKindFromName(const std::string& name) { return valueOf(kTimelineKinds, name); }

json toJson(const Report& r) {
  json ranks = json::array();
  for (const auto& rk : r.ranks) {
    json item = {{"rank", rk.rank},
                 {"pid", opt(rk.pid)},
                 {"exit_code", opt(rk.exit_code)},
                 {"signal", opt(rk.signal)},
                 {"role", roleName(rk.role)},
                 {"diagnosis", rk.diagnosis},
                 {"stderr_tail", rk.stderr_tail}};
    // Multi-node only: a single-node report stays as it was.
    if (rk.node) item["node"] = *rk.node;
    if (rk.host) item["host"] = *rk.host;
    ranks.push_back(std::move(item));
  }
  json nodes = json::array();
  for (const auto& n : r.nodes) {
    json sv = json::array();
    for (const auto& s : n.survivors) sv.push_back({{"pid", s.pid}, {"cmdline", s.cmdline}});
    nodes.push_back({{"name", n.name},
                     {"host", n.host.empty() ? json(nullptr) : json(n.host)},
                     {"ranks", n.ranks},
                     {"lost", n.lost},
                     {"link_down_ns", opt(n.link_down_ns)},
                     {"survivors", sv},
                     {"agent_exit_code", opt(n.agent_exit_code)}});
  }
  json findings = json::array();
  for (const auto& f : r.findings) {
    json fj = {{"kind", kindName(f.kind)},
               {"ranks", f.ranks},
               {"severity", f.severity},
               {"summary", f.summary},
               {"evidence", f.evidence}};
    if (!f.fix.empty()) fj["fix"] = f.fix;
    if (f.metric) fj["metric"] = toJson(*f.metric);
    findings.push_back(std::move(fj));
  }
  json faults = json::array();
  for (const auto& f : r.faults) faults.push_back(toJson(f));
  json survivors = json::array();
  for (const auto& s : r.teardown.survivors) survivors.push_back({{"pid", s.pid}, {"cmdline", s.cmdline}});
  json expectations = json::array();
  for (const auto& e : r.expectations) {
    json item = {{"what", e.what},
                 {"expected", e.expected},
                 {"actual", e.actual},
                 {"ok", e.ok},
                 {"status", expectationStatusName(e.status)}};
    if (!e.reason.empty()) item["reason"] = e.reason;
    expectations.push_back(std::move(item));
  }
  json timeline = json::array();
  for (const auto& t : r.timeline) {
    timeline.push_back({{"t_ms", t.t_ms}, {"rank", opt(t.rank)}, {"what", t.what}, {"kind", timelineKindName(t.kind)}});
  }
  json spans = json::array();
  for (const auto& sp : r.spans) {
    json item = {{"rank", sp.rank}, {"kind", sp.kind},     {"name", sp.name},
                 {"index", sp.index}, {"t_ms", sp.t_ms}, {"dur_ms", opt(sp.dur_ms)}};
    if (sp.numel >= 0) item["numel"] = sp.numel;
    if (!sp.dtype.empty()) item["dtype"] = sp.dtype;
    spans.push_back(std::move(item));
  }

  json out = json::object();
  // Extra fields first, so the contract's fields always win a name clash.
  for (auto it = r.extra.begin(); it != r.extra.end(); ++it) out[it.key()] = it.value();
  out["schema"] = kReportSchema;
  out["scenario"] = r.scenario ? json{{"name", r.scenario->name}, {"file", r.scenario->file}} : json(nullptr);
  out["stack"] = {{"launcher", r.stack.launcher}, {"command", r.stack.command}, {"world_size", r.stack.world_size},
                  {"torch", r.stack.torch.empty() ? json(nullptr) : json(r.stack.torch)}};
  out["launcher"] = {{"exit_code", opt(r.launcher.exit_code)},
                     {"signal", opt(r.launcher.signal)},
                     {"blamed_rank", opt(r.launcher.blamed_rank)},
                     {"blamed_correctly", opt(r.launcher.blamed_correctly)},
                     {"blamed_ranks", r.launcher.blamed_ranks.empty() ? json(nullptr) : json(r.launcher.blamed_ranks)}};
  out["root_cause"] = r.root_cause ? toJson(*r.root_cause) : json(nullptr);
  out["ranks"] = ranks;
  if (!nodes.empty()) out["nodes"] = nodes;
  if (!r.attempts.empty()) {
    json attempts = json::array();
    for (const auto& a : r.attempts) {
      json ranks = json::array();
      for (const auto& k : a.ranks) {
        ranks.push_back({{"rank", k.rank}, {"pid", k.pid}, {"exit_code", opt(k.exit_code)}, {"signal", opt(k.signal)}});
      }
      attempts.push_back({{"attempt", a.attempt},
                          {"start_ms", a.start_ms},
                          {"end_ms", opt(a.end_ms)},
                          {"ranks", ranks},
                          {"last_step", a.last_step},
                          {"failed_rank", opt(a.failed_rank)},
                          {"ended", a.ended}});
    }
    out["attempts"] = attempts;
  }
  if (r.recovery) {
    const Recovery& v = *r.recovery;
    out["recovery"] = {{"restarts", v.restarts},
                       {"recovered", v.recovered},
                       {"time_to_recover_ms", opt(v.time_to_recover_ms)},
                       {"resumed_from_step", opt(v.resumed_from_step)},
                       {"steps_lost", opt(v.steps_lost)},
                       {"crash_loop_rank", opt(v.crash_loop_rank)},
                       {"same_result", opt(v.same_result)},
                       {"summary", v.summary}};
  }
  out["findings"] = findings;
  if (!faults.empty()) out["faults"] = faults;
  out["teardown"] = {{"clean", r.teardown.clean},
                     {"duration_ms", r.teardown.duration_ms},
                     {"escalation", escalationName(r.teardown.escalation)},
                     {"by", teardownByName(r.teardown.by)},
                     {"survivors", survivors},
                     {"leaks", r.teardown.leaks}};
  out["expectations"] = expectations;
  out["verdict"] = verdictName(r.verdict);
  out["timeline"] = timeline;
  out["spans"] = spans;
  if (r.spans_dropped > 0) out["spans_dropped"] = r.spans_dropped;
  out["harness"] = {{"version", r.harness.version}, {"wall_ms", r.harness.wall_ms}};
  for (const auto& [key, value] : problemFields(r.problems)) {
    if (*value) out[key] = **value;
  }
  return out;
}

json toJson(const RequestedFault& f) {
  json j = {{"rule", f.rule}, {"kind", f.kind}, {"point", f.point}, {"by", f.by}};
  j["ranks"] = f.ranks.empty() ? json("all") : json(f.ranks);
  if (!f.node.empty()) j["node"] = f.node;
  return j;
}

Result<RequestedFault> requestedFaultFromJson(const json& j, const std::string& path) {
  Reader r(j, path);
  RequestedFault f;
  r.get("rule", f.rule);
  r.get("kind", f.kind);
  r.get("point", f.point, false);
  r.get("by", f.by, false);
  r.get("node", f.node, false);
  if (const json* ranks = r.field("ranks", false); ranks && ranks->is_array()) r.get("ranks", f.ranks);
  if (r.error()) return tl::unexpected(*r.error());
  return f;
}

json toJson(const FaultOutcome& o) {
  json j = toJson(o.fault);
  j["struck"] = o.struck;
  j["struck_ranks"] = o.struck_ranks;
  if (!o.reason.empty()) j["reason"] = o.reason;
  return j;
}

Result<FaultOutcome> faultOutcomeFromJson(const json& j, const std::string& path) {
  FaultOutcome o;
  auto f = requestedFaultFromJson(j, path);
  if (!f) return tl::unexpected(f.error());
  o.fault = std::move(*f);
  Reader r(j, path);
  r.get("struck", o.struck);
  r.get("struck_ranks", o.struck_ranks, false);
  r.get("reason", o.reason, false);
  if (r.error()) return tl::unexpected(*r.error());
  return o;
}

const std::vector<std::string>& reportKeys() {
  static const std::vector<std::string> kKeys = [] {
    std::vector<std::string> keys = {"schema",   "scenario",     "stack",   "launcher", "root_cause", "ranks",
                                     "nodes",    "findings",     "faults",   "attempts", "recovery", "teardown", "expectations",
                                     "verdict",  "timeline",
                                     "spans",    "spans_dropped", "harness"};
    RunProblems p;
    for (const auto& [key, value] : problemFields(p)) keys.push_back(key);
    return keys;
  }();
  return kKeys;
}

Result<Report> reportFromJson(const json& j) {
  Report r;
  Reader top(j, "report");
  std::string schema;
  top.get("schema", schema);
  if (!top.error() && schema != kReportSchema) {
    return fail(ErrorCode::kBadInput, "unsupported schema '" + schema + "', expected " + kReportSchema, "report.schema");
  }
  if (const json* s = top.field("scenario", false); s && !s->is_null()) {
    Reader sr(*s, "report.scenario");
    ScenarioRef ref;
    sr.get("name", ref.name);
    sr.get("file", ref.file);
    top.adopt(sr.error());
    r.scenario = ref;
  }
  if (const json* s = top.field("stack")) {
    Reader sr(*s, "report.stack");
    sr.get("launcher", r.stack.launcher);
    sr.get("command", r.stack.command);
    sr.get("world_size", r.stack.world_size);
    if (const json* t = sr.field("torch", false); t && t->is_string()) r.stack.torch = t->get<std::string>();
    top.adopt(sr.error());
  }
  if (const json* l = top.field("launcher", false); l && !l->is_null()) {
    Reader lr(*l, "report.launcher");
    lr.getOpt("exit_code", r.launcher.exit_code);
    lr.getOpt("signal", r.launcher.signal);
    lr.getOpt("blamed_rank", r.launcher.blamed_rank);
    lr.getOpt("blamed_correctly", r.launcher.blamed_correctly);
    if (const json* b = lr.field("blamed_ranks", false); b && !b->is_null()) lr.get("blamed_ranks", r.launcher.blamed_ranks);
    top.adopt(lr.error());
  }
  if (const json* rc = top.field("root_cause", false)) r.root_cause = readRootCause(*rc, top);
  if (const json* ranks = top.field("ranks"); ranks && ranks->is_array()) {
    for (const auto& rk : *ranks) {
      Reader rr(rk, "report.ranks[]");
      RankReport out;
      rr.get("rank", out.rank);
      rr.getOpt("pid", out.pid);
      rr.getOpt("exit_code", out.exit_code);
      rr.getOpt("signal", out.signal);
      rr.getEnum("role", kRoles, out.role);
      rr.get("diagnosis", out.diagnosis, false);
      rr.get("stderr_tail", out.stderr_tail, false);
      rr.getOpt("node", out.node);
      rr.getOpt("host", out.host);
      top.adopt(rr.error());
      r.ranks.push_back(std::move(out));
    }
  }
  if (const json* ns = top.field("nodes", false); ns && ns->is_array()) {
    for (const auto& nj : *ns) {
      Reader nr(nj, "report.nodes[]");
      NodeReport n;
      nr.get("name", n.name);
      std::optional<std::string> host;
      nr.getOpt("host", host);
      n.host = host.value_or("");
      nr.get("ranks", n.ranks, false);
      nr.get("lost", n.lost, false);
      nr.getOpt("link_down_ns", n.link_down_ns);
      nr.getOpt("agent_exit_code", n.agent_exit_code);
      if (const json* ss = nr.field("survivors", false); ss && ss->is_array()) {
        for (const auto& sj : *ss) {
          Reader sr(sj, "report.nodes[].survivors[]");
          Survivor sv;
          sr.get("pid", sv.pid);
          sr.get("cmdline", sv.cmdline);
          nr.adopt(sr.error());
          n.survivors.push_back(sv);
        }
      }
      top.adopt(nr.error());
      r.nodes.push_back(std::move(n));
    }
  }
  if (const json* as = top.field("attempts", false); as && as->is_array()) {
    for (const auto& aj : *as) {
      Reader ar(aj, "report.attempts[]");
      AttemptReport a;
      ar.get("attempt", a.attempt);
      ar.get("start_ms", a.start_ms);
      ar.getOpt("end_ms", a.end_ms);
      ar.get("last_step", a.last_step, false);
      ar.getOpt("failed_rank", a.failed_rank);
      ar.get("ended", a.ended, false);
      if (const json* ks = ar.field("ranks", false); ks && ks->is_array()) {
        for (const auto& kj : *ks) {
          Reader kr(kj, "report.attempts[].ranks[]");
          AttemptRank k;
          kr.get("rank", k.rank);
          kr.get("pid", k.pid);
          kr.getOpt("exit_code", k.exit_code);
          kr.getOpt("signal", k.signal);
          ar.adopt(kr.error());
          a.ranks.push_back(std::move(k));
        }
      }
      top.adopt(ar.error());
      r.attempts.push_back(std::move(a));
    }
  }
  if (const json* vj = top.field("recovery", false); vj && !vj->is_null()) {
    Reader vr(*vj, "report.recovery");
    Recovery v;
    vr.get("restarts", v.restarts);
    vr.get("recovered", v.recovered);
    vr.getOpt("time_to_recover_ms", v.time_to_recover_ms);
    vr.getOpt("resumed_from_step", v.resumed_from_step);
    vr.getOpt("steps_lost", v.steps_lost);
    vr.getOpt("crash_loop_rank", v.crash_loop_rank);
    vr.getOpt("same_result", v.same_result);
    vr.get("summary", v.summary, false);
    top.adopt(vr.error());
    r.recovery = std::move(v);
  }
  if (const json* fs = top.field("findings", false); fs && fs->is_array()) {
    for (const auto& f : *fs) {
      Reader fr(f, "report.findings[]");
      Finding out;
      fr.getEnum("kind", kKinds, out.kind);
      fr.get("ranks", out.ranks);
      fr.get("severity", out.severity);
      fr.get("summary", out.summary);
      fr.get("evidence", out.evidence, false);
      fr.get("fix", out.fix, false);
      if (const json* m = fr.field("metric", false); m && !m->is_null()) {
        Reader mr(*m, "report.findings[].metric");
        out.metric = loggedMetricFrom(mr);
        fr.adopt(mr.error());
      }
      top.adopt(fr.error());
      r.findings.push_back(std::move(out));
    }
  }
  if (const json* t = top.field("teardown", false); t && !t->is_null()) {
    Reader tr(*t, "report.teardown");
    tr.get("clean", r.teardown.clean);
    tr.get("duration_ms", r.teardown.duration_ms);
    tr.getEnum("escalation", kEscalations, r.teardown.escalation);
    // Added: reports written before it have no "by".
    if (tr.field("by", false)) tr.getEnum("by", kTeardownBys, r.teardown.by);
    if (const json* ss = tr.field("survivors", false); ss && ss->is_array()) {
      for (const auto& s : *ss) {
        Reader sr(s, "report.teardown.survivors[]");
        Survivor sv;
        sr.get("pid", sv.pid);
        sr.get("cmdline", sv.cmdline);
        tr.adopt(sr.error());
        r.teardown.survivors.push_back(sv);
      }
    }
    tr.get("leaks", r.teardown.leaks, false);
    top.adopt(tr.error());
  }
  if (const json* es = top.field("expectations", false); es && es->is_array()) {
    for (const auto& e : *es) {
      Reader er(e, "report.expectations[]");
      Expectation out;
      er.get("what", out.what);
      if (const json* v = er.field("expected", false)) out.expected = *v;
      if (const json* v = er.field("actual", false)) out.actual = *v;
      er.get("ok", out.ok);
      out.status = out.ok ? ExpectationStatus::kPass : ExpectationStatus::kFail;
      std::string status;
      er.get("status", status, false);
      if (!status.empty()) {
        if (auto st = expectationStatusFromName(status)) {
          out.status = *st;
        } else {
          er.adopt(Error{ErrorCode::kBadInput, "unknown value '" + status + "', expected pass, fail or unresolved",
                         "report.expectations[].status"});
        }
      }
      er.get("reason", out.reason, false);
      top.adopt(er.error());
      r.expectations.push_back(std::move(out));
    }
  }
  {
    std::string name;
    top.get("verdict", name);
    if (!top.error()) {
      if (auto v = verdictFromName(name)) {
        r.verdict = *v;
      } else {
        return fail(ErrorCode::kBadInput, "unknown value '" + name + "'", "report.verdict");
      }
    }
  }
  if (const json* ts = top.field("timeline", false); ts && ts->is_array()) {
    for (const auto& t : *ts) {
      Reader tr(t, "report.timeline[]");
      TimelineEntry out;
      tr.get("t_ms", out.t_ms);
      tr.getOpt("rank", out.rank);
      tr.get("what", out.what);
      std::string kind = "note";  // reports written before timeline kinds
      tr.get("kind", kind, false);
      if (auto k = timelineKindFromName(kind)) out.kind = *k;  // a later kind reads as a note
      top.adopt(tr.error());
      r.timeline.push_back(std::move(out));
    }
  }
  if (const json* ss = top.field("spans", false); ss && ss->is_array()) {
    for (const auto& j : *ss) {
      Reader sr(j, "report.spans[]");
      Span sp;
      sr.get("rank", sp.rank);
      sr.get("kind", sp.kind);
      sr.get("name", sp.name);
      sr.get("index", sp.index, false);
      sr.get("t_ms", sp.t_ms);
      sr.getOpt("dur_ms", sp.dur_ms);
      sr.get("numel", sp.numel, false);
      sr.get("dtype", sp.dtype, false);
      top.adopt(sr.error());
      r.spans.push_back(std::move(sp));
    }
  }
  top.get("spans_dropped", r.spans_dropped, false);
  if (const json* fs = top.field("faults", false); fs && fs->is_array()) {
    for (const auto& f : *fs) {
      auto o = faultOutcomeFromJson(f, "report.faults[]");
      if (!o) return tl::unexpected(o.error());
      r.faults.push_back(std::move(*o));
    }
  }
  if (const json* h = top.field("harness", false); h && !h->is_null()) {
    Reader hr(*h, "report.harness");
    hr.get("version", r.harness.version);
    hr.get("wall_ms", r.harness.wall_ms);
    top.adopt(hr.error());
  }
  for (const auto& [key, value] : problemFields(r.problems)) top.getOpt(key, *value);
  if (top.error()) return tl::unexpected(*top.error());
  const auto& known = reportKeys();
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) r.extra[it.key()] = it.value();
  }
  return r;
}

Result<Report> readReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), path);
  try {
    return reportFromJson(json::parse(in));
  } catch (const json::exception& e) {
    return fail(ErrorCode::kBadInput, std::string("not valid JSON: ") + e.what(), path);
  }
}

Result<void> writeReport(const Report& r, const std::string& path) {
  // Non-UTF-8 bytes from rank output are replaced, never a reason to lose the report.
  return writeFileAtomically(path, toJson(r).dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace faultline
