// JSON form of OUT/supervisor.json and its atomic writer.
#include "harness/model/supervisor_record.h"
#include "harness/model/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace faultline {
namespace {

using nlohmann::json;

template <class T>
json opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reading throws this with the dotted path of the bad field; the public
// function turns it into an Error.
struct FieldError {
  std::string path;
  std::string what;
};

const json& at(const json& j, const char* key, const std::string& path) {
  if (!j.is_object()) throw FieldError{path, "not an object"};
  auto it = j.find(key);
  if (it == j.end()) throw FieldError{path + "." + key, "missing field"};
  return *it;
}

template <class T>
T get(const json& j, const char* key, const std::string& path) {
  const json& v = at(j, key, path);
  try {
    return v.get<T>();
  } catch (const json::exception& e) {
    throw FieldError{path + "." + key, std::string("wrong type: ") + e.what()};
  }
}

template <class T>
std::optional<T> getOpt(const json& j, const char* key, const std::string& path) {
  if (!j.is_object()) throw FieldError{path, "not an object"};
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return get<T>(j, key, path);
}

const json& array(const json& j, const char* key, const std::string& path) {
  const json& v = at(j, key, path);
  if (!v.is_array()) throw FieldError{path + "." + key, "not an array"};
  return v;
}

}  // namespace

std::string triggerKindName(TriggerKind k) {
  switch (k) {
    case TriggerKind::kRankFailure: return "rank_failure";
    case TriggerKind::kHang: return "hang";
    case TriggerKind::kDeadline: return "deadline";
    case TriggerKind::kInterrupt: return "interrupt";
    case TriggerKind::kNone: return "none";
  }
  return "none";
}

std::optional<TriggerKind> triggerKindFromName(const std::string& name) {
  for (auto k : {TriggerKind::kRankFailure, TriggerKind::kHang, TriggerKind::kDeadline,
                 TriggerKind::kInterrupt, TriggerKind::kNone}) {
    if (triggerKindName(k) == name) return k;
  }
  return std::nullopt;
}

json toJson(const SupervisorRecord& r) {
  json ranks = json::array();
  for (const auto& k : r.ranks) {
    ranks.push_back({{"rank", k.rank},
                     {"pid", k.pid},
                     {"start_ns", k.start_ns},
                     {"exit_ns", opt(k.exit_ns)},
                     {"exit_code", opt(k.exit_code)},
                     {"signal", opt(k.signal)},
                     {"killed_by_teardown", k.killed_by_teardown}});
    if (k.node) ranks.back()["node"] = *k.node;
    if (k.attempt > 0) ranks.back()["attempt"] = k.attempt;
  }
  json launcher = nullptr;
  if (r.launcher_process) {
    const auto& l = *r.launcher_process;
    launcher = {{"pid", l.pid}, {"exit_code", opt(l.exit_code)}, {"signal", opt(l.signal)}, {"exit_ns", opt(l.exit_ns)}};
  }
  json survivors = json::array();
  for (const auto& s : r.teardown.report.survivors) survivors.push_back({{"pid", s.pid}, {"cmdline", s.cmdline}});
  json signals = json::array();
  for (const auto& s : r.teardown.signals) {
    signals.push_back({{"pid", s.pid}, {"rank", opt(s.rank)}, {"signal", s.signal}, {"t_ns", s.t_ns}});
  }
  json dumps = json::array();
  for (const auto& d : r.teardown.stack_dumps) {
    dumps.push_back({{"rank", d.rank}, {"pid", d.pid}, {"method", d.method}, {"path", d.path}, {"ok", d.ok}});
  }
  json exits = json::array();
  for (const auto& e : r.process_exits) {
    exits.push_back({{"pid", e.pid}, {"rank", opt(e.rank)}, {"t_ns", e.t_ns}, {"exit_code", opt(e.exit_code)},
                     {"signal", opt(e.signal)}, {"cmdline", e.cmdline}, {"ppid", opt(e.ppid)}});
  }
  json out = {
      {"schema", kSupervisorSchema},
      {"process_exits", exits},
      {"start_ns", r.start_ns},
      {"end_ns", r.end_ns},
      {"launcher", r.launcher},
      {"command", r.command},
      {"world_size", r.world_size},
      {"containment", r.containment},
      {"ranks", ranks},
      {"launcher_process", launcher},
      {"trigger",
       {{"kind", triggerKindName(r.trigger.kind)},
        {"t_ns", r.trigger.t_ns},
        {"rank", opt(r.trigger.rank)},
        {"detail", r.trigger.detail}}},
      {"teardown",
       {{"clean", r.teardown.report.clean},
        {"duration_ms", r.teardown.report.duration_ms},
        {"escalation", escalationName(r.teardown.report.escalation)},
        {"by", teardownByName(r.teardown.report.by)},
        {"survivors", survivors},
        {"leaks", r.teardown.report.leaks},
        {"started_ns", r.teardown.started_ns},
        {"signals", signals},
        {"stack_dumps", dumps}}},
  };
  if (r.max_restarts > 0) out["max_restarts"] = r.max_restarts;
  if (r.harness_fds) out["harness_fds"] = {{"before", r.harness_fds->before}, {"after", r.harness_fds->after}};
  if (r.instruments) {
    auto path = [](const std::string& p) { return p.empty() ? json(nullptr) : json(p); };
    out["instruments"] = {{"python_shim", path(r.instruments->python_shim)}, {"preload", path(r.instruments->preload)}};
  }
  json timeline = json::array();
  for (const auto& t : r.timeline) {
    timeline.push_back({{"t_ms", t.t_ms},
                        {"rank", t.rank ? json(*t.rank) : json(nullptr)},
                        {"what", t.what},
                        {"kind", timelineKindName(t.kind)}});
  }
  out["timeline"] = timeline;
  out["notes"] = r.notes;
  out["interrupted"] = r.interrupted;
  if (!r.library_paths.empty()) out["library_paths"] = r.library_paths;
  if (!r.faults.empty()) {
    json faults = json::array();
    for (const RequestedFault& f : r.faults) faults.push_back(toJson(f));
    out["faults"] = std::move(faults);
  }
  return out;
}

Result<SupervisorRecord> supervisorRecordFromJson(const json& j) {
  SupervisorRecord r;
  try {
    auto schema = get<std::string>(j, "schema", "$");
    if (schema != kSupervisorSchema) {
      return fail(ErrorCode::kBadInput, "unknown schema '" + schema + "'", "$.schema");
    }
    r.start_ns = get<int64_t>(j, "start_ns", "$");
    r.end_ns = get<int64_t>(j, "end_ns", "$");
    r.launcher = get<std::string>(j, "launcher", "$");
    r.command = get<std::vector<std::string>>(j, "command", "$");
    r.world_size = get<int>(j, "world_size", "$");
    r.max_restarts = getOpt<int>(j, "max_restarts", "$").value_or(0);
    r.containment = get<std::string>(j, "containment", "$");
    const json& ranks = array(j, "ranks", "$");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string p = "$.ranks[" + std::to_string(i) + "]";
      SupervisedRank k;
      k.rank = get<int>(ranks[i], "rank", p);
      k.pid = get<int>(ranks[i], "pid", p);
      k.start_ns = get<int64_t>(ranks[i], "start_ns", p);
      k.exit_ns = getOpt<int64_t>(ranks[i], "exit_ns", p);
      k.exit_code = getOpt<int>(ranks[i], "exit_code", p);
      k.signal = getOpt<std::string>(ranks[i], "signal", p);
      k.killed_by_teardown = get<bool>(ranks[i], "killed_by_teardown", p);
      k.node = getOpt<std::string>(ranks[i], "node", p);
      k.attempt = getOpt<int>(ranks[i], "attempt", p).value_or(0);
      r.ranks.push_back(std::move(k));
    }
    const json& l = at(j, "launcher_process", "$");
    if (!l.is_null()) {
      LauncherProcess lp;
      lp.pid = get<int>(l, "pid", "$.launcher_process");
      lp.exit_code = getOpt<int>(l, "exit_code", "$.launcher_process");
      lp.signal = getOpt<std::string>(l, "signal", "$.launcher_process");
      lp.exit_ns = getOpt<int64_t>(l, "exit_ns", "$.launcher_process");
      r.launcher_process = lp;
    }
    const json& t = at(j, "trigger", "$");
    auto kind = get<std::string>(t, "kind", "$.trigger");
    auto k = triggerKindFromName(kind);
    if (!k) return fail(ErrorCode::kBadInput, "unknown value '" + kind + "'", "$.trigger.kind");
    r.trigger.kind = *k;
    r.trigger.t_ns = get<int64_t>(t, "t_ns", "$.trigger");
    r.trigger.rank = getOpt<int>(t, "rank", "$.trigger");
    r.trigger.detail = get<std::string>(t, "detail", "$.trigger");
    const json& td = at(j, "teardown", "$");
    const std::string tp = "$.teardown";
    r.teardown.report.clean = get<bool>(td, "clean", tp);
    r.teardown.report.duration_ms = get<int64_t>(td, "duration_ms", tp);
    auto esc = get<std::string>(td, "escalation", tp);
    auto e = escalationFromName(esc);
    if (!e) return fail(ErrorCode::kBadInput, "unknown value '" + esc + "'", tp + ".escalation");
    r.teardown.report.escalation = *e;
    // Added: records written before it have no "by".
    if (auto by = getOpt<std::string>(td, "by", tp)) {
      auto b = teardownByFromName(*by);
      if (!b) return fail(ErrorCode::kBadInput, "unknown value '" + *by + "'", tp + ".by");
      r.teardown.report.by = *b;
    }
    for (const auto& s : array(td, "survivors", tp)) {
      r.teardown.report.survivors.push_back({get<int>(s, "pid", tp + ".survivors"), get<std::string>(s, "cmdline", tp + ".survivors")});
    }
    r.teardown.report.leaks = get<std::vector<std::string>>(td, "leaks", tp);
    r.teardown.started_ns = get<int64_t>(td, "started_ns", tp);
    for (const auto& s : array(td, "signals", tp)) {
      const std::string sp = tp + ".signals";
      r.teardown.signals.push_back({get<int>(s, "pid", sp), getOpt<int>(s, "rank", sp), get<std::string>(s, "signal", sp),
                                    get<int64_t>(s, "t_ns", sp)});
    }
    // stack_dumps was added with the first writer; tolerate its absence.
    if (td.contains("stack_dumps")) {
      for (const auto& d : array(td, "stack_dumps", tp)) {
        const std::string dp = tp + ".stack_dumps";
        r.teardown.stack_dumps.push_back({get<int>(d, "rank", dp), get<int>(d, "pid", dp), get<std::string>(d, "method", dp),
                                          get<std::string>(d, "path", dp), get<bool>(d, "ok", dp)});
      }
    }
    if (j.contains("process_exits")) {
      for (const auto& e : array(j, "process_exits", "$")) {
        const std::string ep = "$.process_exits";
        r.process_exits.push_back({get<int>(e, "pid", ep), getOpt<int>(e, "rank", ep), get<int64_t>(e, "t_ns", ep),
                                   getOpt<int>(e, "exit_code", ep), getOpt<std::string>(e, "signal", ep),
                                   get<std::string>(e, "cmdline", ep), getOpt<int>(e, "ppid", ep)});
      }
    }
    if (j.contains("harness_fds")) {
      const json& f = at(j, "harness_fds", "$");
      r.harness_fds = HarnessFds{get<int>(f, "before", "$.harness_fds"), get<int>(f, "after", "$.harness_fds")};
    }
    if (j.contains("instruments")) {
      const json& in = at(j, "instruments", "$");
      r.instruments = RunInstruments{getOpt<std::string>(in, "python_shim", "$.instruments").value_or(""),
                                     getOpt<std::string>(in, "preload", "$.instruments").value_or("")};
    }
    if (j.contains("timeline")) {
      for (const auto& t : array(j, "timeline", "$")) {
        const auto kind = timelineKindFromName(getOpt<std::string>(t, "kind", "$.timeline").value_or("note"));
        r.timeline.push_back({get<double>(t, "t_ms", "$.timeline"), getOpt<int>(t, "rank", "$.timeline"),
                              get<std::string>(t, "what", "$.timeline"), kind.value_or(TimelineKind::kNote)});
      }
    }
    if (j.contains("notes")) {
      for (const auto& n : array(j, "notes", "$")) {
        if (!n.is_string()) throw FieldError{"$.notes", "not a string"};
        r.notes.push_back(n.get<std::string>());
      }
    }
    if (j.contains("interrupted")) r.interrupted = get<bool>(j, "interrupted", "$");
    if (j.contains("library_paths")) {
      for (const auto& p : array(j, "library_paths", "$")) {
        if (!p.is_string()) throw FieldError{"$.library_paths", "not a string"};
        r.library_paths.push_back(p.get<std::string>());
      }
    }
    if (j.contains("faults")) {
      for (const auto& f : array(j, "faults", "$")) {
        auto fault = requestedFaultFromJson(f, "$.faults[]");
        if (!fault) return tl::unexpected(fault.error());
        r.faults.push_back(std::move(*fault));
      }
    }
  } catch (const FieldError& e) {
    return fail(ErrorCode::kBadInput, e.what, e.path);
  }
  return r;
}

Result<SupervisorRecord> readSupervisorRecord(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kIo, std::string("cannot open: ") + std::strerror(errno), path);
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    return fail(ErrorCode::kBadInput, std::string("invalid json: ") + e.what(), path);
  }
  auto r = supervisorRecordFromJson(j);
  if (!r) {
    Error err = r.error();
    err.context = path + ":" + err.context;
    return tl::unexpected<Error>(err);
  }
  return r;
}

Result<void> writeSupervisorRecord(const SupervisorRecord& r, const std::string& path) {
  return writeFileAtomically(path, toJson(r).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

}  // namespace faultline
