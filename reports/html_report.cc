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
svg text{font:11px monospace}
</style>)";

std::string e(const std::string& s) { return escapeXml(s); }

std::string verdictBadge(Verdict v) {
  return "<span class=\"verdict v-" + verdictName(v) + "\">" + verdictName(v) + "</span>";
}

// Colour of a timeline mark by what it records.
std::string markColour(const std::string& what) {
  auto has = [&](const char* s) { return what.find(s) != std::string::npos; };
  if (has("fault")) return "#8250df";
  if (has("SIGKILL") || has("SIGTERM") || has("teardown")) return "#9a6700";
  if (has("error") || has("killed") || has("exited with code") || has("hang") || has("failed")) return "#cf222e";
  if (has("exit")) return "#1a7f37";
  return "#0969da";
}

std::string timelineSvg(const Report& r) {
  std::set<int> lanes;
  for (const auto& k : r.ranks) lanes.insert(k.rank);
  for (const auto& t : r.timeline) {
    if (t.rank) lanes.insert(*t.rank);
  }
  double t_max = 1;
  for (const auto& t : r.timeline) t_max = std::max(t_max, t.t_ms);
  const int left = 90, width = 1000, lane_h = 28, top = 24;
  const int rows = static_cast<int>(lanes.size()) + 1;  // + the harness lane
  const int height = top + rows * lane_h + 24;
  std::map<int, int> row;
  int i = 0;
  for (int rank : lanes) row[rank] = i++;
  const int harness_row = i;
  std::ostringstream o;
  o << "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + 20 << "\" height=\""
    << height << "\" role=\"img\" aria-label=\"per-rank timeline\">\n";
  auto x = [&](double t) { return left + static_cast<int>(std::lround(t / t_max * width)); };
  for (const auto& [rank, rw] : row) {
    const int y = top + rw * lane_h;
    o << "<g class=\"lane\" data-rank=\"" << rank << "\"><text x=\"4\" y=\"" << y + 17 << "\">rank " << rank
      << "</text><line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << y + 13 << "\" y2=\"" << y + 13
      << "\" stroke=\"#d0d7de\"/></g>\n";
  }
  const int hy = top + harness_row * lane_h;
  o << "<g class=\"lane-harness\"><text x=\"4\" y=\"" << hy + 17 << "\">harness</text><line x1=\"" << left << "\" x2=\""
    << left + width << "\" y1=\"" << hy + 13 << "\" y2=\"" << hy + 13 << "\" stroke=\"#d0d7de\"/></g>\n";
  for (const auto& t : r.timeline) {
    const int y = top + (t.rank && row.count(*t.rank) ? row[*t.rank] : harness_row) * lane_h;
    char label[32];
    std::snprintf(label, sizeof label, "%.1f ms", t.t_ms);
    o << "<circle cx=\"" << x(t.t_ms) << "\" cy=\"" << y + 13 << "\" r=\"5\" fill=\"" << markColour(t.what)
      << "\"><title>" << e(std::string(label) + ": " + t.what) << "</title></circle>\n";
  }
  // Time axis.
  const int ay = top + rows * lane_h + 4;
  o << "<line x1=\"" << left << "\" x2=\"" << left + width << "\" y1=\"" << ay << "\" y2=\"" << ay << "\" stroke=\"#57606a\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double t = t_max * k / 4;
    char label[32];
    std::snprintf(label, sizeof label, "%.0f ms", t);
    o << "<text x=\"" << x(t) - 10 << "\" y=\"" << ay + 14 << "\">" << label << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string body(const Report& r) {
  std::ostringstream o;
  const std::string title = r.scenario ? r.scenario->name : "faultline exec";
  o << "<h1>" << e(title) << " " << verdictBadge(r.verdict) << "</h1>\n";
  o << "<div>stack: " << e(r.stack.launcher) << ", world size " << r.stack.world_size << "</div>\n";
  o << "<div id=\"root-cause\" class=\"cause\">" << e(headline(r)) << "</div>\n";
  if (r.root_cause && !r.root_cause->layers.empty()) {
    o << "<h2>The onion, outermost first</h2><table id=\"layers\">";
    for (const auto& l : r.root_cause->layers) {
      o << "<tr><td class=\"layer\">" << e(l.layer) << "</td><td>" << e(l.text) << "</td></tr>";
    }
    o << "</table>\n";
  }
  o << "<h2>Timeline</h2>\n" << timelineSvg(r);
  if (!r.findings.empty()) {
    o << "<h2>Findings</h2><table id=\"findings\"><tr><th>kind</th><th>ranks</th><th>severity</th><th>summary</th><th>evidence</th></tr>";
    for (const auto& f : r.findings) {
      std::string ranks;
      for (int k : f.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(k);
      o << "<tr><td>" << kindName(f.kind) << "</td><td>" << ranks << "</td><td>" << e(f.severity) << "</td><td>"
        << e(f.summary) << "</td><td>" << e(f.evidence) << "</td></tr>";
    }
    o << "</table>\n";
  }
  if (!r.expectations.empty()) {
    o << "<h2>Expectations</h2><table id=\"expectations\"><tr><th></th><th>path</th><th>expected</th><th>actual</th></tr>";
    for (const auto& x : r.expectations) {
      o << "<tr><td class=\"" << (x.ok ? "ok\">pass" : "bad\">" + e(x.status)) << "</td><td>" << e(x.what) << "</td><td>"
        << e(jsonText(x.expected)) << "</td><td>" << e(jsonText(x.actual)) << "</td></tr>";
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
      << "><summary>rank " << k.rank << " — " << roleName(k.role) << " — " << e(exit) << " — " << e(k.diagnosis)
      << "</summary><pre>" << e(k.stderr_tail) << "</pre>";
    const std::string key = std::to_string(k.rank);
    if (r.extra.contains("stack_dumps") && r.extra["stack_dumps"].contains(key) && r.extra["stack_dumps"][key].is_string()) {
      o << "<div>stack dump</div><pre class=\"stacks\">" << e(r.extra["stack_dumps"][key].get<std::string>()) << "</pre>";
    }
    o << "</details>\n";
  }
  return o.str();
}

std::string page(const std::string& title, const std::string& content) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><meta http-equiv=\"Content-Security-Policy\" "
         "content=\"default-src 'none'; style-src 'unsafe-inline'\"/><title>" +
         e(title) + "</title>" + kStyle + "</head><body>\n" + content + "</body></html>\n";
}


}  // namespace

std::string htmlForRun(const Report& r) {
  return page("faultline: " + (r.scenario ? r.scenario->name : std::string("exec")), body(r));
}

std::string htmlForSuite(const Suite& s) {
  std::ostringstream o;
  std::map<std::string, int> counts;
  for (const auto& x : s.entries) ++counts[verdictName(x.report.verdict)];
  o << "<h1>faultline suite</h1><div id=\"counts\">";
  for (const auto& [v, n] : counts) o << "<span class=\"verdict v-" << v << "\">" << v << ": " << n << "</span> ";
  o << " wall " << static_cast<double>(s.wall_ms) / 1000.0 << " s</div>\n";
  o << "<table id=\"scenarios\"><tr><th>scenario</th><th>stack</th><th>verdict</th><th>root cause</th><th>teardown</th></tr>";
  for (const auto& x : s.entries) {
    o << "<tr><td><a href=\"" << e(urlPath(x.run_dir)) << "/report.html\">" << e(x.name) << "</a></td><td>" << e(x.stack)
      << "</td><td>" << verdictBadge(x.report.verdict) << "</td><td>" << e(headline(x.report)) << "</td><td>"
      << x.report.teardown.duration_ms << " ms" << (x.report.teardown.clean ? "" : " (not clean)") << "</td></tr>";
  }
  o << "</table>\n";
  return page("faultline suite", o.str());
}

Result<void> renderRun(const Report& r, const std::string& run_dir) {
  if (auto w = writeFileAtomically(run_dir + "/junit.xml", junitForRun(r)); !w) return w;
  if (auto w = writeFileAtomically(run_dir + "/report.md", markdownForRun(r)); !w) return w;
  return writeFileAtomically(run_dir + "/report.html", htmlForRun(r));
}

Result<void> renderSuite(const Suite& s, const std::string& dir) {
  if (auto w = writeFileAtomically(dir + "/report.json", suiteJson(s).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"); !w) return w;
  if (auto w = writeFileAtomically(dir + "/junit.xml", junitForSuite(s)); !w) return w;
  if (auto w = writeFileAtomically(dir + "/report.md", markdownForSuite(s)); !w) return w;
  return writeFileAtomically(dir + "/index.html", htmlForSuite(s));
}

}  // namespace faultline::reports
