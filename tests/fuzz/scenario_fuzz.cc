// libFuzzer target: the scenario parser (harness/scenario), TOML text to a
// validated Scenario, from memory under a pseudo file name.
// Invariants: nothing throws; an error names "fuzz.toml:LINE:COL: " with
// LINE, COL >= 1; a parsed scenario keeps the promises of CONTRACT.md
// section 5 and, written back as TOML, parses to the same scenario.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <regex>
#include <sstream>
#include <string>

#include <toml++/toml.h>

#include "harness/scenario/scenario.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace sc = faultline::scenario;
using faultline::fuzz::check;
using nlohmann::json;

constexpr const char* kFile = "fuzz.toml";

// "fuzz.toml:12:3: what": the position every bad-input error must carry.
void checkErrorPosition(const std::string& message) {
  const std::string head = std::string(kFile) + ":";
  check(message.rfind(head, 0) == 0, "a scenario error does not start with the file name", message);
  size_t i = head.size();
  for (int part = 0; part < 2; ++part) {
    const size_t start = i;
    while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
    check(i > start && message[start] != '0', "a scenario error has no line:col >= 1", message);
    check(i < message.size() && message[i] == ':', "a scenario error has no line:col", message);
    ++i;
  }
  check(message.compare(i, 1, " ") == 0, "a scenario error has no text after line:col", message);
}

toml::array toToml(const std::vector<std::string>& v) {
  toml::array a;
  for (const auto& s : v) a.push_back(s);
  return a;
}

// Expectation values come from TOML, so each has a TOML form; null has none.
toml::array toArray(const json& j);
toml::table toTable(const json& j);

template <class Put>
void putValue(const json& j, Put put) {
  switch (j.type()) {
    case json::value_t::string: put(j.get<std::string>()); break;
    case json::value_t::number_integer: put(j.get<int64_t>()); break;
    case json::value_t::number_float: put(j.get<double>()); break;
    case json::value_t::boolean: put(j.get<bool>()); break;
    case json::value_t::array: put(toArray(j)); break;
    case json::value_t::object: put(toTable(j)); break;
    default: check(false, "an expectation value has no TOML form", j.dump());
  }
}

toml::array toArray(const json& j) {
  toml::array a;
  for (const auto& e : j) putValue(e, [&](auto&& v) { a.push_back(std::move(v)); });
  return a;
}

toml::table toTable(const json& j) {
  toml::table t;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    putValue(item.value(), [&](auto&& x) { t.insert_or_assign(key, std::move(x)); });
  }
  return t;
}

std::string toTomlText(const sc::Scenario& s) {
  toml::table root;
  root.insert_or_assign("name", s.name);
  root.insert_or_assign("description", s.description);
  root.insert_or_assign("tags", toToml(s.tags));
  toml::table stack;
  stack.insert_or_assign("launcher", s.stack.launcher);
  stack.insert_or_assign("trainer", s.stack.trainer);
  stack.insert_or_assign("command", toToml(s.stack.command));
  stack.insert_or_assign("args", toToml(s.stack.args));
  if (s.stack.launcher_args) stack.insert_or_assign("launcher_args", toToml(*s.stack.launcher_args));
  stack.insert_or_assign("world_size", s.stack.world_size);
  stack.insert_or_assign("nodes", s.stack.nodes);
  stack.insert_or_assign("gpus", s.stack.gpus);
  stack.insert_or_assign("stacks", toToml(s.stack.stacks));
  if (!s.stack.torch.empty()) stack.insert_or_assign("torch", s.stack.torch);
  stack.insert_or_assign("instrument", s.stack.instrument);
  root.insert_or_assign("stack", std::move(stack));
  if (s.fault) {
    const sc::Fault& f = *s.fault;
    toml::table fault;
    if (f.scripted()) {  // rank (or node), the point, arg and by belong to a kind
      fault.insert_or_assign("kind", std::string(faultline::probe::faultKindName(f.kind)));
      if (!f.node.empty()) {  // the node's ranks follow from it
        fault.insert_or_assign("node", f.node);
      } else if (f.ranks.size() == 1) {
        fault.insert_or_assign("rank", f.ranks.front());
      } else if (!f.ranks.empty()) {
        toml::array ranks;
        for (int r : f.ranks) ranks.push_back(r);
        fault.insert_or_assign("rank", std::move(ranks));
      }
      if (f.collective) {
        fault.insert_or_assign("collective", static_cast<int64_t>(*f.collective));
      } else if (!f.op.empty()) {
        fault.insert_or_assign("op", f.op);
        fault.insert_or_assign("nth", static_cast<int64_t>(f.nth));
      } else if (f.after_s) {
        fault.insert_or_assign("after_s", *f.after_s);
        if (f.since_first_step) fault.insert_or_assign("since", "first_step");
      } else if (f.rendezvous) {
        fault.insert_or_assign("point", "rendezvous");
      } else {
        fault.insert_or_assign("step", static_cast<int64_t>(f.step));
      }
      fault.insert_or_assign("arg", f.arg);
      fault.insert_or_assign("by", f.by);
    }
    if (!f.inject.empty()) fault.insert_or_assign("inject", f.inject);
    root.insert_or_assign("fault", std::move(fault));
  }
  root.insert_or_assign("limits", toml::table{{"hang_timeout_s", s.limits.hang_timeout_s},
                                              {"deadline_s", s.limits.deadline_s},
                                              {"grace_s", s.limits.grace_s},
                                              {"hang_factor", s.limits.hang_factor},
                                              {"hang_floor_s", s.limits.hang_floor_s},
                                              {"hang_idle_s", s.limits.hang_idle_s}});
  if (!s.library_paths.empty()) root.insert_or_assign("diagnose", toml::table{{"library_paths", toToml(s.library_paths)}});
  toml::table expect;
  for (const sc::Expect& e : s.expect) {
    putValue(e.asWritten(), [&](auto&& v) { expect.insert_or_assign(e.path, std::move(v)); });
  }
  root.insert_or_assign("expect", std::move(expect));
  std::ostringstream out;
  out << root;
  return out.str();
}

// Everything but source positions; expectations by path (a re-written file
// orders them by key, the original by line).
json summary(const sc::Scenario& s) {
  json expect = json::object();
  for (const sc::Expect& e : s.expect) expect[e.path] = {static_cast<int>(e.op), e.value};
  return {{"name", s.name},
          {"description", s.description},
          {"tags", s.tags},
          {"file", s.file},
          {"launcher", s.stack.launcher},
          {"trainer", s.stack.trainer},
          {"command", s.stack.command},
          {"args", s.stack.args},
          {"launcher_args", s.stack.launcher_args ? json(*s.stack.launcher_args) : json()},
          {"world_size", s.stack.world_size},
          {"nodes", s.stack.nodes},
          {"gpus", s.stack.gpus},
          {"stacks", s.stack.stacks},
          {"torch", s.stack.torch},
          {"instrument", s.stack.instrument},
          {"fault", s.fault ? json{std::string(faultline::probe::faultKindName(s.fault->kind)), s.fault->ranks, s.fault->step, s.fault->arg, s.fault->inject,
                                   s.fault->collective ? json(*s.fault->collective) : json(), s.fault->op,
                                   s.fault->nth, s.fault->after_s ? json(*s.fault->after_s) : json(), s.fault->since_first_step, s.fault->by,
                                   s.fault->node, s.fault->rendezvous}
                            : json()},
          {"limits", {s.limits.hang_timeout_s, s.limits.deadline_s, s.limits.grace_s, s.limits.hang_factor,
                      s.limits.hang_floor_s, s.limits.hang_idle_s}},
          {"library_paths", s.library_paths},
          {"expect", expect}};
}

void checkValid(const sc::Scenario& s) {
  check(!s.name.empty(), "a parsed scenario has no name");
  check(s.file == kFile, "a parsed scenario names another file", s.file);
  check(s.stack.world_size >= 1 && s.stack.world_size <= 4096, "world_size out of range");
  if (s.fault) {
    for (int r : s.fault->ranks) check(r >= 0 && r < s.stack.world_size, "fault rank out of range");
  }
  if (s.fault) check(s.fault->step >= 1, "fault step < 1");
  if (s.fault) check(s.fault->scripted() || !s.fault->inject.empty(), "a fault has neither kind nor inject");
  for (double v : {s.limits.hang_timeout_s, s.limits.deadline_s, s.limits.grace_s}) {
    check(std::isfinite(v) && v > 0, "a limit is not a positive number of seconds", json(v).dump());
  }
  check(!s.expect.empty(), "a parsed scenario has no expectations");
  for (const sc::Expect& e : s.expect) {
    check(sc::isReportPath(e.path), "an expectation path is no report path", e.path);
    check(e.pos.line >= 1 && e.pos.column >= 1, "an expectation has no position", e.path);
    if (e.op == sc::MatchOp::kRegex) check(e.value.is_string(), "a regex expectation is not a string", e.path);
    if (e.op == sc::MatchOp::kMax || e.op == sc::MatchOp::kMin) check(e.value.is_number(), "a bound is not a number");
    if (e.op == sc::MatchOp::kNull) check(e.value.is_boolean(), "a null matcher is not a boolean");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto s = sc::parseScenarioText(text, kFile);
  if (!s) {
    check(s.error().code == faultline::ErrorCode::kBadInput, "a scenario error is not bad input", s.error().message);
    checkErrorPosition(s.error().message);
    return 0;
  }
  checkValid(*s);
  const std::string again_text = toTomlText(*s);
  const auto again = sc::parseScenarioText(again_text, kFile);
  check(again.has_value(), "a parsed scenario written back does not parse",
        again ? std::string() : again.error().message + "\n" + again_text);
  check(summary(*again) == summary(*s), "a parsed scenario written back parses differently", again_text);
  return 0;
}
