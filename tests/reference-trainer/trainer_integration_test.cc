// faultline-trainer end to end over real Gloo collectives: a clean run trains
// and stays in sync, and every fault kind really produces its symptom. Run once
// per trainer binary (one per LibTorch, see CMakeLists.txt); one that was not
// built makes every test skip with the reason.
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/reference-trainer/rank_launcher.h"

namespace faultline::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

LaunchOptions faultRun(const std::string& kind, int rank, int step, std::vector<std::string> extra = {}) {
  LaunchOptions o;
  o.args = {"--steps", "8", "--collective-timeout", "3", "--rendezvous-timeout", "5", "--fault", kind,
            "--fault-rank", std::to_string(rank), "--fault-step", std::to_string(step)};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  return o;
}

// A code-level bug that every rank runs.
LaunchOptions faultRunAll(const std::string& kind, std::vector<std::string> extra = {}) {
  LaunchOptions o;
  o.args = {"--steps", "8", "--collective-timeout", "3", "--fault", kind, "--fault-rank", "all"};
  o.args.insert(o.args.end(), extra.begin(), extra.end());
  return o;
}

// Every rank other than `faulty` failed too, and any error it reported came
// after the fault. (Exit order proves nothing: a rank that throws destroys its
// process group while unwinding, so its peers can die before it exits.)
void expectPeersDiedAfter(const Launch& l, int faulty) {
  const auto faults = l.ranks[static_cast<size_t>(faulty)].eventsOf("fault");
  ASSERT_FALSE(faults.empty());
  const int64_t fault_t = faults.front()["t"];
  for (const auto& r : l.ranks) {
    if (r.rank == faulty) continue;
    EXPECT_FALSE(r.exitedWith(0)) << "rank " << r.rank << " should not finish cleanly";
    for (const auto& e : r.eventsOf("error")) EXPECT_GT(e["t"].get<int64_t>(), fault_t) << "rank " << r.rank;
  }
}

json errorEvent(const RankRun& r) {
  auto errors = r.eventsOf("error");
  return errors.empty() ? json() : errors.front();
}

std::map<long, std::string> fingerprints(const RankRun& r) {
  std::map<long, std::string> out;
  for (const auto& e : r.eventsOf("fingerprint")) out[e["step"].get<long>()] = e["hash"];
  return out;
}

std::set<int64_t> sampleSet(const RankRun& r, int epoch) {
  for (const auto& e : r.eventsOf("samples")) {
    if (e["epoch"] == epoch) return e["indices"].get<std::set<int64_t>>();
  }
  return {};
}

// Every test runs the trainer this run names, and skips when it was not built.
class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = trainerUnavailable(); !why.empty()) GTEST_SKIP() << why;
    ASSERT_TRUE(fs::exists(trainerBin())) << trainerBin() << " does not exist, but the build says it made it";
    RecordProperty("trainer", trainerBin());
  }
};
using TrainerClean = TrainerTest;
using TrainerFaults = TrainerTest;
using TrainerCli = TrainerTest;

TEST_F(TrainerClean, FourRanksTrainInSync) {
  LaunchOptions o;
  o.world_size = 4;
  o.args = {"--steps", "60", "--lr", "0.3", "--fingerprint-every", "10"};
  auto l = launchRanks("clean4", o);
  for (const auto& r : l.ranks) {
    ASSERT_TRUE(r.exitedWith(0)) << "rank " << r.rank << ": " << r.err;
    EXPECT_EQ(r.eventsOf("pg_init").size(), 1u);
    EXPECT_EQ(r.eventsOf("pg_destroy").size(), 1u);
    EXPECT_EQ(r.eventsOf("step_end").size(), 60u);
    EXPECT_EQ(r.eventsOf("exit").at(0)["code"], 0);
    EXPECT_TRUE(r.eventsOf("error").empty());
    // Replicas agree bit for bit at init and every 10 steps.
    EXPECT_EQ(fingerprints(r), fingerprints(l.ranks[0])) << "rank " << r.rank;
    EXPECT_EQ(fingerprints(r).size(), 7u);
    // Only rank 0 writes files.
    EXPECT_EQ(r.eventsOf("file_open").empty(), r.rank != 0);
  }
  // Shards are disjoint and cover the dataset.
  std::set<int64_t> all;
  size_t total = 0;
  for (const auto& r : l.ranks) {
    auto s = sampleSet(r, 0);
    total += s.size();
    all.insert(s.begin(), s.end());
  }
  EXPECT_EQ(total, 4096u);
  EXPECT_EQ(all.size(), 4096u);
  // The all-reduced loss decreases, and rank 0 reports it.
  std::vector<double> loss;
  for (const auto& e : l.ranks[0].eventsOf("metric")) {
    if (e["name"] == "loss" && e["scope"] == "global") loss.push_back(e["value"]);
  }
  ASSERT_EQ(loss.size(), 60u);
  double first = 0, last = 0;
  for (int i = 0; i < 10; ++i) {
    first += loss[static_cast<size_t>(i)];
    last += loss[loss.size() - 1 - static_cast<size_t>(i)];
  }
  EXPECT_LT(last, first * 0.9) << "loss did not decrease: " << first / 10 << " -> " << last / 10;
  EXPECT_TRUE(contains(l.ranks[0].out, "step 60 loss"));
  EXPECT_TRUE(fs::exists(l.dir / "out" / "checkpoint.pt"));
  EXPECT_TRUE(contains(readFile(l.dir / "out" / "train.log"), "step 60 loss"));
  // Atomic writes leave no temp files behind.
  for (const auto& entry : fs::directory_iterator(l.dir / "out")) {
    EXPECT_FALSE(contains(entry.path().filename().string(), ".tmp")) << entry.path();
  }
}

// Under the torchrun of the trainer's own PyTorch ($FAULTLINE_TRAINER_TORCHRUN):
// its agent hosts the TCPStore the trainer joins, and a 2.13 client cannot
// join a 1.13 store ("TCP client failed to connect/validate").
TEST_F(TrainerClean, RunsUnderRealTorchrun) {
  const char* env_torchrun = std::getenv("FAULTLINE_TRAINER_TORCHRUN");
  const std::string torchrun = env_torchrun ? env_torchrun : "/usr/bin/torchrun";
  if (torchrun.empty()) GTEST_SKIP() << "no torchrun of this trainer's PyTorch is known";
  if (!fs::exists(torchrun)) GTEST_SKIP() << torchrun << " is not installed";
  const fs::path dir = fs::temp_directory_path() / ("fl_trainer_torchrun_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Debian's torchrun 1.13 on Python 3.11 crashes in option parsing with its
  // default --redirects/--tee; 2/2 works and keeps per-rank logs.
  const std::string cmd = "cd " + dir.string() + " && timeout 120 " + torchrun + " --no_python --nproc_per_node=4 " +
                          "--master_port " + std::to_string(freePort()) + " --redirects 2 --tee 2 --log_dir " +
                          (dir / "logs").string() + " " + trainerBin() + " --steps 20 --out-dir " +
                          (dir / "out").string() + " > stdout 2> stderr";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << readFile(dir / "stderr");
  EXPECT_TRUE(contains(readFile(dir / "stdout"), "step 20 loss"));
  EXPECT_TRUE(fs::exists(dir / "out" / "checkpoint.pt"));
}

TEST_F(TrainerFaults, UndefinedSymbolKillsRankWithLoaderError) {
  auto l = launchRanks("undef", faultRun("undefined_symbol", 1, 3));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.exitedWith(127)) << r1.err;
  EXPECT_TRUE(contains(r1.err, "symbol lookup error: "));
  EXPECT_TRUE(contains(r1.err, "libfaultline_trainer_ext.so: undefined symbol: _ZN11trainer_ext13fusedAdamStepEPfi"));
  EXPECT_EQ(r1.eventsOf("fault").at(0)["kind"], "undefined_symbol");
  EXPECT_TRUE(r1.eventsOf("pg_destroy").empty());  // the loader gives no chance to clean up
  expectPeersDiedAfter(l, 1);
}

TEST_F(TrainerFaults, UndefinedSymbolAtLoadBecomesUncaughtException) {
  auto l = launchRanks("undefnow", faultRun("undefined_symbol", 1, 3, {"--fault-arg", "now"}));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.killedBy(SIGABRT)) << r1.err;
  EXPECT_TRUE(contains(r1.err, "terminate called after throwing an instance of 'std::runtime_error'"));
  EXPECT_TRUE(contains(r1.err, "undefined symbol: _ZN11trainer_ext13fusedAdamStepEPfi"));
  EXPECT_EQ(errorEvent(r1)["type"], "std::runtime_error");
  // Not unwound: terminate aborts with the group still up, as in any LibTorch
  // program (unwinding first let 2.x peers abort before this rank said why).
  EXPECT_TRUE(r1.eventsOf("pg_destroy").empty());
  expectPeersDiedAfter(l, 1);
}

TEST_F(TrainerFaults, CppExceptionIsC10ErrorWithLocation) {
  auto l = launchRanks("cppexc", faultRun("cpp_exception", 1, 3));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.killedBy(SIGABRT));
  EXPECT_TRUE(contains(r1.err, "terminate called after throwing an instance of 'c10::Error'"));
  auto e = errorEvent(r1);
  EXPECT_EQ(e["type"], "c10::Error");
  EXPECT_TRUE(contains(e["message"], "mat1 and mat2 shapes cannot be multiplied"));
  EXPECT_TRUE(e["file"].is_string());
  EXPECT_GT(e["line"].get<int>(), 0);
  EXPECT_TRUE(r1.eventsOf("pg_destroy").empty());  // not unwound (above)
  expectPeersDiedAfter(l, 1);
  // The survivor's own error is a peer error: collateral, not a cause.
  EXPECT_TRUE(contains(l.ranks[0].err, "Connection") || contains(l.ranks[0].err, "Timed out"));
}

TEST_F(TrainerFaults, ExceptionInDataThread) {
  auto l = launchRanks("thread", faultRun("exception_in_thread", 1, 3));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.killedBy(SIGABRT));
  EXPECT_EQ(errorEvent(r1)["type"], "std::runtime_error");
  EXPECT_TRUE(contains(errorEvent(r1)["message"], "data loader worker"));
  expectPeersDiedAfter(l, 1);
}

TEST_F(TrainerFaults, SegfaultReportedBySignalHandler) {
  auto l = launchRanks("segv", faultRun("segfault", 1, 3));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.killedBy(SIGSEGV));
  auto e = errorEvent(r1);
  EXPECT_EQ(e["kind"], "signal");
  EXPECT_EQ(e["type"], "SIGSEGV");
  bool named = false;
  for (const auto& f : e["stack"]) named |= contains(f.get<std::string>(), "crashWithSegfault");
  EXPECT_TRUE(named) << e["stack"].dump();
  expectPeersDiedAfter(l, 1);
}

TEST_F(TrainerFaults, AbortSigkillAndExit) {
  auto a = launchRanks("abort", faultRun("abort", 1, 2));
  EXPECT_TRUE(a.ranks[1].killedBy(SIGABRT));
  EXPECT_EQ(errorEvent(a.ranks[1])["type"], "SIGABRT");
  expectPeersDiedAfter(a, 1);

  auto k = launchRanks("sigkill", faultRun("sigkill", 1, 2));
  EXPECT_TRUE(k.ranks[1].killedBy(SIGKILL));
  EXPECT_TRUE(k.ranks[1].eventsOf("error").empty());  // nothing runs after SIGKILL
  expectPeersDiedAfter(k, 1);

  auto x = launchRanks("exit", faultRun("exit", 1, 2, {"--fault-arg", "3"}));
  EXPECT_TRUE(x.ranks[1].exitedWith(3));
  EXPECT_TRUE(x.ranks[1].eventsOf("pg_destroy").empty());
  expectPeersDiedAfter(x, 1);
}

TEST_F(TrainerFaults, OomFailsAllocationInsideTheRank) {
  auto l = launchRanks("oom", faultRun("oom", 1, 2));
  const auto& r1 = l.ranks[1];
  EXPECT_TRUE(r1.killedBy(SIGABRT)) << r1.err;
  EXPECT_TRUE(contains(r1.err, "DefaultCPUAllocator: can't allocate memory"));
  expectPeersDiedAfter(l, 1);
}

TEST_F(TrainerFaults, HungCollectiveBlocksPeersUntilTimeout) {
  auto o = faultRun("hung_collective", 1, 3);
  o.after_failure = std::chrono::milliseconds(500);
  auto l = launchRanks("hang", o);
  const auto& r0 = l.ranks[0];
  const auto& r1 = l.ranks[1];
  // Rank 1 sleeps forever: only the launcher ends it.
  EXPECT_TRUE(r1.killed_by_launcher);
  EXPECT_EQ(r1.eventsOf("fault").at(0)["kind"], "hung_collective");
  // Rank 0 waited in the step-3 gradient all-reduce for the full 3 s timeout.
  EXPECT_TRUE(r0.killedBy(SIGABRT)) << r0.err;
  EXPECT_TRUE(contains(r0.err, "Timed out waiting 3000ms"));
  auto begins = r0.eventsOf("collective_begin");
  auto ends = r0.eventsOf("collective_end");
  ASSERT_EQ(begins.size(), ends.size() + 1);  // one collective never finished
  EXPECT_EQ(begins.back()["op"], "allreduce");
  EXPECT_GE(r0.eventsOf("error").at(0)["t"].get<int64_t>() - begins.back()["t"].get<int64_t>(), 2'900'000'000LL);
  // Rank 1 never began that collective.
  int64_t stuck = begins.back()["seq"];
  for (const auto& b : r1.eventsOf("collective_begin")) EXPECT_LT(b["seq"].get<int64_t>(), stuck);
}

TEST_F(TrainerFaults, SkippedCollectiveDesynchronisesTheGroup) {
  auto l = launchRanks("skip", faultRun("hung_collective", 1, 3, {"--fault-arg", "skip"}));
  EXPECT_FALSE(l.ranks[0].exitedWith(0));
  EXPECT_FALSE(l.ranks[1].exitedWith(0));
  // Rank 1's collectives from step 3 on carry the sequence numbers rank 0 used for other work.
  std::map<int64_t, std::string> ops0, ops1;
  for (const auto& e : l.ranks[0].eventsOf("collective_begin")) ops0[e["seq"]] = e["op"].get<std::string>() + std::to_string(e["numel"].get<int64_t>());
  for (const auto& e : l.ranks[1].eventsOf("collective_begin")) ops1[e["seq"]] = e["op"].get<std::string>() + std::to_string(e["numel"].get<int64_t>());
  bool mismatch = false;
  for (const auto& [seq, op] : ops1) mismatch |= ops0.count(seq) && ops0[seq] != op;
  EXPECT_TRUE(mismatch);
}

TEST_F(TrainerFaults, CollectiveMismatchBySizeAndByOp) {
  auto s = launchRanks("mismatch_size", faultRun("collective_mismatch", 1, 3));
  EXPECT_FALSE(s.ranks[0].exitedWith(0));
  EXPECT_FALSE(s.ranks[1].exitedWith(0));
  auto last0 = s.ranks[0].eventsOf("collective_begin").back();
  auto last1 = s.ranks[1].eventsOf("collective_begin").back();
  EXPECT_EQ(last0["seq"], last1["seq"]);
  EXPECT_EQ(last1["numel"].get<int64_t>(), last0["numel"].get<int64_t>() + 1);

  auto o = launchRanks("mismatch_op", faultRun("collective_mismatch", 1, 3, {"--fault-arg", "op"}));
  EXPECT_FALSE(o.ranks[0].exitedWith(0));
  EXPECT_FALSE(o.ranks[1].exitedWith(0));
  auto b0 = o.ranks[0].eventsOf("collective_begin").back();
  auto b1 = o.ranks[1].eventsOf("collective_begin").back();
  EXPECT_EQ(b0["seq"], b1["seq"]);
  EXPECT_EQ(b0["op"], "allreduce");
  EXPECT_EQ(b1["op"], "broadcast");
}

TEST_F(TrainerFaults, SeedMismatchReplicasDiverge) {
  auto l = launchRanks("seed", faultRun("seed_mismatch", 1, 1));
  ASSERT_TRUE(l.ranks[0].exitedWith(0) && l.ranks[1].exitedWith(0));
  auto f0 = fingerprints(l.ranks[0]), f1 = fingerprints(l.ranks[1]);
  ASSERT_TRUE(f0.count(0) && f1.count(0));
  EXPECT_NE(f0[0], f1[0]);  // at init
  EXPECT_TRUE(l.ranks[0].eventsOf("collective_begin").front()["op"] != "broadcast");
}

TEST_F(TrainerFaults, UnshardedDataEveryRankSeesEverything) {
  auto l = launchRanks("unsharded", faultRunAll("unsharded_data", {"--dataset-size", "1024"}));
  ASSERT_TRUE(l.ranks[0].exitedWith(0) && l.ranks[1].exitedWith(0));
  auto s0 = sampleSet(l.ranks[0], 0), s1 = sampleSet(l.ranks[1], 0);
  EXPECT_EQ(s0.size(), 1024u);
  EXPECT_EQ(s0, s1);  // 100% overlap
}

TEST_F(TrainerFaults, UnsyncedMetricsRankZeroReportsLocalLoss) {
  auto l = launchRanks("unsynced", faultRun("unsynced_metrics", 0, 1));
  ASSERT_TRUE(l.ranks[0].exitedWith(0) && l.ranks[1].exitedWith(0));
  std::map<long, double> global0, local0, local1;
  for (const auto& e : l.ranks[0].eventsOf("metric")) {
    if (e["name"] != "loss") continue;
    (e["scope"] == "global" ? global0 : local0)[e["step"]] = e["value"];
  }
  for (const auto& e : l.ranks[1].eventsOf("metric")) {
    if (e["name"] == "loss") local1[e["step"]] = e["value"];
  }
  ASSERT_EQ(global0.size(), 8u);
  for (const auto& [step, g] : global0) {
    EXPECT_DOUBLE_EQ(g, local0[step]);
    EXPECT_NE(g, (local0[step] + local1[step]) / 2);
  }
}

TEST_F(TrainerFaults, ConcurrentWritesInterleaveInOneFile) {
  auto l = launchRanks("writes", faultRunAll("concurrent_writes"));
  ASSERT_TRUE(l.ranks[0].exitedWith(0) && l.ranks[1].exitedWith(0));
  const std::string log = readFile(l.dir / "out" / "train.log");
  EXPECT_TRUE(contains(log, "rank 0 step")) << log;
  EXPECT_TRUE(contains(log, "rank 1 step")) << log;
  std::set<std::string> paths0, paths1;
  for (const auto& e : l.ranks[0].eventsOf("file_open")) paths0.insert(e["path"]);
  for (const auto& e : l.ranks[1].eventsOf("file_open")) paths1.insert(e["path"]);
  EXPECT_TRUE(paths0.count((l.dir / "out" / "train.log").string()));
  EXPECT_TRUE(paths1.count((l.dir / "out" / "train.log").string()));
  EXPECT_TRUE(paths1.count((l.dir / "out" / "checkpoint.pt").string()));
}

TEST_F(TrainerFaults, StragglerSlowsItsStepsAndItsPeers) {
  auto l = launchRanks("straggler", faultRun("straggler", 1, 2, {"--fault-arg", "150"}));
  ASSERT_TRUE(l.ranks[0].exitedWith(0) && l.ranks[1].exitedWith(0));
  auto stepTimes = [](const RankRun& r) {
    std::map<long, int64_t> begin, out;
    for (const auto& e : r.eventsOf("step_begin")) begin[e["step"]] = e["t"];
    for (const auto& e : r.eventsOf("step_end")) out[e["step"]] = e["t"].get<int64_t>() - begin[e["step"]];
    return out;
  };
  auto t1 = stepTimes(l.ranks[1]);
  for (long s = 2; s <= 8; ++s) EXPECT_GE(t1[s], 150'000'000) << "step " << s;
  EXPECT_LT(t1[1], 150'000'000);
}

TEST_F(TrainerFaults, RendezvousFailureRankNeverJoins) {
  auto l = launchRanks("rdzv", faultRun("rendezvous_failure", 1, 1));
  EXPECT_TRUE(l.ranks[1].exitedWith(1));
  EXPECT_TRUE(l.ranks[1].eventsOf("pg_init").empty());
  EXPECT_TRUE(contains(l.ranks[1].err, "cannot reach the rendezvous"));
  EXPECT_FALSE(l.ranks[0].exitedWith(0));
  EXPECT_TRUE(l.ranks[0].eventsOf("pg_init").empty());  // it waited for rank 1 until the store timeout

  auto w = launchRanks("rdzv_port", faultRun("rendezvous_failure", 1, 1, {"--fault-arg", "wrong_port"}));
  EXPECT_TRUE(w.ranks[1].killedBy(SIGABRT));
  EXPECT_TRUE(contains(w.ranks[1].err, "client socket has timed out"));
  EXPECT_FALSE(w.ranks[0].exitedWith(0));
}

TEST_F(TrainerCli, BadEnvironmentAndFlagsExitTwo) {
  const std::string bin = trainerBin();
  EXPECT_EQ(std::system(("env -u RANK -u WORLD_SIZE " + bin + " 2>/dev/null").c_str()) >> 8, 2);
  EXPECT_EQ(std::system(("RANK=0 WORLD_SIZE=1 MASTER_ADDR=x MASTER_PORT=1 " + bin + " --steps -3 2>/dev/null").c_str()) >> 8, 2);
  EXPECT_EQ(std::system(("RANK=0 WORLD_SIZE=2 MASTER_ADDR=x MASTER_PORT=1 " + bin + " --fault segfault --fault-rank 2 2>/dev/null").c_str()) >> 8, 2);
}

}  // namespace
}  // namespace faultline::testing
