// The end-to-end check: a plain Python DDP trainer, unmodified, run by
// `faultline exec` under the builtin launcher and under real torchrun, with
// the interposer failing rank 1's checkpoint write with ENOSPC. The fault must
// really reach the process, on rank 1 only, and report.json must name it.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/launch/rank_env.h"
#include "harness/model/report.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

namespace faultline {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char kInject[] = "write:ENOSPC:rank=1:after=1:path=*/checkpoints/*";

using testing::readFile;
using testing::TempDir;

std::vector<json> readEvents(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

std::vector<json> eventsOf(const std::string& path, const std::string& ev) {
  std::vector<json> out;
  for (const auto& e : readEvents(path)) {
    if (e["ev"] == ev) out.push_back(e);
  }
  return out;
}

// `faultline ARGS`, with the interposer and the injection in its environment,
// which faultline passes on to every process of the run. FAULTLINE_PRELOAD
// names the same library for a harness that puts one on LD_PRELOAD itself.
int runFaultline(const std::vector<std::string>& args, const std::string& log) {
  testing::SpawnOptions o;
  o.argv = {FL_FAULTLINE};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.env = testing::environmentWith({{"LD_PRELOAD", FL_PRELOAD}, {"FAULTLINE_PRELOAD", FL_PRELOAD}, {"FAULTLINE_INJECT", kInject}},
                                   [](std::string_view key) {
                                     return key == "LD_PRELOAD" || key == "RANK" || key.rfind("FAULTLINE_", 0) == 0;
                                   });
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::runChild(o).code();
}

std::string trainer() { return std::string(FL_SOURCE_DIR) + "/scenarios/python/checkpoint_enospc.py"; }

// What both launchers must show: the fault reached rank 1 only, rank 1 died
// of it, and the report says so.
void expectEnospcOnRankOne(const std::string& out) {
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause) << readFile(out + "/report.json");
  std::string tails;
  for (const auto& r : report->ranks) tails += "--- rank " + std::to_string(r.rank) + " stderr:\n" + r.stderr_tail;
  SCOPED_TRACE(tails);
  const RootCause& rc = *report->root_cause;
  EXPECT_EQ(rc.kind, Kind::kPythonException) << rc.summary;
  EXPECT_EQ(rc.rank, 1) << rc.summary;
  EXPECT_EQ(rc.exception_type, "OSError") << rc.summary;
  ASSERT_TRUE(rc.message) << rc.summary;
  EXPECT_NE(rc.message->find("[Errno 28] No space left on device"), std::string::npos) << *rc.message;
  ASSERT_TRUE(rc.location) << rc.summary;
  EXPECT_EQ(fs::path(rc.location->file).filename(), "checkpoint_enospc.py");
  EXPECT_NE(rc.summary.find("rank 1: OSError"), std::string::npos) << rc.summary;
  // The innermost layer of the onion is the injected system-call failure.
  ASSERT_FALSE(rc.layers.empty());
  EXPECT_NE(rc.layers.back().text.find("write failed with ENOSPC"), std::string::npos) << rc.layers.back().text;
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[1].role, RankRole::kRootCause);
  EXPECT_NE(report->ranks[0].role, RankRole::kRootCause);
  EXPECT_TRUE(report->teardown.clean);

  // The fault really reached rank 1's process, and only it.
  auto faults = eventsOf(out + "/ranks/1/events.jsonl", "fault");
  ASSERT_FALSE(faults.empty());
  EXPECT_EQ(faults[0]["kind"], "syscall");
  EXPECT_EQ(faults[0]["errno"], "ENOSPC");
  EXPECT_EQ(faults[0]["rule"], kInject);
  EXPECT_NE(faults[0]["path"].get<std::string>().find("/checkpoints/rank1/step4.pt.tmp"), std::string::npos);
  EXPECT_TRUE(eventsOf(out + "/ranks/0/events.jsonl", "fault").empty());
  // Both ranks wrote checkpoints and were seen opening them (their own paths:
  // no concurrent_writes finding).
  EXPECT_TRUE(fs::exists(out + "/checkpoints/rank0/step4.pt"));
  EXPECT_TRUE(fs::exists(out + "/checkpoints/rank1/step2.pt"));
  EXPECT_FALSE(fs::exists(out + "/checkpoints/rank1/step4.pt"));
  for (int r = 0; r < 2; ++r) {
    bool saw = false;
    for (const auto& e : eventsOf(out + "/ranks/" + std::to_string(r) + "/events.jsonl", "file_open")) {
      saw = saw || e["path"].get<std::string>().find("/checkpoints/rank" + std::to_string(r) + "/step2.pt.tmp") !=
                       std::string::npos;
    }
    EXPECT_TRUE(saw) << "rank " << r;
  }
  EXPECT_TRUE(report->findings.empty()) << report->findings.front().summary;
}

TEST(PreloadEndToEnd, CheckpointEnospcUnderTheBuiltinLauncher) {
  TempDir dir;
  const std::string out = dir / "run";
  const int rc = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "30", "--deadline", "150", "--grace", "3", "-o",
                               out, "--", "/usr/bin/python3", trainer()},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  expectEnospcOnRankOne(out);
}

TEST(PreloadEndToEnd, CheckpointEnospcUnderTorchrun) {
  if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  if (::geteuid() != 0) GTEST_SKIP() << "exit statuses of torchrun's ranks need the proc connector (root)";
  TempDir dir;
  const std::string out = dir / "run";
  auto port = launch::findFreePort();
  ASSERT_TRUE(port);
  const int rc = runFaultline({"exec", "--launcher", "external", "--hang-timeout", "30", "--deadline", "150", "--grace",
                               "3", "-o", out, "--", "/usr/bin/torchrun", "--redirects", "2", "--tee", "2", "--log_dir",
                               out + "/launcher/logs", "--master_port=" + std::to_string(*port), "--nproc_per_node=2",
                               trainer()},
                              dir / "log");
  EXPECT_EQ(rc, 1) << readFile(dir / "log");
  expectEnospcOnRankOne(out);
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report);
  EXPECT_NE(report->launcher.exit_code.value_or(0), 0);
}

}  // namespace
}  // namespace faultline
