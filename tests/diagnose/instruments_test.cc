// The shim's per-rank patch table: parsed from hand-written `instrument`
// events, what a failed patch leaves out, and report.json's instruments.ranks.
#include "harness/diagnose/instruments.h"

#include <gtest/gtest.h>

namespace faultline::diagnose {
namespace {

// As the shim writes them (harness/probe/python/faultline_shim/_instrument.py).
constexpr const char* kEvents =
    R"({"t":1,"rank":1,"pid":7,"ev":"start","world_size":2}
{"t":2,"rank":1,"pid":7,"ev":"instrument","patch":"stacks.sigusr1","applied":true}
{"t":3,"rank":1,"pid":7,"ev":"instrument","patch":"dist.all_reduce","applied":false,"error":"TypeError: unexpected object 'broken' in __signature__ attribute","torch":"2.13.0+cpu"}
{"t":4,"rank":1,"pid":7,"ev":"instrument","patch":"dist.broadcast","applied":true,"torch":"2.13.0+cpu"}
{"t":5,"rank":1,"pid":7,"ev":"instrument","patch":"ddp.fingerprint","applied":true,"torch":"2.13.0+cpu"}
{"t":6,"rank":1,"pid":7,"ev":"collective_begin","op":"allreduce","seq":0,"numel":1,"dtype":"float32"}
{"t":7,"rank":1,"pid":7,"ev":"instrument","patch":"ddp.fingerprint","applied":false,"error":"at run time: AttributeError: 'NoneType' object has no attribute 'parameters'","torch":"2.13.0+cpu"}
{"t":8,"rank":1,"pid":7,"ev":"instrument","patch":"optim.step","applied":"yes"}
{"t":9,"rank":1,"pid":7,"ev":"instrument","applied":true}
)";

TEST(Instruments, EventsParseIntoThePatchTable) {
  const EventLog log = parseEvents(kEvents);
  EXPECT_EQ(log.malformed, 0u);
  const auto inst = rankInstruments(log);
  ASSERT_TRUE(inst);
  EXPECT_EQ(inst->torch, "2.13.0+cpu");
  // The line without a boolean "applied" and the one without a patch say nothing.
  ASSERT_EQ(inst->patches.size(), 4u);
  EXPECT_TRUE(inst->patches.at("stacks.sigusr1").applied);
  EXPECT_TRUE(inst->patches.at("dist.broadcast").applied);
  EXPECT_FALSE(inst->patches.at("dist.all_reduce").applied);
  EXPECT_EQ(inst->patches.at("dist.all_reduce").error,
            "TypeError: unexpected object 'broken' in __signature__ attribute");
  // Broken at run time after it applied: the later outcome stands.
  EXPECT_FALSE(inst->patches.at("ddp.fingerprint").applied);
  EXPECT_EQ(inst->patches.at("ddp.fingerprint").error.rfind("at run time: AttributeError", 0), 0u);
}

TEST(Instruments, ARankWithoutInstrumentEventsIsUnknownNotMissing) {
  EXPECT_FALSE(rankInstruments(parseEvents(R"({"t":1,"rank":0,"pid":7,"ev":"start"})")));
  EXPECT_FALSE(rankInstruments(EventLog{}));
}

TEST(Instruments, MissingEvidenceNamesThePatchAndItsError) {
  const auto inst = rankInstruments(parseEvents(kEvents));
  ASSERT_TRUE(inst);
  EXPECT_EQ(missingEvidence(*inst, ShimEvidence::kCollectives),
            "patch dist.all_reduce failed: TypeError: unexpected object 'broken' in __signature__ attribute");
  EXPECT_EQ(missingEvidence(*inst, ShimEvidence::kFingerprint),
            "patch ddp.fingerprint failed: at run time: AttributeError: 'NoneType' object has no attribute "
            "'parameters'");
  EXPECT_FALSE(missingEvidence(*inst, ShimEvidence::kSamples));
  EXPECT_FALSE(missingEvidence(*inst, ShimEvidence::kProcessGroup));
  EXPECT_FALSE(missingEvidence(*inst, ShimEvidence::kSteps));
}

TEST(Instruments, PatchFamilies) {
  EXPECT_TRUE(patchFeeds("dist.barrier", ShimEvidence::kCollectives));
  EXPECT_TRUE(patchFeeds("dist._broadcast_coalesced", ShimEvidence::kCollectives));
  EXPECT_TRUE(patchFeeds("ddp.grad_allreduce", ShimEvidence::kCollectives));
  EXPECT_TRUE(patchFeeds("ddp.forward", ShimEvidence::kSteps));
  EXPECT_TRUE(patchFeeds("optim.step", ShimEvidence::kSteps));
  EXPECT_TRUE(patchFeeds("dist.destroy_process_group", ShimEvidence::kProcessGroup));
  EXPECT_FALSE(patchFeeds("dist.init_process_group", ShimEvidence::kCollectives));
  EXPECT_TRUE(patchFeeds("dist", ShimEvidence::kCollectives));  // the whole c10d patch failed
  EXPECT_TRUE(patchFeeds("ddp", ShimEvidence::kFingerprint));
  EXPECT_FALSE(patchFeeds("errors.excepthook", ShimEvidence::kCollectives));
  EXPECT_TRUE(patchFeeds("data.dataloader", ShimEvidence::kSamples));
}

TEST(Instruments, ReportFieldShape) {
  std::map<int, RankInstruments> ranks;
  ranks[1] = *rankInstruments(parseEvents(kEvents));
  ranks[0].patches["dist.all_reduce"] = PatchOutcome{true, ""};
  const nlohmann::json j = instrumentsJson(ranks);
  EXPECT_EQ(j, nlohmann::json::parse(R"({
    "0": {"torch": null, "patches": {"dist.all_reduce": true}, "failed": {}},
    "1": {"torch": "2.13.0+cpu",
          "patches": {"stacks.sigusr1": true, "dist.all_reduce": false, "dist.broadcast": true,
                      "ddp.fingerprint": false},
          "failed": {"dist.all_reduce": "TypeError: unexpected object 'broken' in __signature__ attribute",
                     "ddp.fingerprint": "at run time: AttributeError: 'NoneType' object has no attribute 'parameters'"}}
  })"));
}

}  // namespace
}  // namespace faultline::diagnose
