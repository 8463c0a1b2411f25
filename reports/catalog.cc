// The failure-mode catalog: for each scenario, what each stack did with it.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "reports/render.h"
#include "reports/xml_text.h"

namespace faultline::reports {
namespace {


const Expectation* expectationOn(const Report& r, const std::string& path) {
  for (const auto& e : r.expectations) {
    if (e.what == path) return &e;
  }
  return nullptr;
}

// The rank the launcher blamed: launcher.blamed_rank, else (a report of an
// older faultline) extra.launcher_root_cause_rank.
std::optional<int> blamedRank(const Report& r) {
  if (r.launcher.blamed_rank) return r.launcher.blamed_rank;
  if (r.extra.contains("launcher_root_cause_rank") && r.extra["launcher_root_cause_rank"].is_number_integer()) {
    return r.extra["launcher_root_cause_rank"].get<int>();
  }
  return std::nullopt;
}

// What the stack itself reported, beside faultline: the launcher's own blame.
std::string stackOwnReport(const Report& r) {
  if (r.verdict == Verdict::kUnsupported) return "—";
  std::string exit = r.launcher.signal ? "killed by " + *r.launcher.signal
                     : r.launcher.exit_code ? "exit " + std::to_string(*r.launcher.exit_code)
                                            : "";
  const auto blamed_rank = blamedRank(r);
  if (!blamed_rank && r.launcher.blamed_ranks.size() > 1) {
    // Several ranks named together (srun's "tasks 2-3:"): none singled out.
    const auto& named = r.launcher.blamed_ranks;
    std::string text = exit + (exit.empty() ? "" : ", ") + "named ranks " + rankList(named, ", ") + " together";
    if (r.root_cause && r.root_cause->rank) {
      const bool among = std::find(named.begin(), named.end(), *r.root_cause->rank) != named.end();
      text += among ? " (the right one among them)" : " (**wrong**)";
    }
    return text;
  }
  if (!blamed_rank) {
    if (r.stack.launcher.rfind("builtin", 0) == 0) return "(faultline's own launcher)";
    return exit.empty() ? "no root cause named" : exit + ", no root cause named";
  }
  const int blamed = *blamed_rank;
  std::string text = exit + (exit.empty() ? "" : ", ") + "blamed rank " + std::to_string(blamed);
  if (r.root_cause && r.root_cause->rank) text += blamed == *r.root_cause->rank ? " (right)" : " (**wrong**)";
  return text;
}

std::string rightRank(const Report& r) {
  const Expectation* e = expectationOn(r, "root_cause.rank");
  if (!e) return "n/a";
  return e->ok ? "yes" : "**no**";
}

std::string leftovers(const Report& r) {
  if (r.teardown.survivors.empty() && r.teardown.leaks.empty()) return "none";
  std::string out;
  if (!r.teardown.survivors.empty()) out += std::to_string(r.teardown.survivors.size()) + " survivor(s)";
  if (!r.teardown.leaks.empty()) out += (out.empty() ? "" : ", ") + std::to_string(r.teardown.leaks.size()) + " leak(s)";
  return "**" + out + "**";
}

// Whether the stack's own report blamed the rank faultline found: unset when
// it blamed none or faultline names no rank (nothing to check), and on the
// builtin stack, whose launcher is faultline's own.
std::optional<bool> blamedRight(const Report& r) {
  if (r.stack.launcher.rfind("builtin", 0) == 0) return std::nullopt;
  if (r.launcher.blamed_correctly) return r.launcher.blamed_correctly;
  const auto blamed = blamedRank(r);
  if (!blamed || !r.root_cause || !r.root_cause->rank) return std::nullopt;
  return *blamed == *r.root_cause->rank;
}

// "pass ✓", "fail ✗", "·" (unsupported, why is listed below the matrix): the
// matrix's short form. Unsupported cells are most of a catalog, so they are
// the quietest mark.
std::string matrixCell(const Report& r) {
  if (r.verdict == Verdict::kUnsupported) return "·";
  std::string cell = verdictName(r.verdict);
  if (r.stack.launcher.rfind("builtin", 0) == 0) return cell;
  const auto blamed_rank = blamedRank(r);
  if (const auto right = blamedRight(r)) return cell + (*right ? " ✓" : " ✗");
  if (!blamed_rank) return cell + " –";
  return cell + " (blamed " + std::to_string(*blamed_rank) + ")";
}

// Why the scenario does not apply, without what the list already says: the
// "scenario 'NAME' " each planner reason opens with and the ", not STACK" it
// may end with. So one reason on many scenarios and stacks reads (and
// groups) as one.
std::string unsupportedReason(const std::string& scenario, const std::string& stack, const Report& r) {
  std::string why = r.problems.unsupported_reason.value_or("no reason recorded");
  for (const std::string& name : {scenario, r.scenario ? r.scenario->name : scenario}) {
    const std::string prefix = "scenario '" + name + "' ";
    if (why.rfind(prefix, 0) == 0) {
      why.erase(0, prefix.size());
      break;
    }
  }
  for (const std::string& name : {stack, r.stack.launcher}) {
    const std::string suffix = ", not " + name;
    if (!name.empty() && why.size() > suffix.size() && why.compare(why.size() - suffix.size(), suffix.size(), suffix) == 0) {
      why.erase(why.size() - suffix.size());
      break;
    }
  }
  return why;
}

// "every stack" or the stacks named, in the catalog's column order.
std::string stacksText(const std::set<size_t>& columns, const std::vector<std::pair<std::string, Suite>>& stacks) {
  if (columns.size() == stacks.size()) return "every stack";
  std::string out;
  for (size_t c : columns) out += (out.empty() ? "" : ", ") + stacks[c].first;
  return out;
}

// Each distinct reason once (sorted), with the scenarios it covers grouped by
// the stacks they share: "- REASON: a, b on every stack; c on launch@2.13".
std::string unsupportedList(const std::vector<std::string>& order,
                            const std::map<std::string, std::map<std::string, const SuiteEntry*>>& by,
                            const std::vector<std::pair<std::string, Suite>>& stacks) {
  std::map<std::string, std::map<std::string, std::set<size_t>>> why;  // reason -> scenario -> stack columns
  for (const auto& name : order) {
    for (size_t c = 0; c < stacks.size(); ++c) {
      const auto it = by.at(name).find(stacks[c].first);
      if (it == by.at(name).end() || it->second->report.verdict != Verdict::kUnsupported) continue;
      why[unsupportedReason(name, stacks[c].first, it->second->report)][name].insert(c);
    }
  }
  if (why.empty()) return "";
  std::ostringstream o;
  o << "### Unsupported cells and why\n\n";
  for (const auto& [reason, scenarios] : why) {
    // Scenarios on the same stacks together, in catalog order.
    std::vector<std::pair<std::set<size_t>, std::vector<std::string>>> groups;
    for (const auto& name : order) {
      const auto sc = scenarios.find(name);
      if (sc == scenarios.end()) continue;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == sc->second; });
      if (g == groups.end()) groups.push_back({sc->second, {name}});
      else g->second.push_back(name);
    }
    o << "- " << markdownCell(reason) << ":";
    for (size_t i = 0; i < groups.size(); ++i) {
      std::string names;
      for (const auto& n : groups[i].second) names += (names.empty() ? "" : ", ") + markdownCell(n);
      o << (i ? "; " : " ") << names << " on " << stacksText(groups[i].first, stacks);
    }
    o << "\n";
  }
  return o.str() + "\n";
}

}  // namespace

std::string failureModeCatalog(const std::vector<std::pair<std::string, Suite>>& stacks, const std::string& generated_by,
                               const std::vector<std::pair<std::string, std::string>>& missing) {
  // scenario -> stack -> entry, in first-seen scenario order.
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, const SuiteEntry*>> by;
  std::map<std::string, std::string> description;
  for (const auto& [stack, suite] : stacks) {
    for (const auto& e : suite.entries) {
      if (!by.count(e.name)) order.push_back(e.name);
      by[e.name][stack] = &e;
    }
  }
  std::ostringstream o;
  o << "# Failure-mode catalog\n\n"
    << "What each stack does when a fault strikes, from one run of the conformance\n"
    << "catalog (`scenarios/`) per stack. Generated by `" << generated_by << "`; do not edit by hand.\n\n"
    << "Columns: *detected* is faultline's verdict on the scenario's expectations and the\n"
    << "cause it names; *stack's own report* is what the launcher itself said (torchrun's\n"
    << "\"Root Cause\" block names a rank: right or wrong against faultline's diagnosis);\n"
    << "*right rank* is the scenario's `root_cause.rank` expectation; *teardown* is the time\n"
    << "from the first failure to every process gone; *leftovers* are processes or\n"
    << "resources still there afterwards.\n\n";
  if (!missing.empty()) {
    o << "**Not in this catalog** (the machine that generated it lacked them):\n\n";
    for (const auto& [stack, why] : missing) o << "- " << markdownCell(stack) << ": " << markdownCell(why) << "\n";
    o << "\n";
  }
  // The matrix first: one column per stack and torch version.
  o << "| scenario |";
  for (const auto& [stack, suite] : stacks) o << " " << stack << " |";
  o << "\n|---|";
  for (size_t i = 0; i < stacks.size(); ++i) o << "---|";
  o << "\n";
  for (const auto& name : order) {
    o << "| " << markdownCell(name) << " |";
    for (const auto& [stack, suite] : stacks) {
      auto it = by[name].find(stack);
      o << " " << (it == by[name].end() ? "—" : matrixCell(it->second->report)) << " |";
    }
    o << "\n";
  }
  o << "\nA cell is faultline's verdict, then what the stack itself blamed (✓ the right rank,\n"
    << "✗ another one, – none named); · the scenario does not apply to the stack (why: below).\n"
    << "The rows below say more.\n\n";
  o << unsupportedList(order, by, stacks);
  o << "| scenario | stack | verdict | detected | stack's own report | right rank | teardown | leftovers |\n"
    << "|---|---|---|---|---|---|---|---|\n";
  for (const auto& name : order) {
    for (const auto& [stack, suite] : stacks) {
      auto it = by[name].find(stack);
      if (it == by[name].end()) continue;
      const Report& r = it->second->report;
      o << "| " << markdownCell(name) << " | " << stack << " | " << verdictName(r.verdict) << " | " << markdownCell(headline(r)) << " | "
        << markdownCell(stackOwnReport(r)) << " | " << rightRank(r) << " | " << r.teardown.duration_ms << " ms"
        << (r.teardown.clean ? "" : " (not clean)") << " | " << leftovers(r) << " |\n";
    }
  }
  // Totals per stack.
  // Totals per stack; "own report right" counts the cells marked ✓ or ✗ above.
  o << "\n| stack | scenarios | pass | fail | unsupported | other | own report right | wall |\n"
    << "|---|---|---|---|---|---|---|---|\n";
  for (const auto& [stack, suite] : stacks) {
    std::map<Verdict, int> n;
    int own_right = 0, own_checked = 0;
    for (const auto& e : suite.entries) {
      ++n[e.report.verdict];
      if (e.report.verdict == Verdict::kUnsupported) continue;  // the matrix marks no blame there
      if (const auto right = blamedRight(e.report)) {
        ++own_checked;
        own_right += *right;
      }
    }
    const int other = static_cast<int>(suite.entries.size()) - n[Verdict::kPass] - n[Verdict::kFail] - n[Verdict::kUnsupported];
    o << "| " << stack << " | " << suite.entries.size() << " | " << n[Verdict::kPass] << " | " << n[Verdict::kFail]
      << " | " << n[Verdict::kUnsupported] << " | " << other << " | "
      << (own_checked ? std::to_string(own_right) + "/" + std::to_string(own_checked) : std::string("–")) << " | "
      << suite.wall_ms / 1000 << " s |\n";
  }
  return o.str();
}

}  // namespace faultline::reports
