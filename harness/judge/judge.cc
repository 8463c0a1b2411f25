// Expectation matching over report.json.
#include "harness/judge/judge.h"

#include <regex>
#include <sstream>

namespace faultline::judge {
namespace {

using nlohmann::json;

// Numbers compare by value (1 == 1.0); everything else structurally.
bool sameValue(const json& a, const json& b) {
  if (a.is_number() && b.is_number()) return a.get<double>() == b.get<double>();
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!sameValue(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

json step(const json& node, const std::string& name, std::optional<size_t> index) {
  if (node.is_array()) {
    json out = json::array();
    for (const auto& e : node) {
      json v = step(e, name, index);
      if (v.is_array() && !index) {
        for (auto& x : v) out.push_back(x);  // flatten one level: findings.ranks -> every finding's ranks
      } else if (!v.is_null()) {
        out.push_back(v);
      }
    }
    return out;
  }
  if (!node.is_object() || !node.contains(name)) return nullptr;
  const json& v = node[name];
  if (!index) return v;
  if (!v.is_array() || *index >= v.size()) return nullptr;
  return v[*index];
}

Expectation unresolved(Expectation e, std::string reason) {
  e.ok = false;
  e.status = ExpectationStatus::kUnresolved;
  e.reason = std::move(reason);
  return e;
}

}  // namespace

json resolvePath(const json& report, const std::string& path) {
  json node = report;
  std::stringstream ss(path);
  std::string seg;
  while (std::getline(ss, seg, '.')) {
    std::optional<size_t> index;
    std::optional<std::string> kind;  // findings[KIND]
    std::string name = seg;
    if (auto b = seg.find('['); b != std::string::npos) {
      const std::string inside = seg.substr(b + 1, seg.size() - b - 2);
      if (!inside.empty() && inside.find_first_not_of("0123456789") == std::string::npos) {
        index = std::stoul(inside);
      } else {
        kind = inside;
      }
      name = seg.substr(0, b);
    }
    node = step(node, name, index);
    if (kind) {
      // Only the findings of that kind; none of it is an absent value, not an
      // empty list, so no matcher but { null = true } holds on a finding that is not there.
      if (!node.is_array()) return nullptr;
      json picked = json::array();
      for (const auto& x : node) {
        if (x.is_object() && x.value("kind", std::string()) == *kind) picked.push_back(x);
      }
      node = picked.empty() ? json(nullptr) : picked;
    }
    if (node.is_null()) return nullptr;
  }
  return node;
}

Expectation judgeOne(const scenario::Expect& expect, const json& report) {
  Expectation e;
  e.what = expect.path;
  e.expected = expect.asWritten();
  e.actual = resolvePath(report, expect.path);
  const json& actual = e.actual;
  switch (expect.op) {
    case scenario::MatchOp::kEquals:
      e.ok = sameValue(actual, expect.value);
      break;
    case scenario::MatchOp::kRegex:
      if (actual.is_null()) {
        e.ok = false;
      } else if (!actual.is_string()) {
        return unresolved(e, "a regular expression needs a string, the report has " + std::string(actual.type_name()));
      } else {
        e.ok = std::regex_search(actual.get<std::string>(), std::regex(expect.value.get<std::string>()));
      }
      break;
    case scenario::MatchOp::kMax:
    case scenario::MatchOp::kMin:
      if (actual.is_null()) {
        e.ok = false;
      } else if (!actual.is_number()) {
        return unresolved(e, "a numeric bound needs a number, the report has " + std::string(actual.type_name()));
      } else {
        const double a = actual.get<double>(), bound = expect.value.get<double>();
        e.ok = expect.op == scenario::MatchOp::kMax ? a <= bound : a >= bound;
      }
      break;
    case scenario::MatchOp::kContains: {
      // { contains = "~REGEX" }: a string element (or the string) that matches.
      const bool re = expect.value.is_string() && expect.value.get<std::string>().rfind('~', 0) == 0;
      const auto matches = [&](const json& x) {
        if (!re) return sameValue(x, expect.value);
        return x.is_string() && std::regex_search(x.get<std::string>(), std::regex(expect.value.get<std::string>().substr(1)));
      };
      if (actual.is_null()) {
        e.ok = false;
      } else if (actual.is_string() && expect.value.is_string()) {
        e.ok = re ? matches(actual) : actual.get<std::string>().find(expect.value.get<std::string>()) != std::string::npos;
      } else if (!actual.is_array()) {
        return unresolved(e, "{ contains } needs an array or a string, the report has " + std::string(actual.type_name()));
      } else {
        e.ok = false;
        for (const auto& x : actual) e.ok = e.ok || matches(x);
      }
      break;
    }
    case scenario::MatchOp::kNull:
      e.ok = actual.is_null() == expect.value.get<bool>();
      break;
    case scenario::MatchOp::kIn:
      e.ok = false;
      if (!actual.is_null()) {
        for (const auto& x : expect.value) e.ok = e.ok || sameValue(actual, x);
      }
      break;
  }
  e.status = e.ok ? ExpectationStatus::kPass : ExpectationStatus::kFail;
  // Findings the diagnosis could not look for (a shim patch did not apply on
  // some rank) are unknown: only a finding that was found is certain.
  const auto unchecked = report.find("unchecked_findings");
  if (expect.path.rfind("findings", 0) == 0 && unchecked != report.end() && unchecked->is_array() &&
      !unchecked->empty() && !(e.ok && expect.op == scenario::MatchOp::kContains)) {
    std::string why;
    for (const auto& u : *unchecked) {
      why += (why.empty() ? "" : "; ") + u.value("kind", std::string("?")) + " not checked (" +
             u.value("reason", std::string()) + ")";
    }
    return unresolved(e, why);
  }
  return e;
}

std::vector<Expectation> judgeAll(const std::vector<scenario::Expect>& expects, const json& report) {
  std::vector<Expectation> out;
  for (const auto& x : expects) {
    try {
      out.push_back(judgeOne(x, report));
    } catch (const std::exception& err) {
      // A checker that crashes is unknown, with its reason, never a pass.
      Expectation e;
      e.what = x.path;
      e.expected = x.asWritten();
      out.push_back(unresolved(e, std::string("could not evaluate: ") + err.what()));
    }
  }
  return out;
}

Verdict verdictOf(const std::vector<Expectation>& judged) {
  if (judged.empty()) return Verdict::kUnresolved;  // nothing checked is never a pass
  bool any_fail = false;
  for (const auto& e : judged) {
    if (e.status == ExpectationStatus::kUnresolved) return Verdict::kUnresolved;
    any_fail = any_fail || !e.ok;
  }
  return any_fail ? Verdict::kFail : Verdict::kPass;
}

Verdict scenarioVerdict(const std::vector<Expectation>& judged, const Report& report) {
  if (report.problems.diagnose_error) return Verdict::kUnresolved;
  return verdictOf(judged);
}

}  // namespace faultline::judge
