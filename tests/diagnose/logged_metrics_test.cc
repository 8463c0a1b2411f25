// unsynced_metrics from metric sinks (logged_metrics.h), on metric_log lines
// as the shim writes them: values that differ across ranks, a rank-0-only
// value that met no collective, and the twins that must stay clean.
#include "harness/diagnose/logged_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace faultline::diagnose {
namespace {

// ranks[r]: that rank's metric_log lines, without the envelope.
RunInput runOf(const std::vector<std::vector<std::string>>& ranks) {
  RunInput in;
  in.world_size = static_cast<int>(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    RankInput& ri = in.ranks[static_cast<int>(r)];
    ri.rank = static_cast<int>(r);
    for (const auto& fields : ranks[r]) {
      auto e = parseEventLine(R"({"t":1,"rank":)" + std::to_string(r) + R"(,"pid":1,"ev":"metric_log",)" + fields + "}");
      EXPECT_TRUE(e) << fields;
      if (e) ri.events.events.push_back(*e);
    }
  }
  return in;
}

std::string lightning(int n, double v, bool sync, const std::string& extra = "") {
  return R"("sink":"lightning","name":"val_acc","n":)" + std::to_string(n) + R"(,"value":)" + std::to_string(v) +
         R"(,"step":)" + std::to_string(n - 1) + R"(,"sync":)" + (sync ? "true" : "false") +
         R"(,"stage":"validation","epoch_level":true,"monitored":true,"site":"train.py:40")" + extra;
}

TEST(LoggedMetrics, LightningValueThatDiffersAcrossRanksIsAnErrorWithItsFix) {
  auto f = findUnsyncedLoggedMetrics(runOf({{lightning(1, 0.5, false)}, {lightning(1, 0.75, false)}, {lightning(1, 0.625, false)}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, Kind::kUnsyncedMetrics);
  EXPECT_EQ(f[0].severity, "error");
  ASSERT_TRUE(f[0].metric);
  EXPECT_EQ(f[0].metric->name, "val_acc");
  EXPECT_EQ(f[0].metric->why, "differs_across_ranks");
  EXPECT_EQ(f[0].metric->values.size(), 3u);
  EXPECT_EQ(f[0].metric->logged_by, (std::vector<int>{0}));
  EXPECT_EQ(f[0].metric->step, 0);
  EXPECT_NE(f[0].fix.find("sync_dist=True"), std::string::npos) << f[0].fix;
  EXPECT_NE(f[0].summary.find("at epoch 0"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].evidence.find("It is recommended to use `self.log('val_acc'"), std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("train.py:40"), std::string::npos);
}

TEST(LoggedMetrics, AgreeingValuesAreClean) {
  EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{lightning(1, 0.5, true)}, {lightning(1, 0.5, true)}})).empty());
}

TEST(LoggedMetrics, ATrainingLossIsAWarningAndComesAfterTheError) {
  const std::string loss0 = R"("sink":"lightning","name":"train_loss","n":1,"value":0.9,"step":1,"sync":false,"stage":"training","epoch_level":false)";
  const std::string loss1 = R"("sink":"lightning","name":"train_loss","n":1,"value":0.7,"step":1,"sync":false,"stage":"training","epoch_level":false)";
  auto f = findUnsyncedLoggedMetrics(runOf({{loss0, lightning(1, 0.5, false)}, {loss1, lightning(1, 0.75, false)}}));
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].metric->name, "val_acc");
  EXPECT_EQ(f[1].metric->name, "train_loss");
  EXPECT_EQ(f[1].severity, "warning");
  EXPECT_NE(f[1].summary.find("at step 1"), std::string::npos) << f[1].summary;
}

TEST(LoggedMetrics, ATorchmetricsObjectWithoutSyncGetsItsOwnFix) {
  const std::string tm = R"(,"type":"MulticlassAccuracy")";
  auto f = findUnsyncedLoggedMetrics(runOf({{lightning(1, 0.5, false, tm)}, {lightning(1, 0.75, false, tm)}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].fix.find("sync_on_compute=True"), std::string::npos) << f[0].fix;
  EXPECT_NE(f[0].evidence.find("MulticlassAccuracy with sync_on_compute=False"), std::string::npos);
}

TEST(LoggedMetrics, ARankZeroValueThatMetNoCollective) {
  const std::string tb = R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.6,"step":0,"collective":false,"shard":true)";
  auto f = findUnsyncedLoggedMetrics(runOf({{tb}, {}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].metric->why, "no_collective");
  EXPECT_EQ(f[0].metric->logged_by, (std::vector<int>{0}));
  EXPECT_EQ(f[0].severity, "error");  // a validation metric by its name
  EXPECT_NE(f[0].fix.find("all_reduce"), std::string::npos);
}

TEST(LoggedMetrics, ARankZeroValueOfUnknownProvenanceIsNotJudged) {
  // No "collective": a float no .item() gave, or a collective ran since (an all_reduce before it).
  const std::string tb = R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.6,"step":0)";
  EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{tb}, {}})).empty());
}

TEST(LoggedMetrics, RankZeroEvaluatingTheWholeSetAloneLogsTheJobsValue) {
  // `if rank == 0: evaluate(model.module, full_val_loader)`: no collective, and none needed.
  const std::string tb = R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.6,"collective":false,"shard":false)";
  EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{tb}, {}})).empty());
}

TEST(LoggedMetrics, ANameThatSaysItIsOneRanksIsNotJudged) {
  const std::string r0 = R"("sink":"lightning","name":"val_acc_rank0","n":1,"value":0.5,"sync":false)";
  const std::string r1 = R"("sink":"tensorboard","name":"rank1/loss","n":1,"value":0.7,"collective":false,"shard":true)";
  EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{r0}, {r1}})).empty());
}

TEST(LoggedMetrics, ATimeOrMemoryOfEachRankIsNotJudged) {
  for (const std::string name : {"step_time", "epoch/duration", "samples_per_sec", "gpu_mem", "throughput"}) {
    const std::string r0 = R"("sink":"lightning","name":")" + name + R"(","n":1,"value":0.31,"sync":false)";
    const std::string r1 = R"("sink":"lightning","name":")" + name + R"(","n":1,"value":0.29,"sync":false)";
    EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{r0}, {r1}})).empty()) << name;
  }
  // Not every "time" is one: a timestep's loss is the model's.
  const std::string a = R"("sink":"lightning","name":"timestep_loss","n":1,"value":0.31,"sync":false)";
  const std::string b = R"("sink":"lightning","name":"timestep_loss","n":1,"value":0.29,"sync":false)";
  EXPECT_EQ(findUnsyncedLoggedMetrics(runOf({{a}, {b}})).size(), 1u);
}

TEST(LoggedMetrics, ATensorBoardWriteOfAFrameworksValueIsTheFrameworks) {
  const std::string acc0 = R"("sink":"accelerate","name":"val_acc","n":1,"value":0.5,"step":0)";
  const std::string acc1 = R"("sink":"accelerate","name":"val_acc","n":1,"value":0.7,"step":0)";
  const std::string tb = R"("sink":"tensorboard","name":"val_acc","n":1,"value":0.5,"step":0,"collective":false,"shard":true)";
  auto f = findUnsyncedLoggedMetrics(runOf({{acc0, tb}, {acc1}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].metric->sink, "accelerate");
  EXPECT_NE(f[0].fix.find("gather_for_metrics"), std::string::npos);
}

TEST(LoggedMetrics, ATensorBoardWriteOfAMetricsComputeIsTheMetrics) {
  // A plain loop: every rank computes a MulticlassAccuracy(sync_on_compute=False),
  // and rank 0 writes its own .item() to TensorBoard as val/acc.
  const std::string tm0 = R"("sink":"torchmetrics","name":"MulticlassAccuracy","n":1,"value":0.5,"sync":false)";
  const std::string tm1 = R"("sink":"torchmetrics","name":"MulticlassAccuracy","n":1,"value":0.7,"sync":false)";
  const std::string tb =
      R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.5,"step":0,"collective":false,"shard":true,"site":"train.py:98")";
  auto f = findUnsyncedLoggedMetrics(runOf({{tm0, tb}, {tm1}}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].metric->sink, "torchmetrics");
  EXPECT_EQ(f[0].metric->name, "MulticlassAccuracy");
  EXPECT_EQ(f[0].severity, "error");  // written as a validation metric
  EXPECT_NE(f[0].fix.find("sync_on_compute=True"), std::string::npos) << f[0].fix;
  EXPECT_NE(f[0].evidence.find("a torchmetrics MulticlassAccuracy with sync_on_compute=False"), std::string::npos);
  EXPECT_NE(f[0].evidence.find("rank 0 wrote its compute() through SummaryWriter.add_scalar as 'val/acc' at train.py:98"),
            std::string::npos)
      << f[0].evidence;
  // A write of another value stays its own.
  const std::string other =
      R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.6,"step":0,"collective":false,"shard":true)";
  auto g = findUnsyncedLoggedMetrics(runOf({{tm0, other}, {tm1}}));
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].metric->sink, "tensorboard");
}

TEST(LoggedMetrics, OneRankIsTheWholeJob) {
  const std::string tb = R"("sink":"tensorboard","name":"val/acc","n":1,"value":0.6,"collective":false,"shard":true)";
  EXPECT_TRUE(findUnsyncedLoggedMetrics(runOf({{tb}})).empty());
}

}  // namespace
}  // namespace faultline::diagnose
