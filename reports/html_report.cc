// Self-contained HTML (no network, no scripts): the root cause and its onion
// first, a per-rank SVG timeline, findings, expectations, stderr tails.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "harness/model/atomic_file.h"
#include "reports/finding_fixes.h"
#include "reports/html_page.h"
#include "reports/render.h"
#include "reports/xml_text.h"

namespace faultline::reports {
namespace {

const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1f24;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
.verdict{display:inline-block;padding:2px 8px;border-radius:4px;font-weight:600;color:#fff}
.v-pass,.v-clean{background:#1a7f37}.v-fail,.v-error,.v-diagnosed{background:#cf222e}
.v-unresolved,.v-incomplete{background:#9a6700}.v-unsupported{background:#6e7781}
.cause{border-left:4px solid #cf222e;background:#fff5f5;padding:8px 12px;margin:12px 0;font-size:16px}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
pre{background:#f6f8fa;padding:8px;overflow:auto;max-height:320px;font-size:12px}
.ok{color:#1a7f37}.bad{color:#cf222e}.layer{font-family:monospace;color:#57606a}
svg text{font:11px monospace} .legend span{margin-right:14px;white-space:nowrap;font-size:12px}
.legend svg{vertical-align:middle} tr:target{background:#fff8c5} mark{background:#fff8c5;font-weight:600}
a.evidence{margin-right:12px;font-size:13px}
</style>)";

std::string e(const std::string& s) { return escapeXml(s); }

// How each kind of timeline mark is drawn: colour, shape, legend text.
struct MarkStyle {
  const char* colour;
  const char* shape;  // circle | diamond | triangle | square | bar
  const char* legend;
};

MarkStyle markStyle(TimelineKind k) {
  switch (k) {
    case TimelineKind::kStart: return {"#0969da", "circle", "started, process group up"};
    case TimelineKind::kFault: return {"#8250df", "diamond", "fault injected"};
    case TimelineKind::kStep: return {"#54aeff", "circle", "step done"};
    case TimelineKind::kStuck: return {"#cf222e", "square", "entered a collective, never left"};
    case TimelineKind::kFailure: return {"#cf222e", "circle", "rank failed"};
    case TimelineKind::kTrigger: return {"#cf222e", "bar", "first trigger (the supervisor acts)"};
    case TimelineKind::kExit: return {"#1a7f37", "circle", "exit"};
    case TimelineKind::kSignal: return {"#9a6700", "triangle", "signal sent or received"};
    case TimelineKind::kDump: return {"#6e7781", "square", "stack dumps"};
    case TimelineKind::kTeardown: return {"#9a6700", "square", "teardown"};
    case TimelineKind::kRootCause: return {"#cf222e", "diamond", "root cause"};
    case TimelineKind::kNote: break;
  }
  return {"#57606a", "circle", "note"};
}

std::string fmtMs(double ms) {
  char b[32];
  if (ms >= 10000) std::snprintf(b, sizeof b, "%.1f s", ms / 1000);
  else std::snprintf(b, sizeof b, "%.1f ms", ms);
  return b;
}

// An axis label: whole units when the ticks are.
std::string tickText(double ms, double step) {
  char b[32];
  if (step >= 1000) std::snprintf(b, sizeof b, "%g s", ms / 1000);
  else if (step >= 1) std::snprintf(b, sizeof b, "%.0f ms", ms);
  else std::snprintf(b, sizeof b, "%.2f ms", ms);
  return b;
}

// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks.
double niceStep(double span, int n) {
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * p) return m * p;
  }
  return 10 * p;
}

std::string shapeSvg(const MarkStyle& st, int cx, int cy, int lane_top, int lane_bottom) {
  std::ostringstream o;
  const std::string fill = std::string(" fill=\"") + st.colour + "\"";
  const std::string sh = st.shape;
  if (sh == "diamond") {
    o << "<polygon points=\"" << cx << "," << cy - 6 << " " << cx + 6 << "," << cy << " " << cx << "," << cy + 6 << " "
      << cx - 6 << "," << cy << "\"" << fill << "/>";
  } else if (sh == "triangle") {
    o << "<polygon points=\"" << cx << "," << cy - 6 << " " << cx + 6 << "," << cy + 5 << " " << cx - 6 << "," << cy + 5
      << "\"" << fill << "/>";
  } else if (sh == "square") {
    o << "<rect x=\"" << cx - 4 << "\" y=\"" << cy - 4 << "\" width=\"9\" height=\"9\"" << fill << "/>";
  } else if (sh == "bar") {
    o << "<rect x=\"" << cx - 1 << "\" y=\"" << lane_top << "\" width=\"3\" height=\"" << lane_bottom - lane_top << "\""
      << fill << "/>";
  } else {
    o << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\"5\"" << fill << "/>";
  }
  return o.str();
}

std::string legend() {
  std::ostringstream o;
  o << "<div id=\"legend\" class=\"legend\">"
    << "<span><svg width=\"22\" height=\"12\"><rect x=\"0\" y=\"2\" width=\"22\" height=\"8\" fill=\"#b6e3ff\" "
       "stroke=\"#54aeff\"/></svg> step</span>"
    << "<span><svg width=\"22\" height=\"12\"><rect x=\"0\" y=\"2\" width=\"22\" height=\"8\" fill=\"#fb8f44\"/></svg> "
       "collective</span>"
    << "<span><svg width=\"22\" height=\"12\"><rect x=\"0\" y=\"2\" width=\"22\" height=\"8\" fill=\"#ffebe9\" "
       "stroke=\"#cf222e\" stroke-dasharray=\"3,2\"/></svg> never ended (runs to the end of the run)</span>";
  for (TimelineKind k : {TimelineKind::kStart, TimelineKind::kFault, TimelineKind::kFailure, TimelineKind::kRootCause,
                         TimelineKind::kTrigger, TimelineKind::kStuck, TimelineKind::kExit, TimelineKind::kSignal,
                         TimelineKind::kDump, TimelineKind::kTeardown, TimelineKind::kNote}) {
    const MarkStyle st = markStyle(k);
    o << "<span data-kind=\"" << timelineKindName(k) << "\"><svg width=\"14\" height=\"14\">"
      << shapeSvg(st, 7, 7, 0, 14) << "</svg> " << st.legend << "</span>";
  }
  o << "</div>\n";
  return o.str();
}

// Per-rank lanes (steps and collectives as bars, marks as shapes), a harness
// lane, a time axis with gridlines. Every element's <title> holds its fields
// (hover); each mark links to its row of the events table below (click).
std::string timelineSvg(const Report& r) {
  std::set<int> lanes;
  for (const auto& k : r.ranks) lanes.insert(k.rank);
  for (const auto& t : r.timeline) {
    if (t.rank) lanes.insert(*t.rank);
  }
  for (const auto& sp : r.spans) lanes.insert(sp.rank);
  double t_max = 1;
  for (const auto& t : r.timeline) t_max = std::max(t_max, t.t_ms);
  for (const auto& sp : r.spans) t_max = std::max(t_max, sp.t_ms + sp.dur_ms.value_or(0));
  const double t_end = t_max;
  const int left = 90, width = 1000, lane_h = 40, top = 10;
  // Multi-node: the ranks of each node together, under a header lane for the
  // node (ranks no node claims last); a single-node report has no headers.
  std::vector<std::pair<int, const NodeReport*>> order;  // rank (-1: a node's header), its node
  std::map<int, const NodeReport*> node_of;
  for (const auto& nd : r.nodes) {
    for (int k : nd.ranks) node_of[k] = &nd;
  }
  for (const auto& nd : r.nodes) {
    order.push_back({-1, &nd});
    for (int k : lanes) {
      if (node_of.count(k) && node_of[k] == &nd) order.push_back({k, &nd});
    }
  }
  for (int k : lanes) {
    if (!node_of.count(k)) order.push_back({k, nullptr});
  }
  const int rows = static_cast<int>(order.size()) + 1;  // + the harness lane
  const int ay = top + rows * lane_h + 4;
  const int height = ay + 24;
  std::map<int, int> row;
  std::vector<std::pair<int, const NodeReport*>> headers;  // row, node
  int i = 0;
  for (const auto& [k, nd] : order) {
    if (k < 0) headers.push_back({i++, nd});
    else row[k] = i++;
  }
  std::set<int> lost;
  for (const auto& k : r.ranks) {
    if (k.role == RankRole::kLost) lost.insert(k.rank);
  }
  const int harness_row = i;
  std::ostringstream o;
  o << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << left + width + 20 << " " << height
    << "\" width=\"100%\" role=\"img\" aria-label=\"per-rank timeline\">\n";
  auto x = [&](double t) { return left + static_cast<int>(std::lround(std::clamp(t / t_max, 0.0, 1.0) * width)); };
  // Gridlines and the axis first, under everything.
  const double step = niceStep(t_max, 8);
  o << "<g class=\"axis\">";
  for (double t = 0; t <= t_max + step / 2; t += step) {
    if (t > t_max) break;
    o << "<line x1=\"" << x(t) << "\" x2=\"" << x(t) << "\" y1=\"" << top << "\" y2=\"" << ay << "\" stroke=\"#eaeef2\"/>"
      << "<text x=\"" << x(t) - 12 << "\" y=\"" << ay + 15 << "\">" << tickText(t, step) << "</text>";
  }
  o << "<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << ay << "\" y2=\"" << ay
    << "\" stroke=\"#57606a\"/><text x=\"4\" y=\"" << ay + 15 << "\">time</text></g>\n";
  auto laneTop = [&](int rw) { return top + rw * lane_h; };
  for (const auto& [hr, nd] : headers) {
    const int y = laneTop(hr);
    std::string label = "node " + nd->name + (nd->host.empty() || nd->host == nd->name ? "" : " (" + nd->host + ")");
    if (nd->lost) label += " \u2014 lost";
    o << "<g class=\"node-lane" << (nd->lost ? " lost" : "") << "\" data-node=\"" << e(nd->name) << "\"><rect x=\"0\" y=\""
      << y + 4 << "\" width=\"" << left + width << "\" height=\"" << lane_h - 8 << "\" fill=\""
      << (nd->lost ? "#ffebe9" : "#f6f8fa") << "\"/><text x=\"4\" y=\"" << y + 24 << "\" font-weight=\"bold\">" << e(label)
      << "</text><title>" << e(label + "\nranks " + rankList(nd->ranks)) << "</title></g>\n";
  }
  for (const auto& [rank, rw] : row) {
    const int y = laneTop(rw);
    const bool is_lost = lost.count(rank) > 0;
    o << "<g class=\"lane" << (is_lost ? " lost" : "") << "\" data-rank=\"" << rank << "\"";
    if (node_of.count(rank)) o << " data-node=\"" << e(node_of[rank]->name) << "\"";
    o << ">";
    if (is_lost) {
      o << "<rect x=\"0\" y=\"" << y << "\" width=\"" << left + width << "\" height=\"" << lane_h
        << "\" fill=\"#fff5f5\"/>";
    }
    o << "<text x=\"" << (node_of.count(rank) ? 12 : 4) << "\" y=\"" << y + 24 << "\">rank " << rank
      << (is_lost ? " (lost)" : "") << "</text><line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\""
      << y + lane_h - 1 << "\" y2=\"" << y + lane_h - 1 << "\" stroke=\"#d0d7de\"/></g>\n";
  }
  const int hy = laneTop(harness_row);
  o << "<g class=\"lane-harness\"><text x=\"4\" y=\"" << hy + 24 << "\">harness</text></g>\n";
  // Spans: steps on the upper half of a lane, collectives on the lower.
  for (const auto& sp : r.spans) {
    if (!row.count(sp.rank)) continue;
    const bool is_step = sp.kind == "step";
    const bool open = !sp.dur_ms;
    const int y = laneTop(row[sp.rank]) + (is_step ? 4 : 19);
    const int x0 = x(sp.t_ms);
    const int x1 = std::max(x0 + 1, x(open ? t_end : sp.t_ms + *sp.dur_ms));
    std::string title = "rank " + std::to_string(sp.rank) + " " + sp.name;
    if (!is_step && sp.index >= 0) title += " #" + std::to_string(sp.index);
    title += "\nbegan " + fmtMs(sp.t_ms) + (open ? ", never ended" : ", took " + fmtMs(*sp.dur_ms));
    if (sp.numel >= 0) title += "\n" + std::to_string(sp.numel) + " elements" + (sp.dtype.empty() ? "" : " of " + sp.dtype);
    o << "<rect class=\"span " << (is_step ? "step" : "collective") << (open ? " open" : "") << "\" x=\"" << x0
      << "\" y=\"" << y << "\" width=\"" << x1 - x0 << "\" height=\"" << (is_step ? 12 : 14) << "\" fill=\""
      << (open ? "#ffebe9" : is_step ? "#b6e3ff" : "#fb8f44") << "\""
      << (open ? " stroke=\"#cf222e\" stroke-dasharray=\"3,2\"" : is_step ? " stroke=\"#54aeff\"" : "") << "><title>"
      << e(title) << "</title></rect>\n";
  }
  if (r.spans_dropped > 0) {
    o << "<text x=\"" << left << "\" y=\"" << ay + 15 << "\" class=\"dropped\">" << r.spans_dropped
      << " spans not drawn (the report keeps each rank's first and last ones)</text>\n";
  }
  // Marks, on top.
  int n = 0;
  for (const auto& t : r.timeline) {
    const bool ranked = t.rank && row.count(*t.rank);
    const int rw = ranked ? row[*t.rank] : harness_row;
    const int y = laneTop(rw);
    const MarkStyle st = markStyle(t.kind);
    const int lt = st.shape == std::string("bar") ? top : y + 2, lb = st.shape == std::string("bar") ? ay : y + lane_h - 2;
    o << "<a href=\"#ev-" << n << "\" class=\"mark\" data-kind=\"" << timelineKindName(t.kind) << "\">"
      << shapeSvg(st, x(t.t_ms), y + 20, lt, lb) << "<title>"
      << e(fmtMs(t.t_ms) + (t.rank ? " rank " + std::to_string(*t.rank) : std::string(" harness")) + " [" +
           timelineKindName(t.kind) + "]\n" + t.what)
      << "</title></a>\n";
    ++n;
  }
  o << "</svg>\n";
  return o.str();
}

std::string eventsTable(const Report& r) {
  std::ostringstream o;
  o << "<details id=\"events\"><summary>every timeline mark (" << r.timeline.size()
    << ")</summary><table><tr><th>t</th><th>rank</th><th>kind</th><th>what</th></tr>";
  int n = 0;
  for (const auto& t : r.timeline) {
    o << "<tr id=\"ev-" << n++ << "\"><td>" << fmtMs(t.t_ms) << "</td><td>"
      << (t.rank ? std::to_string(*t.rank) : std::string("harness")) << "</td><td>" << timelineKindName(t.kind)
      << "</td><td>" << e(t.what) << "</td></tr>";
  }
  o << "</table></details>\n";
  return o.str();
}

const std::string* stackDump(const Report& r, int rank) {
  const auto dumps = r.extra.find("stack_dumps");
  if (dumps == r.extra.end() || !dumps->is_object()) return nullptr;
  const auto dump = dumps->find(std::to_string(rank));
  return dump != dumps->end() ? dump->get_ptr<const std::string*>() : nullptr;  // null unless a string
}

bool isRootRank(const Report& r, int rank) { return r.root_cause && r.root_cause->rank == rank; }

// Whether a line of a traceback or a backtrace is the root cause's own frame:
// `File "PATH", line N` (Python), `PATH:N` (native), or its exception line.
bool isCauseLine(std::string_view line, const RootCause& rc) {
  if (rc.location && !rc.location->file.empty() && line.find(rc.location->file) != std::string_view::npos) {
    const std::string n = std::to_string(rc.location->line);
    if (line.find("line " + n) != std::string_view::npos || line.find(":" + n) != std::string_view::npos) return true;
  }
  if (rc.exception_type && !rc.exception_type->empty() && line.rfind(*rc.exception_type + ":", 0) == 0) return true;
  return false;
}

// Escaped text with the root cause's frame and exception lines marked.
std::string highlighted(const std::string& text, const RootCause& rc) {
  std::string out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    out += isCauseLine(line, rc) ? "<mark>" + e(line) + "</mark>" : e(line);
    if (nl < text.size()) out += "\n";
    pos = nl + 1;
  }
  return out;
}

// Where the root cause's evidence is on this page.
std::string evidenceLinks(const Report& r, int rank) {
  std::ostringstream o;
  o << "<div id=\"evidence\">evidence: <a class=\"evidence\" href=\"#rank-" << rank << "-stderr\">rank " << rank
    << "'s stderr (the cause marked)</a>";
  if (stackDump(r, rank)) o << "<a class=\"evidence\" href=\"#rank-" << rank << "-stacks\">its stack dump</a>";
  o << "<a class=\"evidence\" href=\"#timeline\">the timeline</a></div>\n";
  return o.str();
}

std::string body(const Report& r) {
  std::ostringstream o;
  const std::string title = r.scenario ? r.scenario->name : "faultline exec";
  o << "<h1>" << e(title) << " " << verdictBadge(r.verdict) << "</h1>\n";
  o << "<div>stack: " << e(r.stack.launcher) << ", world size " << r.stack.world_size << "</div>\n";
  o << "<div id=\"root-cause\" class=\"cause\">" << e(headline(r)) << "</div>\n";
  if (r.root_cause && r.root_cause->rank) o << evidenceLinks(r, *r.root_cause->rank);
  if (r.root_cause && !r.root_cause->layers.empty()) {
    o << "<h2>The onion, outermost first</h2><table id=\"layers\">";
    for (const auto& l : r.root_cause->layers) {
      o << "<tr><td class=\"layer\">" << e(l.layer) << "</td><td>" << e(l.text) << "</td></tr>";
    }
    o << "</table>\n";
  }
  if (r.root_cause) {
    const auto blame = blameLines(*r.root_cause);
    if (!blame.empty()) {
      o << "<h2>Who is to blame</h2><ul id=\"blame\">";
      for (const auto& l : blame) o << "<li>" << e(l) << "</li>";
      o << "</ul>\n";
    }
  }
  if (!r.nodes.empty()) {
    // Multi-node: what each node's agents said, and the node the root cause names.
    o << "<h2>Nodes</h2><table id=\"nodes\"><tr><th>node</th><th>host</th><th>ranks</th><th>lost</th>"
         "<th>link down</th><th>agent exit</th><th>survivors</th></tr>";
    for (const auto& nd : r.nodes) {
      const std::string rs = rankList(nd.ranks);
      o << "<tr data-node=\"" << e(nd.name) << "\"" << (nd.lost ? " class=\"bad\"" : "") << "><td>" << e(nd.name)
        << "</td><td>" << e(nd.host) << "</td><td>" << rs << "</td><td>" << (nd.lost ? "lost" : "") << "</td><td>"
        << (nd.link_down_ns ? "yes" : "") << "</td><td>"
        << (nd.agent_exit_code ? std::to_string(*nd.agent_exit_code) : std::string("none (agent gone)")) << "</td><td>"
        << nd.survivors.size() << "</td></tr>";
    }
    o << "</table>\n";
  }
  o << "<h2>Timeline</h2>\n" << legend() << timelineSvg(r) << eventsTable(r);
  if (!r.findings.empty()) {
    o << "<h2>Findings</h2><table id=\"findings\"><tr><th>kind</th><th>ranks</th><th>severity</th><th>summary</th>"
         "<th>evidence</th><th>fix</th></tr>";
    for (const auto& f : r.findings) {
      o << "<tr><td>" << kindName(f.kind) << "</td><td>" << rankList(f.ranks) << "</td><td>" << e(f.severity) << "</td><td>"
        << e(f.summary) << "</td><td>" << e(f.evidence) << "</td><td class=\"fix\">" << e(std::string(findingFix(f)))
        << "</td></tr>";
    }
    o << "</table>\n";
  }
  if (!r.faults.empty()) {
    o << "<h2>Faults asked for</h2><table id=\"faults\"><tr><th>fault</th><th>point</th><th>ranks</th><th>by</th>"
         "<th>struck</th></tr>";
    for (const auto& f : r.faults) {
      std::string ranks = f.fault.node.empty() ? "" : "node " + f.fault.node;
      for (int k : f.fault.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(k);
      if (ranks.empty()) ranks = "all";
      o << "<tr><td>" << e(f.fault.rule) << "</td><td>" << e(f.fault.point) << "</td><td>" << e(ranks) << "</td><td>"
        << e(f.fault.by) << "</td><td class=\"" << (f.struck ? "ok\">yes" : "bad\">not struck: " + e(f.reason))
        << "</td></tr>";
    }
    o << "</table>\n";
  }
  if (!r.expectations.empty()) {
    o << "<h2>Expectations</h2><table id=\"expectations\"><tr><th></th><th>path</th><th>expected</th><th>actual</th></tr>";
    for (const auto& x : r.expectations) {
      o << "<tr><td class=\"" << (x.ok ? "ok\">pass" : "bad\">" + e(expectationStatusName(x.status))) << "</td><td>" << e(x.what) << "</td><td>"
        << e(jsonText(x.expected)) << "</td><td>" << e(jsonText(x.actual)) << "</td></tr>";
    }
    o << "</table>\n";
  }
  if (const auto notes = harnessNotes(r); !notes.empty()) {
    o << "<h2>Harness notes</h2><ul id=\"harness-notes\">";
    for (const auto& n : notes) o << "<li>" << e(n) << "</li>";
    o << "</ul>\n";
  }
  if (r.recovery) {
    o << "<h2>Recovery</h2><div id=\"recovery\" class=\"" << (r.recovery->recovered ? "ok" : "bad") << "\">"
      << e(r.recovery->summary) << "</div>\n<table><tr><th>attempt</th><th>start</th><th>end</th><th>last step</th><th>ended</th></tr>";
    for (const auto& a : r.attempts) {
      o << "<tr><td>" << a.attempt << "</td><td>" << a.start_ms << " ms</td><td>"
        << (a.end_ms ? std::to_string(*a.end_ms) + " ms" : "?") << "</td><td>"
        << (a.last_step >= 0 ? std::to_string(a.last_step) : "-") << "</td><td>" << e(a.ended) << "</td></tr>";
    }
    o << "</table>\n";
  }
  o << "<h2>Teardown</h2><div id=\"teardown\">" << (r.teardown.clean ? "clean" : "NOT clean") << ", "
    << r.teardown.duration_ms << " ms, escalation " << escalationName(r.teardown.escalation) << "</div>\n";
  for (const auto& s : r.teardown.survivors) o << "<div class=\"bad\">survivor " << s.pid << ": " << e(s.cmdline) << "</div>\n";
  for (const auto& l : r.teardown.leaks) o << "<div class=\"bad\">leak: " << e(l) << "</div>\n";
  o << "<h2>Ranks</h2>\n";
  for (const auto& k : r.ranks) {
    const std::string exit = k.signal ? *k.signal : k.exit_code ? "exit " + std::to_string(*k.exit_code) : "?";
    o << "<details class=\"rank\" data-rank=\"" << k.rank << "\"" << (k.role == RankRole::kRootCause ? " open=\"open\"" : "")
      << " id=\"rank-" << k.rank << "\"><summary>rank " << k.rank << (k.node ? " on " + e(*k.node) : std::string()) << " — " << roleName(k.role) << " — " << e(exit)
      << " — " << e(k.diagnosis) << "</summary><pre id=\"rank-" << k.rank << "-stderr\">"
      << (isRootRank(r, k.rank) ? highlighted(k.stderr_tail, *r.root_cause) : e(k.stderr_tail)) << "</pre>";
    if (const std::string* dump = stackDump(r, k.rank)) {
      o << "<div>stack dump</div><pre class=\"stacks\" id=\"rank-" << k.rank << "-stacks\">"
        << (isRootRank(r, k.rank) ? highlighted(*dump, *r.root_cause) : e(*dump)) << "</pre>";
    }
    o << "</details>\n";
  }
  return o.str();
}

}  // namespace

std::string htmlPage(const std::string& title, const std::string& content, const std::string& extra_style) {
  std::string style = kStyle;
  if (!extra_style.empty()) style.insert(style.rfind("</style>"), extra_style);
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><meta http-equiv=\"Content-Security-Policy\" "
         "content=\"default-src 'none'; style-src 'unsafe-inline'\"/><title>" +
         e(title) + "</title>" + style + "</head><body>\n" + content + "</body></html>\n";
}

std::string verdictBadge(Verdict v) {
  return "<span class=\"verdict v-" + verdictName(v) + "\">" + verdictName(v) + "</span>";
}

std::string htmlForRun(const Report& r) {
  return htmlPage("faultline: " + (r.scenario ? r.scenario->name : std::string("exec")), body(r));
}

Result<void> renderRun(const Report& r, const std::string& run_dir) {
  if (auto w = writeFileAtomically(run_dir + "/junit.xml", junitForRun(r)); !w) return w;
  if (auto w = writeFileAtomically(run_dir + "/report.md", markdownForRun(r)); !w) return w;
  if (auto w = writeFileAtomically(run_dir + "/report.html", htmlForRun(r)); !w) return w;
  return writeFileAtomically(run_dir + "/trace.json", jsonText(traceForRun(r)) + "\n");
}

Result<void> renderSuite(const Suite& s, const std::string& dir) {
  if (auto w = writeFileAtomically(dir + "/report.json", suiteJson(s).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); !w) return w;
  if (auto w = writeFileAtomically(dir + "/junit.xml", junitForSuite(s)); !w) return w;
  if (auto w = writeFileAtomically(dir + "/report.md", markdownForSuite(s)); !w) return w;
  return writeFileAtomically(dir + "/index.html", htmlForSuite(s));
}

}  // namespace faultline::reports
