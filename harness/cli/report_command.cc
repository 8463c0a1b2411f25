// Re-rendering reports. Reads JSON only; nothing in it is executed.
#include "harness/cli/report_command.h"

#include <filesystem>
#include <fstream>
#include <ostream>

#include "harness/assemble/assemble.h"
#include "harness/model/report.h"
#include "harness/model/run_layout.h"
#include "reports/render.h"

namespace faultline::cli {
namespace {

bool isPlainRelativeDir(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  for (const auto& part : std::filesystem::path(path)) {
    if (part == "..") return false;
  }
  return true;
}

// A suite directory: report.json has schema faultline.suite/1 and each entry's run_dir holds a run.
int renderSuiteDir(const std::string& dir, std::ostream& out, std::ostream& err) {
  auto suite = loadSuite(dir);
  if (!suite) {
    err << "faultline report: " << suite.error().str() << "\n";
    return 2;
  }
  for (const auto& entry : suite->entries) {
    if (auto w = reports::renderRun(entry.report, dir + "/" + entry.run_dir); !w) {
      err << "faultline report: " << w.error().str() << "\n";
      return 3;
    }
  }
  if (auto w = reports::renderSuite(*suite, dir); !w) {
    err << "faultline report: " << w.error().str() << "\n";
    return 3;
  }
  out << "rendered " << suite->entries.size() << " runs and " << dir << "/index.html\n";
  return 0;
}

}  // namespace

Result<reports::Suite> loadSuite(const std::string& dir) {
  const std::string path = RunLayout(dir).reportPath();
  std::ifstream in(path);
  if (!in) return fail(ErrorCode::kIo, "cannot read", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorCode::kBadInput, std::string("not valid JSON: ") + e.what(), path);
  }
  if (j.value("schema", "") != "faultline.suite/1") {
    return fail(ErrorCode::kBadInput, "not a suite report (schema faultline.suite/1)", path);
  }
  reports::Suite suite;
  suite.wall_ms = j.value("wall_ms", int64_t{0});
  size_t index = 0;
  for (const auto& e : j.value("scenarios", nlohmann::json::array())) {
    reports::SuiteEntry entry;
    entry.name = e.value("name", "");
    entry.stack = e.value("stack", "");
    entry.run_dir = e.value("run_dir", "");
    // Tags only filter the suite page: a suite report without them (an older
    // faultline's) or with something else there renders without the filter.
    if (const auto tags = e.find("tags"); tags != e.end() && tags->is_array()) {
      for (const auto& t : *tags) {
        if (t.is_string()) entry.tags.push_back(t.get<std::string>());
      }
    }
    // Re-rendering writes into each run directory: a hostile suite report
    // must not steer those writes (or the reads before them) out of DIR.
    if (!isPlainRelativeDir(entry.run_dir)) {
      return fail(ErrorCode::kBadInput,
                  "scenarios[" + std::to_string(index) + "].run_dir '" + entry.run_dir +
                      "': expected a relative directory inside the suite directory (no '..', not absolute)",
                  path);
    }
    ++index;
    // A run directory without a readable report is that cell in error,
    // naming its log; the rest of the suite still renders.
    auto r = readReport(RunLayout(dir + "/" + entry.run_dir).reportPath());
    entry.report = r ? std::move(*r)
                     : assemble::missingRunReport(ScenarioRef{entry.name, ""}, r.error(), dir + "/" + entry.run_dir + ".log");
    suite.entries.push_back(std::move(entry));
  }
  return suite;
}

int runReport(const std::string& run_dir, std::ostream& out, std::ostream& err) {
  const std::string path = RunLayout(run_dir).reportPath();
  std::ifstream in(path);
  if (!in) {
    err << "faultline report: " << path << ": cannot read\n";
    return 2;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    err << "faultline report: " << path << ": not valid JSON: " << e.what() << "\n";
    return 2;
  }
  if (j.value("schema", "") == "faultline.suite/1") return renderSuiteDir(run_dir, out, err);
  auto report = reportFromJson(j);
  if (!report) {
    err << "faultline report: " << path << ": " << report.error().str() << "\n";
    return 2;
  }
  if (auto w = reports::renderRun(*report, run_dir); !w) {
    err << "faultline report: " << w.error().str() << "\n";
    return 3;
  }
  out << "rendered " << run_dir << "/junit.xml, report.md, report.html\n";
  return 0;
}

}  // namespace faultline::cli
