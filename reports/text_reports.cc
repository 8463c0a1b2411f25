// JUnit XML and Markdown renderings of a run and of a suite.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "reports/finding_fixes.h"
#include "reports/render.h"
#include "reports/xml_text.h"

namespace faultline::reports {
namespace {

std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string baseOf(const std::string& path) {
  const size_t s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

}  // namespace

std::vector<std::string> harnessNotes(const Report& r) {
  std::vector<std::string> out;
  const auto notes = r.extra.find("harness_notes");
  if (notes == r.extra.end() || !notes->is_array()) return out;
  for (const auto& n : *notes) {
    if (n.is_string()) out.push_back(n.get<std::string>());
  }
  return out;
}

std::vector<std::string> blameLines(const RootCause& rc) {
  std::vector<std::string> out;
  switch (rc.blame) {
    case Blame::kAmbiguous:
      out.push_back("blame: ambiguous, one of ranks " + rankList(rc.ranks) +
                    " (no majority, and no evidence for one side)");
      break;
    case Blame::kAllRanks:
      out.push_back("blame: no primary rank, every rank failed the same way (ranks " + rankList(rc.ranks) + ")");
      break;
    case Blame::kRanks:
      out.push_back("blame: ranks " + rankList(rc.ranks) + " together");
      break;
    case Blame::kNode:
      out.push_back("blame: node " + rc.node.value_or("?") +
                    (rc.ranks.empty() ? " (no rank of it started)" : " (its ranks " + rankList(rc.ranks) + ")"));
      break;
    case Blame::kRank:
    case Blame::kNone:
      break;
  }
  for (const CollectiveSide& s : rc.sides) {
    std::string line = (s.ranks.size() == 1 ? "rank " : "ranks ") + rankList(s.ranks) + ": ";
    line += s.op.empty() ? "no call" : s.op + (s.numel ? " of " + std::to_string(*s.numel) + " elements" : "");
    if (!s.site.empty()) line += " at " + baseOf(s.site);
    for (const std::string& c : s.callers) line += ", from " + baseOf(c);
    if (!s.rank_condition.empty()) line += ", under `" + baseOf(s.rank_condition) + "`";
    out.push_back(line);
  }
  return out;
}

namespace {

// The onion and the stderr tails: what a CI log reader needs beside the failure line.
std::string systemOut(const Report& r) {
  std::ostringstream o;
  if (r.root_cause) {
    o << "root cause: " << r.root_cause->summary << "\n";
    for (const auto& l : blameLines(*r.root_cause)) o << "  " << l << "\n";
    for (const auto& l : r.root_cause->layers) o << "  [" << l.layer << "] " << l.text << "\n";
  }
  for (const auto& f : r.findings) o << "finding " << kindName(f.kind) << ": " << f.summary << "\n";
  for (const auto& k : r.ranks) {
    o << "--- rank " << k.rank << " (" << roleName(k.role) << "): " << k.diagnosis << "\n";
    if (!k.stderr_tail.empty()) {
      const std::string& t = k.stderr_tail;
      o << utf8Tail(t, 4096) << "\n";
    }
  }
  return o.str();
}

void junitCases(std::ostringstream& o, const Report& r, const std::string& classname) {
  const std::string seconds = std::to_string(static_cast<double>(r.harness.wall_ms) / 1000.0);
  const std::string out = "      <system-out>" + escapeXml(systemOut(r)) + "</system-out>\n";
  const JunitElement element = verdictInfo(r.verdict).junit;
  if (r.expectations.empty()) {
    // An exec run (or a scenario that did not run): one case, as the verdict table says.
    o << "    <testcase classname=\"" << escapeXml(classname) << "\" name=\"run\" time=\"" << seconds << "\">\n";
    if (element == JunitElement::kError) {
      // Nothing could be judged (harness failure, bad input, a crashed diagnosis): an error, as lit's UNRESOLVED.
      o << "      <error message=\"" << escapeXml(headline(r)) << "\"/>\n";
    } else if (element == JunitElement::kSkipped) {
      // A scenario that could not run on this stack: a skip, with the reason, never red.
      o << "      <skipped message=\"" << escapeXml(headline(r)) << "\"/>\n";
    } else if (element == JunitElement::kFailure) {
      o << "      <failure message=\"" << escapeXml(headline(r)) << "\" type=\"" << verdictName(r.verdict) << "\"/>\n";
    }
    o << out << "    </testcase>\n";
    return;
  }
  for (const auto& e : r.expectations) {
    o << "    <testcase classname=\"" << escapeXml(classname) << "\" name=\"" << escapeXml(e.what) << "\" time=\"0\">\n";
    if (element == JunitElement::kSkipped) {
      o << "      <skipped message=\"" << escapeXml(headline(r)) << "\"/>\n";
    } else if (e.status == ExpectationStatus::kUnresolved) {
      o << "      <error message=\"unresolved: " << escapeXml(e.reason) << "\"/>\n";
    } else if (e.ok && verdictIsFailure(r.verdict) && r.verdict != Verdict::kFail) {
      // The expectation held on a report nobody finished (diagnosis failed,
      // run interrupted, harness error): that is no pass.
      o << "      <error message=\"" << verdictName(r.verdict) << ": " << escapeXml(headline(r)) << "\"/>\n";
    } else if (!e.ok) {
      o << "      <failure message=\"" << escapeXml(headline(r)) << "\" type=\"expectation\">"
        << escapeXml("expected " + e.what + " = " + jsonText(e.expected) + ", actual " + jsonText(e.actual))
        << "</failure>\n";
    }
    o << out << "    </testcase>\n";
  }
}

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
};

Counts countCases(const Report& r) {
  Counts c;
  const JunitElement element = verdictInfo(r.verdict).junit;
  if (r.expectations.empty()) {
    c.tests = 1;
    c.skipped = element == JunitElement::kSkipped;
    c.errors = element == JunitElement::kError;
    c.failures = element == JunitElement::kFailure;
    return c;
  }
  for (const auto& e : r.expectations) {
    ++c.tests;
    if (element == JunitElement::kSkipped) {
      ++c.skipped;
    } else if (e.status == ExpectationStatus::kUnresolved || (e.ok && verdictIsFailure(r.verdict) && r.verdict != Verdict::kFail)) {
      ++c.errors;
    } else if (!e.ok) {
      ++c.failures;
    }
  }
  return c;
}

std::string suiteName(const Report& r) { return r.scenario ? r.scenario->name : "faultline exec"; }

void junitSuite(std::ostringstream& o, const Report& r, const std::string& name, const std::string& classname) {
  const Counts c = countCases(r);
  o << "  <testsuite name=\"" << escapeXml(name) << "\" tests=\"" << c.tests << "\" failures=\"" << c.failures
    << "\" errors=\"" << c.errors << "\" skipped=\"" << c.skipped << "\" time=\""
    << static_cast<double>(r.harness.wall_ms) / 1000.0 << "\">\n";
  junitCases(o, r, classname);
  o << "  </testsuite>\n";
}


// Untrusted text in a fenced block: a fence inside it cannot close ours, and
// what no Markdown reader should get (controls, invalid UTF-8) is stripped;
// CR LF and lone CRs (progress bars) become line breaks.
std::string mdFence(const std::string& raw) {
  std::string s;
  const std::string clean = stripForbidden(raw);
  for (size_t i = 0; i < clean.size(); ++i) {
    if (clean[i] != '\r') {
      s.push_back(clean[i]);
    } else if (i + 1 >= clean.size() || clean[i + 1] != '\n') {
      s.push_back('\n');
    }
  }
  std::string fence = "```";
  while (s.find(fence) != std::string::npos) fence += "`";
  return fence + "text\n" + s + (s.empty() || s.back() == '\n' ? "" : "\n") + fence + "\n";
}

}  // namespace

std::string jsonText(const nlohmann::json& v) { return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string headline(const Report& r) {
  // extra is free-form in a report.json: a field of another type is skipped, never thrown on.
  if (r.verdict == Verdict::kUnsupported && r.problems.unsupported_reason) {
    return "unsupported: " + *r.problems.unsupported_reason;
  }
  if (r.problems.fault_not_struck && (r.verdict == Verdict::kError || r.verdict == Verdict::kUnresolved)) {
    return "fault not struck: " + *r.problems.fault_not_struck;
  }
  if (r.verdict == Verdict::kError && r.problems.harness_error) {
    return "harness error: " + *r.problems.harness_error;
  }
  if (r.verdict == Verdict::kUnresolved && r.problems.bad_input) {
    return "unresolved: " + *r.problems.bad_input;
  }
  if (r.root_cause) return firstLine(r.root_cause->summary);
  if (!r.findings.empty()) return kindName(r.findings[0].kind) + ": " + firstLine(r.findings[0].summary);
  return verdictName(r.verdict);
}

std::string junitForRun(const Report& r) {
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n";
  junitSuite(o, r, suiteName(r), "faultline." + r.stack.launcher);
  o << "</testsuites>\n";
  return o.str();
}

std::string junitForSuite(const Suite& s) {
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"faultline\" time=\""
    << static_cast<double>(s.wall_ms) / 1000.0 << "\">\n";
  for (const auto& e : s.entries) junitSuite(o, e.report, e.name + " [" + e.stack + "]", "faultline." + e.stack);
  o << "</testsuites>\n";
  return o.str();
}

std::string markdownForRun(const Report& r) {
  std::ostringstream o;
  o << "## faultline: " << markdownCell(suiteName(r)) << " — " << verdictName(r.verdict) << "\n\n";
  o << "**" << markdownCell(headline(r)) << "**\n\n";
  if (r.root_cause) {
    o << "| layer | what it says |\n|---|---|\n";
    for (const auto& l : r.root_cause->layers) o << "| " << markdownCell(l.layer) << " | " << markdownCell(l.text) << " |\n";
    o << "\n";
    const auto blame = blameLines(*r.root_cause);
    for (const auto& l : blame) o << "- " << markdownCell(l) << "\n";
    if (!blame.empty()) o << "\n";
  }
  if (!r.findings.empty()) {
    o << "### Findings\n\n| kind | ranks | severity | summary | evidence | fix |\n|---|---|---|---|---|---|\n";
    for (const auto& f : r.findings) {
      o << "| " << kindName(f.kind) << " | " << rankList(f.ranks) << " | " << markdownCell(f.severity) << " | "
        << markdownCell(f.summary) << " | " << markdownCell(f.evidence) << " | "
        << markdownCell(std::string(findingFix(f))) << " |\n";
    }
    o << "\n";
  }
  if (!r.faults.empty()) {
    o << "### Faults asked for\n\n| fault | point | ranks | by | struck |\n|---|---|---|---|---|\n";
    for (const auto& f : r.faults) {
      o << "| " << markdownCell(f.fault.rule) << " | " << markdownCell(f.fault.point) << " | "
        << (f.fault.node.empty() ? (f.fault.ranks.empty() ? std::string("all") : rankList(f.fault.ranks))
                                 : "node " + markdownCell(f.fault.node))
        << " | " << markdownCell(f.fault.by) << " | "
        << (f.struck ? "yes" + (f.struck_ranks.empty() ? std::string() : " (ranks " + rankList(f.struck_ranks) + ")")
                     : "**no**: " + markdownCell(f.reason))
        << " |\n";
    }
    o << "\n";
  }
  // What the shim could not observe: failed patches, findings not checked
  // (docs/BLACKBOX.md, "Patch status"). Free-form extra: wrong types are skipped.
  std::ostringstream unseen;
  const auto unchecked = r.extra.find("unchecked_findings");
  if (unchecked != r.extra.end() && unchecked->is_array()) {
    for (const auto& u : *unchecked) {
      if (!u.is_object() || !u.contains("kind") || !u["kind"].is_string()) continue;
      const std::string reason = u.contains("reason") && u["reason"].is_string() ? u["reason"].get<std::string>() : "";
      unseen << "| finding " << markdownCell(u["kind"].get<std::string>()) << " | not checked | " << markdownCell(reason)
             << " |\n";
    }
  }
  const auto instruments = r.extra.find("instruments");
  if (instruments != r.extra.end() && instruments->is_object() && instruments->contains("ranks") &&
      (*instruments)["ranks"].is_object()) {
    for (const auto& [rank, inst] : (*instruments)["ranks"].items()) {
      if (!inst.is_object() || !inst.contains("failed") || !inst["failed"].is_object()) continue;
      for (const auto& [patch, error] : inst["failed"].items()) {
        unseen << "| rank " << markdownCell(rank) << " | patch " << markdownCell(patch) << " failed | "
               << markdownCell(error.is_string() ? error.get<std::string>() : "") << " |\n";
      }
    }
  }
  for (const std::string& n : harnessNotes(r)) unseen << "| harness | note | " << markdownCell(n) << " |\n";
  if (!unseen.str().empty()) {
    o << "### Not observed\n\n| where | what | why |\n|---|---|---|\n" << unseen.str() << "\n";
  }
  if (!r.expectations.empty()) {
    o << "### Expectations\n\n| | expectation | expected | actual |\n|---|---|---|---|\n";
    for (const auto& e : r.expectations) {
      o << "| " << (e.ok ? "✅" : e.status == ExpectationStatus::kUnresolved ? "❓" : "❌") << " | " << markdownCell(e.what) << " | "
        << markdownCell(jsonText(e.expected)) << " | " << markdownCell(jsonText(e.actual)) << " |\n";
    }
    o << "\n";
  }
  if (r.nodes.empty()) {
    o << "### Ranks\n\n| rank | role | exit | diagnosis |\n|---|---|---|---|\n";
    for (const auto& k : r.ranks) {
      const std::string exit = k.signal ? *k.signal : k.exit_code ? std::to_string(*k.exit_code) : "?";
      o << "| " << k.rank << " | " << roleName(k.role) << " | " << markdownCell(exit) << " | " << markdownCell(k.diagnosis) << " |\n";
    }
  } else {
    // Multi-node: the nodes, then the ranks of each node together.
    o << "### Nodes\n\n| node | host | ranks | lost | agent exit |\n|---|---|---|---|---|\n";
    for (const auto& nd : r.nodes) {
      o << "| " << markdownCell(nd.name) << " | " << markdownCell(nd.host) << " | " << rankList(nd.ranks) << " | "
        << (nd.lost ? "**lost**" : "") << " | "
        << (nd.agent_exit_code ? std::to_string(*nd.agent_exit_code) : std::string("none (agent gone)")) << " |\n";
    }
    o << "\n### Ranks by node\n\n| node | rank | role | exit | diagnosis |\n|---|---|---|---|---|\n";
    std::vector<const RankReport*> sorted;
    for (const auto& k : r.ranks) sorted.push_back(&k);
    std::map<std::string, size_t> order;
    for (const auto& nd : r.nodes) order.emplace(nd.name, order.size());
    auto pos = [&](const RankReport* k) { return k->node && order.count(*k->node) ? order[*k->node] : order.size(); };
    std::stable_sort(sorted.begin(), sorted.end(), [&](const RankReport* a, const RankReport* b) { return pos(a) < pos(b); });
    for (const RankReport* k : sorted) {
      const std::string exit = k->signal ? *k->signal : k->exit_code ? std::to_string(*k->exit_code) : "?";
      o << "| " << markdownCell(k->node.value_or("?")) << " | " << k->rank << " | " << roleName(k->role) << " | "
        << markdownCell(exit) << " | " << markdownCell(k->diagnosis) << " |\n";
    }
  }
  if (r.recovery) {
    // A launcher that restarts: whether the job came back, then each attempt.
    o << "\n### Recovery\n\n" << markdownCell(r.recovery->summary) << "\n\n| attempt | start | end | last step | ended |\n|---|---|---|---|---|\n";
    for (const auto& a : r.attempts) {
      o << "| " << a.attempt << " | " << a.start_ms << " ms | " << (a.end_ms ? std::to_string(*a.end_ms) + " ms" : "?") << " | "
        << (a.last_step >= 0 ? std::to_string(a.last_step) : "-") << " | " << markdownCell(a.ended) << " |\n";
    }
  }
  o << "\nTeardown: " << (r.teardown.clean ? "clean" : "NOT clean") << ", " << r.teardown.duration_ms << " ms, escalation "
    << escalationName(r.teardown.escalation);
  if (!r.teardown.survivors.empty()) o << ", " << r.teardown.survivors.size() << " survivor(s)";
  if (!r.teardown.leaks.empty()) o << ", leaks: " << markdownCell(r.teardown.leaks.front());
  o << "\n";
  // Collateral collapsed: a reader opens it only when the first line is not enough.
  bool any_tail = false;
  for (const auto& k : r.ranks) any_tail = any_tail || !k.stderr_tail.empty();
  if (any_tail) {
    o << "\n<details><summary>stderr tails</summary>\n\n";
    for (const auto& k : r.ranks) {
      if (k.stderr_tail.empty()) continue;
      const std::string tail = utf8Tail(k.stderr_tail, 2000);
      o << "rank " << k.rank << " (" << roleName(k.role) << ")\n\n" << mdFence(tail) << "\n";
    }
    o << "</details>\n";
  }
  return o.str();
}

std::string markdownForSuite(const Suite& s) {
  std::map<std::string, int> counts;
  for (const auto& e : s.entries) ++counts[verdictName(e.report.verdict)];
  std::ostringstream o;
  o << "## faultline suite\n\n";
  for (const auto& [v, n] : counts) o << "- " << v << ": " << n << "\n";
  char wall[32];
  std::snprintf(wall, sizeof wall, "%.1f", static_cast<double>(s.wall_ms) / 1000.0);
  o << "- wall time: " << wall << " s\n\n";
  o << "| scenario | stack | verdict | root cause | teardown |\n|---|---|---|---|---|\n";
  for (const auto& e : s.entries) {
    o << "| [" << markdownCell(e.name) << "](" << urlPath(e.run_dir) << "/report.md) | " << markdownCell(e.stack) << " | "
      << verdictName(e.report.verdict) << " | " << markdownCell(headline(e.report)) << " | " << e.report.teardown.duration_ms
      << " ms" << (e.report.teardown.clean ? "" : " (not clean)") << " |\n";
  }
  return o.str();
}

nlohmann::json suiteJson(const Suite& s) {
  nlohmann::json entries = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& e : s.entries) {
    ++counts[verdictName(e.report.verdict)];
    int passed = 0, failed = 0;
    for (const auto& x : e.report.expectations) (x.ok ? passed : failed)++;
    entries.push_back({{"name", e.name},
                       {"stack", e.stack},
                       {"run_dir", e.run_dir},
                       {"verdict", verdictName(e.report.verdict)},
                       {"headline", headline(e.report)},
                       {"root_cause_kind", e.report.root_cause ? nlohmann::json(kindName(e.report.root_cause->kind)) : nlohmann::json(nullptr)},
                       {"root_cause_rank", e.report.root_cause && e.report.root_cause->rank ? nlohmann::json(*e.report.root_cause->rank) : nlohmann::json(nullptr)},
                       {"expectations_passed", passed},
                       {"expectations_failed", failed},
                       {"teardown_clean", e.report.teardown.clean},
                       {"teardown_ms", e.report.teardown.duration_ms},
                       {"wall_ms", e.report.harness.wall_ms},
                       {"tags", e.tags}});
  }
  return {{"schema", "faultline.suite/1"}, {"scenarios", entries}, {"counts", counts}, {"wall_ms", s.wall_ms}};
}

}  // namespace faultline::reports
