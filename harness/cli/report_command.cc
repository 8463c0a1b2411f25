// Re-rendering reports. Reads JSON only; nothing in it is executed.
#include "harness/cli/report_command.h"

#include <filesystem>
#include <fstream>
#include <ostream>

#include "harness/model/report.h"
#include "reports/render.h"

namespace faultline::cli {
namespace {

namespace fs = std::filesystem;

// A suite directory: report.json has schema faultline.suite/1 and each entry's run_dir holds a run.
int renderSuiteDir(const std::string& dir, const nlohmann::json& suite_json, std::ostream& out, std::ostream& err) {
  reports::Suite suite;
  suite.wall_ms = suite_json.value("wall_ms", int64_t{0});
  for (const auto& e : suite_json.value("scenarios", nlohmann::json::array())) {
    reports::SuiteEntry entry;
    entry.name = e.value("name", "");
    entry.stack = e.value("stack", "");
    entry.run_dir = e.value("run_dir", "");
    auto r = readReport(dir + "/" + entry.run_dir + "/report.json");
    if (!r) {
      err << "faultline report: " << r.error().str() << "\n";
      return 2;
    }
    if (auto w = reports::renderRun(*r, dir + "/" + entry.run_dir); !w) {
      err << "faultline report: " << w.error().str() << "\n";
      return 3;
    }
    entry.report = std::move(*r);
    suite.entries.push_back(std::move(entry));
  }
  if (auto w = reports::renderSuite(suite, dir); !w) {
    err << "faultline report: " << w.error().str() << "\n";
    return 3;
  }
  out << "rendered " << suite.entries.size() << " runs and " << dir << "/index.html\n";
  return 0;
}

}  // namespace

int runReport(const std::string& run_dir, std::ostream& out, std::ostream& err) {
  const std::string path = run_dir + "/report.json";
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
  if (j.value("schema", "") == "faultline.suite/1") return renderSuiteDir(run_dir, j, out, err);
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
