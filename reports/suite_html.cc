// The suite's index.html: the scenario x stack matrix, read at a glance. Each
// cell is a verdict mark and at most one short line; an unsupported cell says
// why only on hover. A totals row per stack, and filters by stack and by tag
// made of radio buttons and CSS alone: the page's CSP runs no script.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "reports/html_page.h"
#include "reports/render.h"
#include "reports/xml_text.h"

namespace faultline::reports {
namespace {

// A cell's line is read, not studied: the rest is one click (or hover) away.
constexpr size_t kCellLineChars = 80;
// A hover text long enough for any reason, short enough for a tooltip.
constexpr size_t kHoverChars = 600;

const char* kSuiteStyle = R"(.filter{position:absolute;opacity:0;pointer-events:none}
.filters{margin:8px 0;font-size:13px}.filters label{display:inline-block;border:1px solid #d0d7de;border-radius:4px;
padding:0 8px;margin:2px 4px 2px 0;cursor:pointer}
#matrix td.cell{max-width:280px}.cell .line{font-size:12px;color:#57606a}.none{color:#8c959f}
.verdict.blank{background:none;color:#8c959f;font-weight:400}
sup.own{font-size:10px;margin-left:3px}sup.own-right{color:#1a7f37}sup.own-wrong{color:#cf222e}sup.own-unknown{color:#8c959f}
#matrix tr.totals td{font-size:12px;background:#f6f8fa}
)";

std::string e(const std::string& s) { return escapeXml(s); }

// The matrix's axes: scenarios and stacks in first-seen order, tags sorted.
// Stacks and tags are known to the page by their index (c0, t0), never by
// their name, so no name can reach a class, an id or the stylesheet.
struct Matrix {
  std::vector<std::string> scenarios, stacks, tags;
  std::map<std::pair<std::string, std::string>, const SuiteEntry*> cells;  // (scenario, stack)
  std::map<std::string, std::set<size_t>> row_tags;                         // scenario -> tag indexes
};

Matrix matrixOf(const Suite& s) {
  Matrix m;
  std::set<std::string> tags;
  for (const auto& x : s.entries) {
    if (std::find(m.scenarios.begin(), m.scenarios.end(), x.name) == m.scenarios.end()) m.scenarios.push_back(x.name);
    if (std::find(m.stacks.begin(), m.stacks.end(), x.stack) == m.stacks.end()) m.stacks.push_back(x.stack);
    m.cells[{x.name, x.stack}] = &x;
    tags.insert(x.tags.begin(), x.tags.end());
  }
  m.tags.assign(tags.begin(), tags.end());
  for (const auto& x : s.entries) {
    for (const auto& t : x.tags) {
      m.row_tags[x.name].insert(std::lower_bound(m.tags.begin(), m.tags.end(), t) - m.tags.begin());
    }
  }
  return m;
}

std::string stackLabel(const std::string& stack) { return stack.empty() ? "(own)" : stack; }

const char* verdictMark(Verdict v) {
  switch (v) {
    case Verdict::kPass: return "\u2713";
    case Verdict::kFail: return "\u2717";
    case Verdict::kError: return "!";
    case Verdict::kUnsupported: return "\u2013";
    default: return "\u2026";
  }
}

const Expectation* firstFailedExpectation(const Report& r) {
  for (const auto& x : r.expectations) {
    if (x.status == ExpectationStatus::kFail) return &x;
  }
  return nullptr;
}

// What a reader needs before clicking: for a fail what differs from the
// expectation, else the headline. An unsupported cell has none (its reason is
// the same on many cells and would bury the verdicts).
std::string cellText(const Report& r) {
  if (r.verdict == Verdict::kUnsupported) return "";
  if (r.verdict == Verdict::kFail) {
    if (const Expectation* x = firstFailedExpectation(r)) {
      return x->what + ": expected " + jsonText(x->expected) + ", got " + jsonText(x->actual);
    }
  }
  return headline(r);
}

// What the stack itself said about the run: its launcher's exit and whom it blamed.
std::string stackOwnVerdict(const Report& r) {
  const auto& l = r.launcher;
  if (!l.exit_code && !l.signal) return "";
  std::string t = "launcher: " + (l.signal ? *l.signal : "exit " + std::to_string(*l.exit_code));
  if (l.blamed_rank) {
    t += ", blamed rank " + std::to_string(*l.blamed_rank);
    if (l.blamed_correctly) t += *l.blamed_correctly ? " (right)" : " (wrong)";
  } else if (l.blamed_ranks.size() > 1) {
    t += ", named ranks " + rankList(l.blamed_ranks, ", ") + " together (none singled out)";
  }
  return t;
}

// The stack's own report as a superscript: right, wrong, a rank faultline
// cannot check (?), or none named (–); the sentence is its hover text.
std::string ownMarker(const Report& r) {
  const std::string said = stackOwnVerdict(r);
  if (said.empty()) return "";
  const auto& right = r.launcher.blamed_correctly;
  const std::string cls = right ? (*right ? "own-right" : "own-wrong") : "own-unknown";
  const char* mark = right ? (*right ? "\u2713" : "\u2717") : r.launcher.blamed_rank ? "?" : "\u2013";
  return "<sup class=\"own " + cls + "\" title=\"stack's own report: " + e(shortLine(said, kHoverChars)) + "\">" + mark +
         "</sup>";
}

std::string cellHtml(const SuiteEntry& x, size_t column) {
  const Report& r = x.report;
  const bool unsupported = r.verdict == Verdict::kUnsupported;
  const std::string hover = unsupported ? headline(r) : verdictName(r.verdict);
  std::ostringstream o;
  o << "<td class=\"cell c c" << column << "\"><a href=\"" << e(urlPath(x.run_dir)) << "/report.html\"><span class=\"verdict v-"
    << verdictName(r.verdict) << (unsupported ? " blank" : "") << "\" title=\"" << e(shortLine(hover, kHoverChars)) << "\">"
    << verdictMark(r.verdict) << "</span></a>" << ownMarker(r);
  if (const std::string text = cellText(r); !text.empty()) {
    o << "<div class=\"line\" title=\"" << e(shortLine(text, kHoverChars)) << "\">" << e(shortLine(text, kCellLineChars))
      << "</div>";
  }
  o << "</td>";
  return o.str();
}

// One stack's column in numbers: its verdicts, and how often its own report
// (the launcher's blame) named the rank faultline found.
struct ColumnTotals {
  int pass = 0, fail = 0, unsupported = 0, other = 0;
  int own_right = 0, own_checked = 0;
};

ColumnTotals totalsOf(const Suite& s, const std::string& stack) {
  ColumnTotals t;
  for (const auto& x : s.entries) {
    if (x.stack != stack) continue;
    switch (x.report.verdict) {
      case Verdict::kPass: ++t.pass; break;
      case Verdict::kFail: ++t.fail; break;
      case Verdict::kUnsupported: ++t.unsupported; break;
      default: ++t.other;
    }
    if (x.report.launcher.blamed_correctly) {
      ++t.own_checked;
      t.own_right += *x.report.launcher.blamed_correctly;
    }
  }
  return t;
}

std::string totalsRow(const Suite& s, const Matrix& m) {
  std::ostringstream o;
  o << "<tr class=\"totals\"><th>totals</th>";
  for (size_t i = 0; i < m.stacks.size(); ++i) {
    const ColumnTotals t = totalsOf(s, m.stacks[i]);
    o << "<td class=\"c c" << i << "\"><div>" << t.pass << " pass \u00b7 " << t.fail << " fail \u00b7 " << t.unsupported
      << " unsupported";
    if (t.other > 0) o << " \u00b7 " << t.other << " other";
    o << "</div><div class=\"own-total\" title=\"cells where the launcher blamed a rank faultline could check\">own report right ";
    if (t.own_checked > 0) o << t.own_right << "/" << t.own_checked;
    else o << "n/a";
    o << "</div></td>";
  }
  o << "</tr>\n";
  return o.str();
}

std::string matrixTable(const Suite& s, const Matrix& m) {
  std::ostringstream o;
  o << "<table id=\"matrix\"><tr><th>scenario \\ stack</th>";
  for (size_t i = 0; i < m.stacks.size(); ++i) o << "<th class=\"c c" << i << "\">" << e(stackLabel(m.stacks[i])) << "</th>";
  o << "</tr>\n" << totalsRow(s, m);
  for (const auto& name : m.scenarios) {
    o << "<tr class=\"r";
    if (auto tags = m.row_tags.find(name); tags != m.row_tags.end()) {
      for (size_t t : tags->second) o << " t" << t;
    }
    o << "\"><th class=\"scenario\">" << e(name) << "</th>";
    for (size_t i = 0; i < m.stacks.size(); ++i) {
      auto it = m.cells.find({name, m.stacks[i]});
      if (it == m.cells.end()) o << "<td class=\"none c c" << i << "\">\u2014</td>";
      else o << cellHtml(*it->second, i);
    }
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

// A filter is a radio group: hidden inputs placed before the table (CSS's `~`
// reaches only later siblings), labels as its buttons, and one rule per
// option hiding what the option leaves out. "all" is checked at first.
struct FilterGroup {
  std::string name;    // the radio group and the label's heading: stack | tag
  std::string prefix;  // of the input ids: st-0, st-all
  std::vector<std::string> options;
  // What option i hides, a selector with {} for i: every stack column but c{}.
  std::string hides;
};

std::string selectorFor(const FilterGroup& g, size_t i) {
  std::string sel = g.hides;
  sel.replace(sel.find("{}"), 2, std::to_string(i));
  return "#" + g.prefix + "-" + std::to_string(i) + ":checked ~ " + sel;
}

std::string filterInputs(const FilterGroup& g) {
  std::ostringstream o;
  o << "<input type=\"radio\" class=\"filter\" name=\"" << g.name << "\" id=\"" << g.prefix
    << "-all\" checked=\"checked\"/>";
  for (size_t i = 0; i < g.options.size(); ++i) {
    o << "<input type=\"radio\" class=\"filter\" name=\"" << g.name << "\" id=\"" << g.prefix << "-" << i << "\"/>";
  }
  return o.str() + "\n";
}

std::string filterLabels(const FilterGroup& g) {
  std::ostringstream o;
  o << "<div class=\"filter-" << g.name << "\">" << g.name << ": <label for=\"" << g.prefix << "-all\">all</label>";
  for (size_t i = 0; i < g.options.size(); ++i) {
    o << "<label for=\"" << g.prefix << "-" << i << "\">" << e(g.options[i]) << "</label>";
  }
  o << "</div>";
  return o.str();
}

// The group's rules: each option hides the rest, and the checked option's
// label looks pressed. Built from indexes only (see Matrix).
std::string filterCss(const FilterGroup& g) {
  std::ostringstream o;
  const std::string pressed = "{background:#ddf4ff;border-color:#54aeff}\n";
  o << "#" << g.prefix << "-all:checked ~ .filters label[for=\"" << g.prefix << "-all\"]" << pressed;
  for (size_t i = 0; i < g.options.size(); ++i) {
    const std::string id = g.prefix + "-" + std::to_string(i);
    o << selectorFor(g, i) << "{display:none}\n"
      << "#" << id << ":checked ~ .filters label[for=\"" << id << "\"]" << pressed;
  }
  return o.str();
}

std::vector<FilterGroup> filtersOf(const Matrix& m) {
  std::vector<std::string> stacks;
  for (const auto& st : m.stacks) stacks.push_back(stackLabel(st));
  std::vector<FilterGroup> groups = {{"stack", "st", stacks, "table .c:not(.c{})"}};
  // A suite without tags has nothing to filter by tag.
  if (!m.tags.empty()) groups.push_back({"tag", "tg", m.tags, "table tr.r:not(.t{})"});
  return groups;
}

std::string verdictCounts(const Suite& s) {
  std::map<std::string, int> counts;
  for (const auto& x : s.entries) ++counts[verdictName(x.report.verdict)];
  std::ostringstream o;
  o << "<div id=\"counts\">";
  for (const auto& [v, n] : counts) o << "<span class=\"verdict v-" << v << "\">" << v << ": " << n << "</span> ";
  o << " wall " << static_cast<double>(s.wall_ms) / 1000.0 << " s</div>\n";
  return o.str();
}

}  // namespace

std::string htmlForSuite(const Suite& s) {
  const Matrix m = matrixOf(s);
  const std::vector<FilterGroup> filters = filtersOf(m);
  std::ostringstream o, css;
  o << "<h1>faultline suite</h1>" << verdictCounts(s);
  for (const auto& g : filters) o << filterInputs(g);
  o << "<div class=\"filters\">";
  for (const auto& g : filters) o << filterLabels(g);
  o << "</div>\n" << matrixTable(s, m);
  o << "<div class=\"matrix-key\">\u2713 pass, \u2717 fail, ! error, \u2026 another verdict, \u2013 unsupported (hover for why); "
       "a small \u2713 or \u2717 beside it: the stack's own report blamed the right or the wrong rank</div>\n";
  css << kSuiteStyle;
  for (const auto& g : filters) css << filterCss(g);
  return htmlPage("faultline suite", o.str(), css.str());
}

}  // namespace faultline::reports
