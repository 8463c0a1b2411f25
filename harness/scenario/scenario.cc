// Strict TOML -> Scenario. Every error names file:line:col and what was expected.
#include "harness/scenario/scenario.h"

#include "harness/model/stack_name.h"
#include "harness/model/torch_version.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "harness/probe/fault_spec.h"
#include "harness/probe/preload/inject_spec.h"

namespace faultline::scenario {
namespace {

// The numbers in a regular expression that std::regex (libstdc++) reads into
// an int without an overflow check: back-references (\N) and repetition
// counts ({m}, {m,}, {m,n}). A huge one is undefined behaviour in the
// compiler (found by tests/fuzz/scenario_fuzz), and a large repetition builds
// an automaton of that many states; both are refused before compiling.
constexpr long kMaxRegexRepeat = 1000;
constexpr long kMaxRegexBackref = 99;

std::optional<std::string> regexNumberError(const std::string& re) {
  auto digits = [&](size_t& i, long& v) {
    const size_t start = i;
    v = 0;
    while (i < re.size() && re[i] >= '0' && re[i] <= '9') {
      if (v <= kMaxRegexRepeat) v = v * 10 + (re[i] - '0');
      ++i;
    }
    return i > start;
  };
  for (size_t i = 0; i < re.size(); ++i) {
    if (re[i] == '\\') {
      size_t j = i + 1;
      long v = 0;
      if (digits(j, v) && v > kMaxRegexBackref) {
        return "back-reference \\" + re.substr(i + 1, std::min<size_t>(j - i - 1, 12)) + " is larger than " +
               std::to_string(kMaxRegexBackref);
      }
      i = std::max(i + 1, j - 1);  // skip the escaped character or the digits
      continue;
    }
    if (re[i] != '{') continue;
    size_t j = i + 1;
    long v = 0;
    for (int part = 0; part < 2; ++part) {
      if (digits(j, v) && v > kMaxRegexRepeat) {
        return "repetition count in '" + re.substr(i, std::min<size_t>(j - i, 16)) + "' is larger than " +
               std::to_string(kMaxRegexRepeat);
      }
      if (j >= re.size() || re[j] != ',') break;
      ++j;
    }
  }
  return std::nullopt;
}

namespace fs = std::filesystem;
using nlohmann::json;

const std::set<std::string> kTrainers = {"reference", "command"};

// Collects the first error; later checks are skipped once one is found.
class Checker {
 public:
  explicit Checker(std::string file) : file_(std::move(file)) {}

  SourcePos pos(const toml::source_region& r) const {
    return SourcePos{file_, static_cast<int>(r.begin.line), static_cast<int>(r.begin.column)};
  }
  void error(const toml::source_region& where, const std::string& what) {
    if (!error_) error_ = Error{ErrorCode::kBadInput, pos(where).str() + ": " + what, file_};
  }
  bool failed() const { return error_.has_value(); }
  const Error& err() const { return *error_; }

  // Rejects keys outside `allowed`, naming the ones that are allowed.
  void onlyKeys(const toml::table& t, std::initializer_list<const char*> allowed, const std::string& where) {
    for (auto&& [key, node] : t) {
      bool ok = false;
      for (const char* a : allowed) ok = ok || key.str() == a;
      if (!ok) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        error(key.source(), "unknown key '" + std::string(key.str()) + "' in " + where + ", expected one of: " + list);
      }
    }
  }

  std::optional<std::string> str(const toml::table& t, const char* key, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto s = n->as_string()) return s->get();
    error(n->source(), where + "." + key + ": expected a string, got " + typeName(*n));
    return std::nullopt;
  }
  std::optional<int64_t> integer(const toml::table& t, const char* key, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto i = n->as_integer()) return i->get();
    error(n->source(), where + "." + key + ": expected an integer, got " + typeName(*n));
    return std::nullopt;
  }
  std::optional<bool> boolean(const toml::table& t, const char* key, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto b = n->as_boolean()) return b->get();
    error(n->source(), where + "." + key + ": expected a boolean, got " + typeName(*n));
    return std::nullopt;
  }
  std::optional<double> number(const toml::table& t, const char* key, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    if (auto i = n->as_integer()) return static_cast<double>(i->get());
    if (auto f = n->as_floating_point()) return f->get();
    error(n->source(), where + "." + key + ": expected a number, got " + typeName(*n));
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> strings(const toml::table& t, const char* key, const std::string& where) {
    const toml::node* n = t.get(key);
    if (!n) return std::nullopt;
    const toml::array* a = n->as_array();
    if (!a) {
      error(n->source(), where + "." + key + ": expected an array of strings, got " + typeName(*n));
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& e : *a) {
      if (auto s = e.as_string()) {
        out.push_back(s->get());
      } else {
        error(e.source(), where + "." + key + ": expected an array of strings, found " + typeName(e));
        return std::nullopt;
      }
    }
    return out;
  }
  const toml::table* table(const toml::table& t, const char* key) {
    const toml::node* n = t.get(key);
    if (!n) return nullptr;
    if (auto tt = n->as_table()) return tt;
    error(n->source(), std::string("[") + key + "]: expected a table, got " + typeName(*n));
    return nullptr;
  }

  static std::string typeName(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a float";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::array: return "an array";
      case toml::node_type::table: return "a table";
      default: return "a date/time";
    }
  }

 private:
  std::string file_;
  std::optional<Error> error_;
};

json toJson(const toml::node& n) {
  if (auto s = n.as_string()) return s->get();
  if (auto i = n.as_integer()) return i->get();
  if (auto f = n.as_floating_point()) return f->get();
  if (auto b = n.as_boolean()) return b->get();
  if (auto a = n.as_array()) {
    json out = json::array();
    for (const auto& e : *a) out.push_back(toJson(e));
    return out;
  }
  if (auto t = n.as_table()) {
    json out = json::object();
    for (auto&& [k, v] : *t) out[std::string(k.str())] = toJson(v);
    return out;
  }
  return nullptr;
}

void checkSomeStackRuns(Checker& c, const toml::table& t, const Stack& s);

// [stack.command_on] and [stack.args_on]: a list of strings for each of
// some launchers of stack.stacks (a command is never empty; arguments may be).
void parseOnLaunchers(Checker& c, const toml::table& t, const char* key, const Stack& s,
                      std::map<std::string, std::vector<std::string>>& out) {
  const toml::node* n = t.get(key);
  if (!n) return;
  const bool command = std::string(key) == "command_on";
  const std::string where = std::string("stack.") + key;
  const toml::table* on = n->as_table();
  if (!on) {
    c.error(n->source(), where + ": expected a table of launcher = [\"" + (command ? "program" : "argument") + "\", ...], got " +
                             Checker::typeName(*n));
    return;
  }
  for (auto&& [k, value] : *on) {
    const std::string launcher(k.str());
    if (!isStackLauncher(launcher)) {
      c.error(value.source(), where + "." + launcher + ": unknown launcher '" + launcher + "', expected " + stackLauncherList());
      continue;
    }
    const bool listed = std::any_of(s.stacks.begin(), s.stacks.end(),
                                    [&](const std::string& e) { return e.substr(0, e.find('@')) == launcher; });
    if (!listed) {
      c.error(value.source(), where + "." + launcher + ": " + launcher + " is not in stack.stacks, so this " +
                                  (command ? "command never runs" : "never applies"));
      continue;
    }
    auto list = c.strings(*on, k.str().data(), where);
    if (list && list->empty() && command) c.error(value.source(), where + "." + launcher + ": expected [\"program\", ...], got []");
    if (list && (!list->empty() || !command)) out[launcher] = *list;
  }
}

void parseStack(Checker& c, const toml::table& t, Stack& s) {
  c.onlyKeys(t, {"launcher", "trainer", "command", "command_on", "args", "args_on", "launcher_args", "world_size", "nodes",
                 "gpus", "stacks", "torch", "instrument", "tools", "env", "unsupported_on", "max_restarts", "rendezvous"},
             "[stack]");
  if (auto v = c.str(t, "launcher", "stack")) {
    if (!isStackLauncher(*v)) c.error(t.get("launcher")->source(), "stack.launcher: unknown launcher '" + *v + "', expected " + stackLauncherList());
    s.launcher = *v;
  }
  if (auto v = c.str(t, "trainer", "stack")) {
    if (!kTrainers.count(*v)) c.error(t.get("trainer")->source(), "stack.trainer: unknown trainer '" + *v + "', expected reference or command");
    s.trainer = *v;
  }
  if (auto v = c.strings(t, "command", "stack")) s.command = *v;
  if (auto v = c.strings(t, "args", "stack")) s.args = *v;
  if (auto v = c.strings(t, "launcher_args", "stack")) s.launcher_args = *v;
  if (auto v = c.strings(t, "stacks", "stack")) {
    for (const auto& name : *v) {
      if (auto parsed = parseStackName(name); !parsed) c.error(t.get("stacks")->source(), "stack.stacks: " + parsed.error().message);
    }
    s.stacks = *v;
  }
  if (auto v = c.str(t, "torch", "stack")) {
    if (auto bounds = parseVersionConstraint(*v); !bounds) {
      c.error(t.get("torch")->source(), "stack.torch: " + bounds.error().message);
    } else {
      s.torch = *v;
      s.torch_bounds = *bounds;
    }
  }
  if (auto v = c.integer(t, "max_restarts", "stack")) {
    if (*v < 0 || *v > 100) {
      c.error(t.get("max_restarts")->source(), "stack.max_restarts: " + std::to_string(*v) +
                                                   " is out of range, expected 0..100 (the restarts the launcher may make)");
    }
    s.max_restarts = static_cast<int>(*v);
  }
  if (auto v = c.str(t, "rendezvous", "stack")) {
    if (*v != "static" && *v != "c10d") {
      c.error(t.get("rendezvous")->source(), "stack.rendezvous: '" + *v +
                                                 "' is not a rendezvous backend faultline gives torchrun, expected static or c10d");
    }
    s.rendezvous = *v;
  }
  if (auto v = c.integer(t, "world_size", "stack")) {
    if (*v < 1 || *v > 4096) c.error(t.get("world_size")->source(), "stack.world_size: " + std::to_string(*v) + " is out of range, expected 1..4096");
    s.world_size = static_cast<int>(*v);
  }
  if (auto v = c.integer(t, "nodes", "stack")) {
    if (*v < 1 || *v > 1024) {
      c.error(t.get("nodes")->source(), "stack.nodes: " + std::to_string(*v) + " is out of range, expected 1..1024");
    } else if (s.world_size % *v != 0) {
      c.error(t.get("nodes")->source(), "stack.nodes: world_size " + std::to_string(s.world_size) +
                                            " is not a multiple of " + std::to_string(*v) +
                                            " nodes, expected world_size = nodes x ranks per node");
    } else {
      s.nodes = static_cast<int>(*v);
    }
  }
  if (auto v = c.integer(t, "gpus", "stack")) {
    if (*v < 0 || *v > 4096) c.error(t.get("gpus")->source(), "stack.gpus: " + std::to_string(*v) + " is out of range, expected 0..4096");
    s.gpus = static_cast<int>(*v);
  }
  if (auto v = c.boolean(t, "instrument", "stack")) s.instrument = *v;
  if (auto v = c.strings(t, "tools", "stack")) {
    for (const std::string& alternatives : *v) {
      std::vector<std::string> any;
      std::optional<std::string> bad;  // the first name that is no helper ("" too)
      for (size_t start = 0;;) {
        const size_t bar = alternatives.find('|', start);
        std::string name = alternatives.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
        const bool helper =
            std::find_if(std::begin(kHelperTools), std::end(kHelperTools), [&](const char* h) { return name == h; }) !=
            std::end(kHelperTools);
        if (!helper && !bad) bad = name;
        any.push_back(std::move(name));
        if (bar == std::string::npos) break;
        start = bar + 1;
      }
      if (bad) {
        c.error(t.get("tools")->source(), "stack.tools: unknown tool '" + *bad + "' in \"" + alternatives +
                                              "\", expected eu-stack, gdb or py-spy (alternatives joined by |)");
      } else {
        s.tools.push_back(std::move(any));
      }
    }
  }
  parseOnLaunchers(c, t, "command_on", s, s.command_on);
  parseOnLaunchers(c, t, "args_on", s, s.args_on);
  if (const toml::node* n = t.get("env")) {
    if (const toml::table* env = n->as_table()) {
      for (auto&& [key, value] : *env) {
        const std::string name(key.str());
        const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                           std::all_of(name.begin(), name.end(), [](char ch) {
                             return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                           });
        if (!valid) {
          c.error(value.source(), "stack.env: '" + name + "' is no variable name, expected letters, digits and _");
          continue;
        }
        if (auto v = c.str(*env, key.str().data(), "stack.env")) s.env[name] = *v;
      }
    } else {
      c.error(n->source(), "stack.env: expected a table of NAME = \"value\", got " + Checker::typeName(*n));
    }
  }
  if (const toml::node* n = t.get("unsupported_on")) {
    if (const toml::table* on = n->as_table()) {
      for (auto&& [key, value] : *on) {
        const std::string launcher(key.str());
        if (!isStackLauncher(launcher)) {
          c.error(value.source(), "stack.unsupported_on." + launcher + ": unknown launcher '" + launcher + "', expected " +
                                      stackLauncherList());
          continue;
        }
        auto why = c.str(*on, key.str().data(), "stack.unsupported_on");
        if (why && why->empty()) c.error(value.source(), "stack.unsupported_on." + launcher + ": expected why, got \"\"");
        if (why && !why->empty()) s.unsupported_on[launcher] = *why;
      }
    } else {
      c.error(n->source(), "stack.unsupported_on: expected a table of launcher = \"why\", got " + Checker::typeName(*n));
    }
  }
  if (s.trainer == "command" && s.command.empty() && !c.failed()) {
    c.error(t.source(), "[stack]: trainer = \"command\" needs command = [\"program\", ...]");
  }
  if (const LauncherTraits* traits = launcherTraits(s.launcher);
      traits && traits->is_the_command && s.command.empty() && !c.failed()) {
    c.error(t.source(), "[stack]: launcher = \"" + s.launcher + "\" needs command = [\"launcher\", ...]");
  }
  checkSomeStackRuns(c, t, s);
}

// Whether the torch bounds admit any version at all (">=2,<2" admits none).
// Tried on each bound's own version and its neighbours, which is where a
// nonempty range of versions has a member.
// "2.13.1" -> {2, 13, 1}; a part too large for a version (or no number) is 10^9.
std::vector<long> numericParts(const std::string& version) {
  std::vector<long> p;
  std::stringstream ss(version);
  for (std::string part; std::getline(ss, part, '.');) {
    long v = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    p.push_back(ec == std::errc() && ptr != part.data() && v < 1'000'000'000L ? v : 1'000'000'000L);
  }
  return p;
}

bool anyTorchSatisfies(const std::vector<VersionBound>& bounds, const std::string& series = "") {
  if (bounds.empty()) return true;
  std::vector<std::vector<long>> tries = {{0, 0}, {99999, 0}};
  for (const auto& b : bounds) {
    const std::vector<long> p = numericParts(b.version);
    tries.push_back(p);
    for (size_t i = 0; i < p.size(); ++i) {
      for (long d : {-1L, 1L}) {
        auto q = p;
        if (q[i] + d < 0) continue;
        q[i] += d;
        tries.push_back(q);
      }
    }
    for (long extra : {0L, 1L, 99L}) {
      auto q = p;
      q.push_back(extra);
      tries.push_back(q);
    }
  }
  if (!series.empty()) {
    // A stack pinned to a series (torchrun@1.13) runs only a version of it.
    std::vector<std::vector<long>> pinned;
    const std::vector<long> base = numericParts(series);
    pinned.push_back(base);
    for (long patch : {0L, 1L, 99L}) {
      auto q = base;
      q.push_back(patch);
      pinned.push_back(q);
    }
    for (const auto& t : tries) {
      if (t.size() > base.size() && std::equal(base.begin(), base.end(), t.begin())) pinned.push_back(t);
    }
    tries = pinned;
  }
  for (const auto& t : tries) {
    std::string v;
    for (long x : t) v += (v.empty() ? "" : ".") + std::to_string(x);
    if (!v.empty() && satisfies(v, bounds)) return true;
  }
  return false;
}

// Why a stack entry can never run the scenario.
struct NeverRuns {
  std::string why;     // "external runs stack.command itself, ..."
  bool torch = false;  // because of stack.torch
};

// Why the stack entry ("external", "launch@1.13") can never run this
// scenario, whatever is installed; nullopt when it can. The same rules the
// stack plan applies (harness/launch/stack_plan.cc), those that hold by
// construction: they depend on the scenario alone.
std::optional<NeverRuns> neverRunsOn(const std::string& entry, const Stack& s) {
  const auto at = entry.find('@');
  const std::string launcher = entry.substr(0, at);
  const std::string series = at == std::string::npos ? "" : entry.substr(at + 1);
  const bool reference = s.trainer == "reference";
  const bool python = !reference && !s.command.empty() &&
                      fs::path(s.command.front()).filename().string().rfind("python", 0) == 0;
  const LauncherTraits* traits = launcherTraits(launcher);
  if (!traits) return std::nullopt;  // not a stack name: the stack plan says so
  if (traits->python_only && !python && !reference) return NeverRuns{entry + " runs Python trainers only"};
  if (reference && !traits->runs_reference) {
    return NeverRuns{entry + " runs stack.command itself, and the reference trainer needs a launcher"};
  }
  const bool needs_torch = reference || python || traits->needs_torch || !series.empty();
  if (needs_torch && !anyTorchSatisfies(s.torch_bounds, series)) {
    return NeverRuns{series.empty() ? "torch " + s.torch + " admits no version"
                                    : entry + " runs torch " + series + ", outside torch " + s.torch,
                     true};
  }
  return std::nullopt;
}

// A scenario no stack can ever run is bad input, not a quiet `unsupported`.
void checkSomeStackRuns(Checker& c, const toml::table& t, const Stack& s) {
  if (c.failed()) return;
  const std::vector<std::string> entries = s.entries();
  std::string why;
  bool only_torch = true;
  for (const auto& e : entries) {
    if (auto off = s.unsupported_on.find(e.substr(0, e.find('@'))); off != s.unsupported_on.end()) {
      why += (why.empty() ? "" : "; ") + e + ": " + off->second;
      only_torch = false;
      continue;
    }
    const auto no = neverRunsOn(e, s);
    if (!no) return;
    why += (why.empty() ? "" : "; ") + no->why;
    only_torch = only_torch && no->torch;
  }
  const toml::node* at = only_torch && t.get("torch") ? t.get("torch")
                       : t.get("stacks")              ? t.get("stacks")
                       : t.get("launcher")            ? t.get("launcher")
                                                      : static_cast<const toml::node*>(&t);
  const std::string key = at == t.get("torch") ? "stack.torch" : at == t.get("stacks") ? "stack.stacks"
                        : at == t.get("launcher") ? "stack.launcher" : "[stack]";
  c.error(at->source(), key + ": no stack can run this scenario (" + why +
                            "), expected a stack that can: trainer = \"command\" for external, "
                            "a Python trainer for spawn and the frameworks, torch bounds that admit a version");
}

// fault.inject: the interposer's own parser decides, so a scenario and
// FAULTLINE_INJECT accept exactly the same text; errors point into the string.
void parseInject(Checker& c, const toml::table& t, const Stack& stack, Fault& f) {
  auto text = c.str(t, "inject", "fault");
  if (!text) return;
  const toml::source_region where = t.get("inject")->source();
  fl_inject_rule rules[FL_INJECT_MAX_RULES];
  fl_inject_error err;
  const int n = fl_inject_parse(text->c_str(), rules, FL_INJECT_MAX_RULES, &err);
  if (n < 0) {
    toml::source_region at = where;
    at.begin.column += static_cast<toml::source_index>(1 + err.offset);  // past the opening quote
    c.error(at, "fault.inject: " + std::string(err.message));
    return;
  }
  if (n == 0) {
    c.error(where, "fault.inject: empty, expected CALL:ERRNO[:rank=R][:after=N][:count=K][:path=GLOB] such as "
                   "\"write:ENOSPC:rank=1:after=100\"");
    return;
  }
  if (!stack.instrument) {
    c.error(where, "fault.inject: the LD_PRELOAD interposer strikes system-call faults, and stack.instrument = false "
                   "runs without it, expected no inject or stack.instrument = true");
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (rules[i].rank >= stack.world_size) {
      c.error(where, "fault.inject: rank " + std::to_string(rules[i].rank) + " in '" + rules[i].text +
                         "' is impossible with world_size " + std::to_string(stack.world_size) + ", expected 0.." +
                         std::to_string(stack.world_size - 1) + " or all");
      return;
    }
  }
  f.inject = *text;
}

// collective, op (with nth) or after_s instead of step: one point at most.
void parseFaultPoint(Checker& c, const toml::table& t, Fault& f) {
  if (auto k = c.integer(t, "collective", "fault")) {
    if (*k < 0) c.error(t.get("collective")->source(), "fault.collective: " + std::to_string(*k) + " is impossible, expected a collective number >= 0 (the seq of the rank's events)");
    f.collective = static_cast<long>(*k);
  }
  if (auto op = c.str(t, "op", "fault")) {
    if (op->empty()) c.error(t.get("op")->source(), "fault.op: empty, expected an op such as \"allreduce\" or \"broadcast\"");
    f.op = *op;
  }
  if (auto n = c.integer(t, "nth", "fault")) {
    if (*n < 1) c.error(t.get("nth")->source(), "fault.nth: " + std::to_string(*n) + " is impossible, expected a call number >= 1");
    if (!t.get("op")) c.error(t.get("nth")->source(), "fault.nth: counts the calls of an op, expected op = \"OP\" with it");
    f.nth = static_cast<long>(*n);
  }
  if (auto a = c.number(t, "after_s", "fault")) {
    if (!(*a >= 0) || !std::isfinite(*a)) c.error(t.get("after_s")->source(), "fault.after_s: impossible, expected seconds >= 0");
    f.after_s = *a;
  }
  if (auto since = c.str(t, "since", "fault")) {
    if (*since != "start" && *since != "first_step") {
      c.error(t.get("since")->source(), "fault.since: unknown '" + *since + "', expected start (the default) or first_step");
    } else if (!t.get("after_s")) {
      c.error(t.get("since")->source(), "fault.since: says where after_s counts from, expected after_s = T with it");
    }
    f.since_first_step = *since == "first_step";
  }
  int points = 0;
  const toml::node* second = nullptr;
  for (const char* key : {"step", "collective", "op", "after_s", "point"}) {
    if (const toml::node* n = t.get(key)) {
      if (++points == 2) second = n;
    }
  }
  if (second && !c.failed()) {
    c.error(second->source(), "[fault]: a fault strikes at one point, expected one of step, collective, op, after_s or point");
  }
}

// Who strikes the fault: `by`, or by default the trainer's own layer (the
// reference trainer, the Python shim in a Python `command` trainer, the probe
// in a native one), else
// the supervisor when it can. A fault no layer can strike here is bad input.
void chooseFaultLayer(Checker& c, const toml::table& t, const Stack& stack, Fault& f) {
  using probe::FaultLayer;
  const bool reference = stack.trainer == "reference";
  if (auto v = c.str(t, "by", "fault")) {
    if (*v != "trainer" && *v != "supervisor") {
      c.error(t.get("by")->source(), "fault.by: unknown '" + *v + "', expected trainer or supervisor");
      return;
    }
    f.by = *v;
  }
  std::vector<std::string> command = stack.command;
  command.insert(command.end(), stack.args.begin(), stack.args.end());
  const auto layer = probe::chooseLayer(f, probe::inRankLayer(reference, command));
  if (!layer) {
    const toml::node* at = t.get("by") ? t.get("by") : t.get("kind");
    c.error(at->source(), "[fault]: " + layer.error());
    return;
  }
  f.by = *layer == FaultLayer::kSupervisor ? "supervisor" : "trainer";
  if (!stack.instrument && !reference && f.by == "trainer") {
    c.error(t.get("kind")->source(), "[fault]: the Python shim strikes '" + std::string(probe::faultKindName(f.kind)) +
                                         "' here, and stack.instrument = false runs without it, expected by = "
                                         "\"supervisor\" (a signal or a freeze) or a trainer that strikes its own faults");
    return;
  }
  // A step past the run's last never comes: the reference trainer's --steps is known.
  if (reference && f.atStep() && f.by == "trainer") {
    long steps = 20;
    for (size_t i = 0; i + 1 < stack.args.size(); ++i) {
      if (stack.args[i] == "--steps") steps = std::strtol(stack.args[i + 1].c_str(), nullptr, 10);
    }
    if (steps > 0 && f.step > steps) {
      c.error(t.get("step") ? t.get("step")->source() : t.source(),
              "fault.step: " + std::to_string(f.step) + " is past the run's last step (" + std::to_string(steps) +
                  ", from --steps), expected a step in 1.." + std::to_string(steps));
    }
  }
}

// The stacks that deliver node faults (docs/MULTINODE.md), and which kinds each.
bool nodeFaultRunsOn(const std::string& launcher, const std::string& kind) {
  const LauncherTraits* traits = launcherTraits(launcher);
  return traits && deliversNodeFault(*traits, kind);
}

// fault.node (a node of stack.nodes; the ranks become the node's) and
// point = "rendezvous". The kind's own checks are validateFaultSpec's and checkLayer's.
void parseNodeFault(Checker& c, const toml::table& t, const Stack& stack, Fault& f) {
  if (auto p = c.str(t, "point", "fault")) {
    if (*p != "rendezvous") c.error(t.get("point")->source(), "fault.point: unknown point '" + *p + "', expected rendezvous (or step, collective, after_s)");
    f.rendezvous = true;
  }
  auto node = c.str(t, "node", "fault");
  if (!node || c.failed()) return;
  const toml::source_region at = t.get("node")->source();
  if (t.get("rank")) {
    c.error(t.get("rank")->source(), "fault.rank: a node fault strikes every rank of fault.node, expected rank or node, not both");
    return;
  }
  const std::string kind = c.str(t, "kind", "fault").value_or("");
  const std::vector<std::string> entries = stack.entries();
  for (const auto& e : entries) {
    const std::string launcher = e.substr(0, e.find('@'));
    if (!nodeFaultRunsOn(launcher, kind)) {
      c.error(at, "fault.node: stack " + e + " cannot deliver the node fault '" + kind +
                      "', expected stacks " + nodeFaultStackList());
      return;
    }
  }
  int k = 0;
  const bool named = node->size() > 1 && (*node)[0] == 'n' && std::all_of(node->begin() + 1, node->end(), ::isdigit);
  if (named) k = std::atoi(node->c_str() + 1);
  if (!named || k < 1 || k > stack.nodes || std::to_string(k) != node->substr(1)) {
    c.error(at, "fault.node: no node '" + *node + "' in a run of " + std::to_string(stack.nodes) + " node(s), expected n1..n" +
                    std::to_string(stack.nodes));
    return;
  }
  f.node = *node;
  const int per_node = stack.world_size / stack.nodes;
  for (int r = (k - 1) * per_node; r < k * per_node; ++r) f.ranks.push_back(r);
}

void parseFault(Checker& c, const toml::table& t, const Stack& stack, Fault& f) {
  c.onlyKeys(t, {"kind", "rank", "node", "step", "collective", "op", "nth", "after_s", "since", "point", "arg", "by", "inject", "attempt"},
             "[fault]");
  parseNodeFault(c, t, stack, f);
  parseInject(c, t, stack, f);
  auto kind = c.str(t, "kind", "fault");
  if (!kind && !c.failed() && f.inject.empty()) {
    c.error(t.source(), "[fault]: missing key 'kind' (or 'inject' for system-call faults)");
  }
  if (!kind && !c.failed()) {
    // rank, step and arg place a `kind` fault; an inject spec carries its own rank.
    for (const char* key : {"rank", "step", "collective", "op", "nth", "after_s", "since", "arg", "by", "attempt"}) {
      if (const toml::node* n = t.get(key)) {
        c.error(n->source(), std::string("fault.") + key + ": applies to fault.kind, which is not set; an inject "
                                                          "spec takes its rank inside, as in \"write:ENOSPC:rank=1\"");
      }
    }
  }
  if (kind) {
    if (!probe::faultKindFromName(*kind) || *kind == "none") {
      std::string list;
      for (auto n : probe::faultKindNames()) {
        if (n != "none") list += (list.empty() ? "" : ", ") + std::string(n);
      }
      c.error(t.get("kind")->source(), "fault.kind: unknown fault kind '" + *kind + "', expected one of: " + list);
    }
    f.kind = probe::faultKindFromName(*kind).value_or(probe::FaultKind::kNone);
  }
  if (const toml::node* rn = t.get("rank")) {
    // rank = R, or rank = [R, ...]: the same fault on each (the root cause is whichever fails first).
    std::vector<const toml::node*> items;
    if (const toml::array* a = rn->as_array()) {
      if (a->empty()) c.error(rn->source(), "fault.rank: an empty array, expected a rank or ranks such as [0, 2] (leave rank out for every rank)");
      for (const auto& e : *a) items.push_back(&e);
    } else {
      items.push_back(rn);
    }
    for (const toml::node* n : items) {
      if (c.failed()) break;
      const auto r = n->as_integer();
      if (!r) {
        c.error(n->source(), "fault.rank: expected a rank or an array of ranks such as [0, 2], got " + Checker::typeName(*n));
        break;
      }
      const int64_t v = r->get();
      if (v < 0 || v >= stack.world_size) {
        c.error(n->source(), "fault.rank: rank " + std::to_string(v) + " is impossible with world_size " +
                                 std::to_string(stack.world_size) + ", expected 0.." + std::to_string(stack.world_size - 1));
        break;
      }
      if (std::find(f.ranks.begin(), f.ranks.end(), static_cast<int>(v)) != f.ranks.end()) {
        c.error(n->source(), "fault.rank: rank " + std::to_string(v) + " is listed twice, expected distinct ranks such as [0, 2]");
        break;
      }
      f.ranks.push_back(static_cast<int>(v));
    }
    std::sort(f.ranks.begin(), f.ranks.end());
  }
  if (auto s = c.integer(t, "step", "fault")) {
    if (*s < 1) c.error(t.get("step")->source(), "fault.step: " + std::to_string(*s) + " is impossible, expected a step >= 1");
    f.step = static_cast<long>(*s);
  }
  if (const toml::node* a = t.get("arg")) {
    if (auto s = a->as_string()) {
      f.arg = s->get();
    } else if (auto i = a->as_integer()) {
      f.arg = std::to_string(i->get());
    } else {
      c.error(a->source(), "fault.arg: expected a string or an integer, got " + Checker::typeName(*a));
    }
  }
  parseFaultPoint(c, t, f);
  if (auto a = c.integer(t, "attempt", "fault")) {
    if (*a < 0 || *a > stack.max_restarts) {
      c.error(t.get("attempt")->source(), "fault.attempt: " + std::to_string(*a) + " is impossible with stack.max_restarts = " +
                                              std::to_string(stack.max_restarts) + ", expected 0.." +
                                              std::to_string(stack.max_restarts) + " (0: the first attempt)");
    }
    f.attempt = static_cast<int>(*a);
  }
  if (!c.failed() && kind) {
    if (auto ok = probe::validateFaultSpec(f, stack.world_size); !ok) c.error(t.source(), "[fault]: " + ok.error());
  }
  if (!c.failed() && kind) chooseFaultLayer(c, t, stack, f);
}

void parseDiagnose(Checker& c, const toml::table& t, Scenario& s) {
  c.onlyKeys(t, {"library_paths"}, "[diagnose]");
  if (auto v = c.strings(t, "library_paths", "diagnose")) {
    for (const std::string& p : *v) {
      if (p.empty()) c.error(t.get("library_paths")->source(), "diagnose.library_paths: an empty path, expected a path prefix");
    }
    s.library_paths = *v;
  }
}

void parseLimits(Checker& c, const toml::table& t, Limits& l) {
  c.onlyKeys(t, {"hang_timeout_s", "deadline_s", "grace_s", "hang_factor", "hang_floor_s", "hang_idle_s"}, "[limits]");
  auto positive = [&](const char* key, double& out) {
    if (auto v = c.number(t, key, "limits")) {
      // TOML has inf and nan; neither is a number of seconds a timer can use.
      if (!(*v > 0) || !std::isfinite(*v)) {
        const std::string shown = std::isnan(*v) ? "nan" : std::isinf(*v) ? (*v > 0 ? "inf" : "-inf") : json(*v).dump();
        c.error(t.get(key)->source(), std::string("limits.") + key + ": " + shown + " is impossible, expected a positive number of seconds");
      }
      out = *v;
    }
  };
  positive("hang_timeout_s", l.hang_timeout_s);
  positive("deadline_s", l.deadline_s);
  positive("grace_s", l.grace_s);
  positive("hang_floor_s", l.hang_floor_s);
  if (auto v = c.number(t, "hang_factor", "limits")) {
    if (!(*v >= 0) || !std::isfinite(*v)) {
      c.error(t.get("hang_factor")->source(), "limits.hang_factor: " + json(*v).dump() +
                                                  " is impossible, expected a number >= 0 (0: adaptive detection off)");
    }
    l.hang_factor = *v;
  }
  if (auto v = c.number(t, "hang_idle_s", "limits")) {
    if (!(*v >= 0) || !std::isfinite(*v)) {
      c.error(t.get("hang_idle_s")->source(), "limits.hang_idle_s: " + json(*v).dump() +
                                                  " is impossible, expected seconds >= 0 (0: the idle rule off)");
    }
    l.hang_idle_s = *v;
  }
}

// The first date/time value in n (nested in arrays and tables too): report.json
// holds none, and toJson() has no form for one.
const toml::node* findDateTime(const toml::node& n) {
  if (n.is_date() || n.is_time() || n.is_date_time()) return &n;
  if (auto a = n.as_array()) {
    for (const auto& e : *a) {
      if (auto d = findDateTime(e)) return d;
    }
  }
  if (auto tt = n.as_table()) {
    for (auto&& kv : *tt) {
      if (auto d = findDateTime(kv.second)) return d;
    }
  }
  return nullptr;
}

void parseExpect(Checker& c, const toml::table& t, std::vector<Expect>& out) {
  for (auto&& [key, node] : t) {
    Expect e;
    e.path = std::string(key.str());
    e.pos = c.pos(key.source());
    // A "~REGEX" that std::regex takes and that has no number too big for it.
    auto regexOk = [&](const std::string& re, const toml::node& at) {
      if (auto why = regexNumberError(re)) {
        c.error(at.source(), "[expect] " + e.path + ": bad regular expression '" + re + "': " + *why);
        return false;
      }
      try {
        std::regex check(re);
      } catch (const std::regex_error& err) {
        c.error(at.source(), "[expect] " + e.path + ": bad regular expression '" + re + "': " + err.what());
        return false;
      }
      return true;
    };
    if (auto problem = reportPathProblem(e.path)) {
      c.error(key.source(), "[expect]: " + *problem);
      return;
    }
    if (const toml::node* d = findDateTime(node)) {
      c.error(d->source(), "[expect] " + e.path + ": a date/time is no report value, expected a string, number, boolean or array");
      return;
    }
    if (const toml::table* m = node.as_table()) {
      if (m->size() != 1) {
        c.error(node.source(), "[expect] " + e.path + ": expected exactly one of { max = N }, { min = N }, { contains = V }, { null = true|false }");
        return;
      }
      const auto first = m->begin();
      const toml::key& mk = first->first;
      const toml::node& mv = first->second;
      const std::string op(mk.str());
      if (op == "max" || op == "min") {
        if (!mv.is_number()) {
          c.error(mv.source(), "[expect] " + e.path + ": { " + op + " = ... } expects a number, got " + Checker::typeName(mv));
          return;
        }
        e.op = op == "max" ? MatchOp::kMax : MatchOp::kMin;
      } else if (op == "contains") {
        e.op = MatchOp::kContains;
        // { contains = "~REGEX" }: an element (or the string) that matches.
        if (auto rs = mv.as_string(); rs && !rs->get().empty() && rs->get()[0] == '~' && !regexOk(rs->get().substr(1), mv)) {
          return;
        }
      } else if (op == "null") {
        if (!mv.is_boolean()) {
          c.error(mv.source(), "[expect] " + e.path + ": { null = ... } expects true or false, got " + Checker::typeName(mv));
          return;
        }
        e.op = MatchOp::kNull;
      } else if (op == "in") {
        // One of several values: a fault on several ranks has either as its root cause.
        const toml::array* a = mv.as_array();
        if (!a || a->empty()) {
          c.error(mv.source(), "[expect] " + e.path + ": { in = ... } expects a non-empty array of values, such as [0, 2], got " +
                                   (a ? std::string("an empty array") : Checker::typeName(mv)));
          return;
        }
        e.op = MatchOp::kIn;
      } else {
        c.error(mk.source(), "[expect] " + e.path + ": unknown matcher '" + op + "', expected max, min, contains, in or null");
        return;
      }
      e.value = toJson(mv);
    } else if (auto s = node.as_string(); s && !s->get().empty() && s->get()[0] == '~') {
      e.op = MatchOp::kRegex;
      e.value = s->get().substr(1);
      if (!regexOk(e.value.get<std::string>(), node)) return;
    } else {
      e.value = toJson(node);
    }
    out.push_back(std::move(e));
  }
  // toml++ tables are ordered by key; reports list expectations in file order.
  std::stable_sort(out.begin(), out.end(), [](const Expect& a, const Expect& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
}

}  // namespace

std::string SourcePos::str() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string Fault::rankList() const { return probe::rankList(ranks); }

json Expect::asWritten() const {
  switch (op) {
    case MatchOp::kRegex: return "~" + value.get<std::string>();
    case MatchOp::kMax: return json{{"max", value}};
    case MatchOp::kMin: return json{{"min", value}};
    case MatchOp::kContains: return json{{"contains", value}};
    case MatchOp::kNull: return json{{"null", value}};
    case MatchOp::kIn: return json{{"in", value}};
    default: return value;
  }
}

bool Scenario::hasTag(const std::string& tag) const { return std::find(tags.begin(), tags.end(), tag) != tags.end(); }

std::vector<Expect> Scenario::expectationsOn(const std::string& stack) const {
  std::vector<Expect> out = expect;
  const auto overlay = [&](const std::string& key) {
    auto on = expect_on.find(key);
    if (on == expect_on.end()) return;
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const Expect& e) {
                               return std::any_of(on->second.begin(), on->second.end(),
                                                  [&](const Expect& o) { return o.path == e.path; });
                             }),
              out.end());
    out.insert(out.end(), on->second.begin(), on->second.end());
  };
  const size_t at = stack.find('@');
  overlay(stack.substr(0, at));
  if (at != std::string::npos) overlay(stack);
  return out;
}

Result<Scenario> parseScenarioText(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return fail(ErrorCode::kBadInput,
                path + ":" + std::to_string(b.line) + ":" + std::to_string(b.column) + ": " +
                    std::string(e.description()),
                path);
  }
  Checker c(path);
  Scenario s;
  s.file = path;
  c.onlyKeys(root, {"name", "description", "tags", "stack", "fault", "limits", "diagnose", "expect", "expect_on"}, "the scenario");
  if (auto v = c.str(root, "name", "scenario")) s.name = *v;
  if (!c.failed() && s.name.empty()) c.error(root.source(), "missing key 'name', expected name = \"...\"");
  if (auto v = c.str(root, "description", "scenario")) s.description = *v;
  if (auto v = c.strings(root, "tags", "scenario")) s.tags = *v;
  if (const toml::table* t = c.table(root, "stack"); t && !c.failed()) parseStack(c, *t, s.stack);
  if (const toml::table* t = c.table(root, "fault"); t && !c.failed()) {
    s.fault.emplace();
    parseFault(c, *t, s.stack, *s.fault);
  }
  if (const toml::table* t = c.table(root, "limits"); t && !c.failed()) parseLimits(c, *t, s.limits);
  if (const toml::table* t = c.table(root, "diagnose"); t && !c.failed()) parseDiagnose(c, *t, s);
  if (const toml::table* t = c.table(root, "expect"); t && !c.failed()) parseExpect(c, *t, s.expect);
  if (!c.failed() && s.expect.empty()) {
    c.error(root.source(), "no [expect] entries: a scenario must say what the report should show");
  }
  if (const toml::table* on = c.table(root, "expect_on"); on && !c.failed()) {
    for (auto&& [key, node] : *on) {
      const std::string name(key.str());  // "torchrun" or "torchrun-multinode@1.13"
      const std::string launcher = name.substr(0, name.find('@'));
      const auto entries = s.stack.entries();
      const bool listed = std::any_of(entries.begin(), entries.end(),
                                      [&](const std::string& e) { return e.substr(0, e.find('@')) == launcher; });
      if (!isStackLauncher(launcher)) {
        c.error(key.source(), "expect_on." + name + ": unknown launcher '" + launcher + "', expected " + stackLauncherList());
      } else if (auto parsed = parseStackName(name); !parsed) {
        c.error(key.source(), "expect_on." + name + ": " + parsed.error().message);
      } else if (!listed) {
        c.error(key.source(), "expect_on." + name + ": " + launcher + " is not in stack.stacks, so these never apply");
      } else if (const toml::table* t = node.as_table()) {
        parseExpect(c, *t, s.expect_on[name]);
      } else {
        c.error(node.source(), "expect_on." + name + ": expected a table of expectations, got " + Checker::typeName(node));
      }
    }
  }
  if (c.failed()) return tl::unexpected(c.err());
  return s;
}

Result<Scenario> parseScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(ErrorCode::kBadInput, path + ": cannot read the scenario file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parseScenarioText(ss.str(), path);
}

Result<Catalog> loadCatalog(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& entry : fs::recursive_directory_iterator(p)) {
        if (entry.is_regular_file() && entry.path().extension() == ".toml") files.push_back(entry.path().string());
      }
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      return fail(ErrorCode::kBadInput, p + ": no such scenario file or directory", p);
    }
  }
  std::sort(files.begin(), files.end());
  Catalog out;
  std::set<std::string> names;
  for (const auto& f : files) {
    auto s = parseScenarioFile(f);
    if (!s) {
      out.bad.push_back({f, s.error()});
    } else if (!names.insert(s->name).second) {
      out.bad.push_back({f, Error{ErrorCode::kBadInput, f + ":1:1: duplicate scenario name '" + s->name + "'", f}});
    } else {
      out.scenarios.push_back(std::move(*s));
    }
  }
  return out;
}

Result<std::vector<Scenario>> loadScenarios(const std::vector<std::string>& paths) {
  auto catalog = loadCatalog(paths);
  if (!catalog) return tl::unexpected(catalog.error());
  if (!catalog->bad.empty()) return tl::unexpected(catalog->bad.front().error);
  return std::move(catalog->scenarios);
}

}  // namespace faultline::scenario
