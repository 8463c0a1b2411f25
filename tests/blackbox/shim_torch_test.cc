// The Python shim against one torch installation (ctest ShimTorch/1.13 and
// ShimTorch/2.13, the interpreter named by FL_TORCH_BIN): a real 2-rank Gloo
// DDP trainer under that torch's torchrun and `faultline exec`, every patch
// reporting applied=true in report.json and its evidence in the events; a
// torch.multiprocessing.spawn trainer's error attributed to its rank; and a
// patch made to fail, reported as applied=false with its error.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/launch/rank_env.h"
#include "tests/blackbox/blackbox_support.h"
#include "tests/supervise/test_support.h"

extern char** environ;

namespace faultline {
namespace {

using nlohmann::json;
using testing::fileExists;
using testing::readFile;
using testing::TempDir;

// Every patch the shim makes in a rank of a DDP trainer (docs/BLACKBOX.md).
const std::set<std::string> kPatches = {
    "stacks.sigusr1", "stacks.fatal_signal", "errors.excepthook", "flight_recorder.pipe", "dist.all_reduce", "dist.all_reduce_coalesced", "dist.broadcast",
    "dist.reduce", "dist.all_gather", "dist.all_gather_into_tensor", "dist._all_gather_base", "dist.gather",
    "dist.scatter", "dist.reduce_scatter", "dist.reduce_scatter_tensor", "dist._reduce_scatter_base",
    "dist.all_to_all", "dist.all_to_all_single", "dist.barrier", "dist.send", "dist.recv",
    "dist.init_process_group", "dist.destroy_process_group", "dist._broadcast_coalesced",
    "dist._verify_params_across_processes", "dist.store", "data.dataloader", "data.distributed_sampler", "ddp.grad_allreduce",
    "ddp.fingerprint", "ddp.forward", "spawn.wrap", "optim.step",
    "metrics.provenance"};  // Tensor.item and __float__ (_metrics.py): every torch trainer imports torch

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

using blackbox::lineOf;
using blackbox::readJson;
using blackbox::runFaultline;
using blackbox::trainer;

std::multiset<std::string> eventKinds(const std::string& run, int rank) {
  std::multiset<std::string> out;
  std::ifstream in(run + "/ranks/" + std::to_string(rank) + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded()) out.insert(j.value("ev", ""));
  }
  return out;
}

// The rank's `error` events of one kind (python_exception, signal, ...).
size_t errorsOfKind(const std::string& run, int rank, const std::string& kind) {
  size_t n = 0;
  std::ifstream in(run + "/ranks/" + std::to_string(rank) + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    n += !j.is_discarded() && j.value("ev", "") == "error" && j.value("kind", "") == kind;
  }
  return n;
}

// A user's sitecustomize that makes the dist.all_reduce patch fail (see it).
std::string breakPatch() { return std::string(FL_SOURCE_DIR) + "/tests/blackbox/break_patch"; }

class ShimTorch : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = env("FL_TORCH_BIN");
    version_ = env("FL_TORCH_VERSION");
    if (bin_.empty()) GTEST_SKIP() << "FL_TORCH_BIN not set (ctest sets it per torch version)";
    if (!fileExists(python()) || !fileExists(torchrun())) {
      GTEST_SKIP() << "torch " << version_ << " is not installed here: no " << python() << " or " << torchrun();
    }
    if (::geteuid() != 0) GTEST_SKIP() << "exit statuses of torchrun's ranks need the proc connector (root)";
  }
  std::string python() const { return bin_ + "/python" + (bin_ == "/usr/bin" ? "3" : ""); }
  std::string torchrun() const { return bin_ + "/torchrun"; }

  // `faultline exec --launcher external -- torchrun --nproc_per_node=2 ... SCRIPT`.
  int torchrunExec(const TempDir& dir, const std::vector<std::string>& script,
                   const std::map<std::string, std::string>& extra = {}, const std::string& hang_timeout = "30") {
    std::vector<std::string> args = {"exec", "--launcher", "external", "--hang-timeout", hang_timeout, "--deadline",
                                     "240", "-o", dir / "run", "--", torchrun(), testing::freeTorchrunPortFlag(),
                                     "--nproc_per_node=2", "--redirects", "2", "--tee", "2", "--log_dir",
                                     dir / "torchrun"};
    args.insert(args.end(), script.begin(), script.end());
    return runFaultline(args, dir / "log", extra);
  }

  // instruments.ranks.R of the report, checked for the torch version.
  json rankInstruments(const json& report, int rank) {
    const json& r = report["instruments"]["ranks"][std::to_string(rank)];
    EXPECT_TRUE(r.is_object()) << report["instruments"].dump(1);
    if (!r.is_object()) return json::object();
    EXPECT_EQ(r["torch"].get<std::string>().rfind(version_, 0), 0u) << r["torch"];
    return r;
  }

  std::string bin_, version_;
};

TEST_F(ShimTorch, EveryPatchAppliesAndItsEvidenceAppears) {
  TempDir dir;
  const int status = torchrunExec(dir, {trainer("clean.py")});
  EXPECT_EQ(status, 0) << readFile(dir / "log");
  const json r = readJson(dir / "run/report.json");
  ASSERT_TRUE(r.is_object()) << readFile(dir / "log");
  EXPECT_TRUE(r["root_cause"].is_null()) << r["root_cause"].dump(1);
  EXPECT_EQ(r["findings"], json::array());
  EXPECT_FALSE(r.contains("unchecked_findings")) << r["unchecked_findings"].dump(1);
  EXPECT_TRUE(r["instruments"]["python_shim"].is_string());
  for (int rank : {0, 1}) {
    const json inst = rankInstruments(r, rank);
    std::set<std::string> names;
    for (const auto& [name, applied] : inst["patches"].items()) {
      names.insert(name);
      EXPECT_EQ(applied, true) << "rank " << rank << ": " << name << ": " << inst["failed"].value(name, "");
    }
    EXPECT_EQ(names, kPatches) << "rank " << rank;
    EXPECT_EQ(inst["failed"], json::object()) << "rank " << rank;
    const auto kinds = eventKinds(dir / "run", rank);
    // 8 steps: DDP's constructor (verify_params, broadcast), then a gradient
    // all-reduce and the loss all-reduce each step.
    EXPECT_EQ(kinds.count("collective_begin"), 18u) << "rank " << rank;
    EXPECT_EQ(kinds.count("collective_end"), 18u) << "rank " << rank;
    EXPECT_EQ(kinds.count("step_begin"), 8u) << "rank " << rank;
    EXPECT_EQ(kinds.count("step_end"), 8u) << "rank " << rank;
    // Before and right after DDP's broadcast, then after optimizer steps 1, 2, 4 and 8.
    EXPECT_EQ(kinds.count("fingerprint"), 6u) << "rank " << rank;
    EXPECT_EQ(kinds.count("pg_init_begin"), 1u) << "rank " << rank;
    EXPECT_EQ(kinds.count("samples"), 1u) << "rank " << rank;
    // Each batch the DataLoader handed out: data_begin and its data_end.
    EXPECT_GE(kinds.count("data_begin"), 8u) << "rank " << rank;
    EXPECT_EQ(kinds.count("data_begin"), kinds.count("data_end")) << "rank " << rank;
    EXPECT_EQ(kinds.count("pg_init"), 1u) << "rank " << rank;
    EXPECT_EQ(kinds.count("pg_destroy"), 1u) << "rank " << rank;
  }
}

TEST_F(ShimTorch, SpawnedRanksErrorIsAttributedToIt) {
  TempDir dir;
  const std::string script = trainer("spawn_name_error.py");
  auto port = launch::findFreePort();
  ASSERT_TRUE(port);
  const int status = runFaultline({"exec", "--launcher", "external", "--hang-timeout", "30", "--deadline", "240", "-o",
                                   dir / "run", "--", python(), script},
                                  dir / "log", {{"MASTER_PORT", std::to_string(*port)}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(status, 1) << readFile(dir / "log");
  const json r = readJson(dir / "run/report.json");
  ASSERT_TRUE(r.is_object()) << readFile(dir / "log");
  const json& rc = r["root_cause"];
  ASSERT_TRUE(rc.is_object()) << r.dump(1);
  EXPECT_EQ(rc["kind"], "python_exception");
  EXPECT_EQ(rc["rank"], 1);
  EXPECT_EQ(rc["exception_type"], "NameError");
  EXPECT_EQ(rc["location"]["line"], lineOf(script, "b = c  # noqa"));
  // The NameError recorded once (spawn's _wrap hands it to the parent; the
  // shim records it there, not again at exit). torch 2.x may then abort the
  // failing rank at exit (a Gloo worker thread at finalization,
  // scenarios/python/gloo_exit.py): a signal error of its own, after it.
  EXPECT_EQ(errorsOfKind(dir / "run", 1, "python_exception"), 1u) << readFile(dir / "run/ranks/1/events.jsonl");
  EXPECT_TRUE(fileExists(dir / "run/ranks/1/error.json"));
  EXPECT_EQ(rankInstruments(r, 1)["patches"]["spawn.wrap"], true);
}

TEST_F(ShimTorch, AGroupOfEveryRankSharesTheDefaultGroupsSequence) {
  // DeepSpeed all-reduces the gradients on its data-parallel group, a
  // new_group() of every rank: numbered with the default group, a scripted
  // fault at collective #K or a hang there is seen; a true subgroup's calls
  // keep their own count.
  TempDir dir;
  const int status = torchrunExec(dir, {std::string(FL_SOURCE_DIR) + "/tests/blackbox/trainers/groups.py"});
  EXPECT_EQ(status, 0) << readFile(dir / "log");
  for (int rank : {0, 1}) {
    std::vector<std::pair<std::string, json>> begins;  // (op, seq or group_seq) in order
    std::ifstream in(dir / ("run/ranks/" + std::to_string(rank) + "/events.jsonl"));
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || j.value("ev", "") != "collective_begin") continue;
      begins.emplace_back(j["op"].get<std::string>() + ":" + j.value("group", "world"),
                          j.contains("seq") ? j["seq"] : json{{"group_seq", j.value("group_seq", -1)}});
    }
    std::vector<std::pair<std::string, json>> want = {{"allreduce:world", 0}, {"allreduce:0,1", 1}};
    if (rank == 0) want.emplace_back("allreduce:0", json{{"group_seq", 0}});
    want.emplace_back("broadcast:0,1", 2);
    want.emplace_back("barrier:world", 3);
    EXPECT_EQ(begins, want) << "rank " << rank;
  }
}

TEST_F(ShimTorch, APatchThatFailsIsReportedWithItsError) {
  TempDir dir;
  // tests/blackbox/break_patch/sitecustomize.py, chained by the shim's, makes
  // all_reduce a callable the shim cannot wrap; the trainer runs as before.
  const int status = torchrunExec(dir, {trainer("clean.py")}, {{"PYTHONPATH", breakPatch()}});
  EXPECT_EQ(status, 0) << readFile(dir / "log");
  const json r = readJson(dir / "run/report.json");
  ASSERT_TRUE(r.is_object()) << readFile(dir / "log");
  EXPECT_TRUE(r["root_cause"].is_null()) << r["root_cause"].dump(1);
  for (int rank : {0, 1}) {
    const json inst = rankInstruments(r, rank);
    EXPECT_EQ(inst["patches"]["dist.all_reduce"], false) << inst.dump(1);
    EXPECT_EQ(inst["patches"]["dist.broadcast"], true);
    EXPECT_EQ(inst["failed"], json({{"dist.all_reduce", "TypeError: unexpected object 'not a signature' in "
                                                        "__signature__ attribute"}}));
  }
  // What needs every collective traced is unknown, not absent.
  ASSERT_TRUE(r["unchecked_findings"].is_array()) << r.dump(1);
  bool straggler = false;
  for (const json& u : r["unchecked_findings"]) straggler = straggler || u["kind"] == "straggler";
  EXPECT_TRUE(straggler) << r["unchecked_findings"].dump(1);
}

// hang.py with all_reduce untraced: rank 1 stops before step 3's loss
// all-reduce, rank 0 waits in it unseen. Both finished step 3, so the events
// alone would read as a shutdown hang, and they cannot say who is where: the
// stack dumps can (docs/DIAGNOSIS.md section 3). Rank 0's main thread is in
// torch.distributed's all_reduce, rank 1's in its own code: rank 1 is named,
// and the summary still says what the events could not see.
TEST_F(ShimTorch, AHangInAnUntracedCollectiveIsReadFromTheStackDumps) {
  TempDir dir;
  const std::string script = trainer("hang.py");
  torchrunExec(dir, {script, "--pg-timeout", "120"}, {{"PYTHONPATH", breakPatch()}}, "5");
  const json r = readJson(dir / "run/report.json");
  ASSERT_TRUE(r.is_object()) << readFile(dir / "log");
  const json& rc = r["root_cause"];
  ASSERT_TRUE(rc.is_object()) << r.dump(1);
  EXPECT_EQ(rc["kind"], "hung_collective") << rc.dump(1);
  EXPECT_EQ(rc["rank"], 1) << rc.dump(1);
  EXPECT_EQ(rc["waiting_ranks"], json::array({0})) << rc.dump(1);
  const std::string summary = rc.value("summary", "");
  EXPECT_NE(summary.find("rank 0 waits in all_reduce (distributed_c10d.py:"), std::string::npos) << summary;
  for (int rank : {0, 1}) {
    EXPECT_NE(summary.find("collective tracing unavailable on rank " + std::to_string(rank) +
                           " (patch dist.all_reduce failed: TypeError: "),
              std::string::npos)
        << summary;
  }
  EXPECT_EQ(summary.find("not in a collective"), std::string::npos) << summary;
  ASSERT_TRUE(rc["location"].is_object()) << rc.dump(1);
  EXPECT_EQ(rc["location"]["line"], lineOf(script, "threading.Event().wait()")) << rc.dump(1);
}

// torch's Flight Recorder (docs/DIAGNOSIS.md): when the teardown of a hang
// asks, each rank's shim thread writes torch's own dump; with every event
// removed afterwards, as in a trainer faultline could not instrument, the
// dumps alone name the rank that never entered the collective. torch 1.13
// has no recorder: nothing is written and nothing else changes.
TEST_F(ShimTorch, FlightRecorderDumpsAloneNameTheHangedRank) {
  TempDir dir;
  const std::string run = dir / "run";
  const int status = runFaultline({"exec", "--nproc", "3", "--hang-timeout", "8", "--deadline", "120", "--fault",
                                   "hung_collective:rank=1:step=3", "-o", run, "--", python(), trainer("plain_ddp.py"),
                                   "--steps", "6"},
                                  dir / "log");
  EXPECT_EQ(status, 1) << readFile(dir / "log");
  const json with_events = readJson(run + "/report.json");
  ASSERT_TRUE(with_events.is_object()) << readFile(dir / "log");
  ASSERT_EQ(with_events["root_cause"]["rank"], 1) << with_events["root_cause"].dump(1);
  const json rec = readJson(run + "/supervisor.json");
  int answered = 0;
  for (const auto& d : rec["teardown"]["stack_dumps"]) {
    if (d["method"] == "flight_recorder" && d["ok"] == true) ++answered;
  }
  EXPECT_EQ(answered, 3) << rec["teardown"].dump(1);
  if (version_.rfind("1.", 0) == 0) {
    // The shim answers so that the teardown does not wait: an empty dump that says why.
    const json d = readJson(run + "/flight_recorder/rank_0.json");
    EXPECT_EQ(d["entries"], json::array()) << d.dump();
    EXPECT_EQ(d["faultline_no_dump"], "this torch has no Flight Recorder") << d.dump();
    return;
  }
  for (int r : {0, 1, 2}) {
    ASSERT_TRUE(fileExists(run + "/flight_recorder/rank_" + std::to_string(r) + ".json")) << "rank " << r;
    std::filesystem::remove(run + "/ranks/" + std::to_string(r) + "/events.jsonl");
  }
  const int explained = runFaultline({"explain", "--json", run}, dir / "explain.json");
  // Without the events nothing shows the fault was struck: an error that says
  // so (docs/SCENARIOS.md), and the dumps still name the rank.
  ASSERT_EQ(explained, 3) << readFile(dir / "explain.json");
  const json j = readJson(dir / "explain.json");
  EXPECT_NE(j.value("fault_not_struck", "").find("rank 1 wrote no events at all"), std::string::npos) << j.dump(1);
  const json& rc = j["root_cause"];
  EXPECT_EQ(rc["kind"], "hung_collective") << rc.dump(1);
  EXPECT_EQ(rc["rank"], 1) << rc.dump(1);
  EXPECT_EQ(rc["missing_ranks"], json::array({1})) << rc.dump(1);
  EXPECT_EQ(rc["waiting_ranks"], json::array({0, 2})) << rc.dump(1);
  EXPECT_NE(rc["summary"].get<std::string>().find("from torch's Flight Recorder dumps"), std::string::npos) << rc.dump(1);
}

}  // namespace
}  // namespace faultline
