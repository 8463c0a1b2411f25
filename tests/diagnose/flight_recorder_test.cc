// torch's Flight Recorder dumps: the pickle reader and the dump reader on
// dumps torch 2.13 wrote here (tests/fixtures/flight_recorder), and the
// collectives they give the hang analysis.
#include "harness/diagnose/flight_recorder.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/diagnose/collectives.h"
#include "harness/diagnose/pickle.h"
#include "tests/diagnose/test_util.h"
#include "harness/model/supervisor_record.h"

namespace faultline::diagnose {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string dumps() { return testing::sourceDir() + "/tests/fixtures/flight_recorder/gloo-2.13-hang"; }

TEST(Pickle, TorchsPickleReadsAsTheSameDumpItsJsonIs) {
  for (int rank : {0, 1}) {
    auto p = unpickle(testing::readFile(dumps() + "/rank_" + std::to_string(rank)));
    ASSERT_TRUE(p) << p.error().message;
    const json j = json::parse(testing::readFile(dumps() + "/rank_" + std::to_string(rank) + ".json"));
    EXPECT_EQ((*p)["version"], j["version"]);
    // pg_status: ints in the pickle, their text in the JSON (torch writes them so).
    EXPECT_EQ((*p)["pg_status"]["0"]["last_completed_collective"].dump(), j["pg_status"]["0"]["last_completed_collective"]);
    ASSERT_EQ((*p)["entries"].size(), j["entries"].size());
    for (size_t i = 0; i < j["entries"].size(); ++i) {
      const json& a = (*p)["entries"][i];
      const json& b = j["entries"][i];
      for (const char* k : {"collective_seq_id", "profiling_name", "input_sizes", "input_dtypes", "state", "retired",
                            "time_created_ns", "process_group", "is_p2p"}) {
        EXPECT_EQ(a[k], b[k]) << "rank " << rank << " entry " << i << " " << k;
      }
      // None in the pickle, 0 in the JSON: never discovered either way.
      EXPECT_TRUE(a["time_discovered_started_ns"].is_null());
    }
  }
}

TEST(Pickle, ReadsEveryPlainDataOpcodeAndRefusesObjects) {
  // {"a": [1, -2, 300, 70000, 2**40, -1.5, True, None], "b": ("x", "yz")}, protocol 2 by CPython.
  const std::string bytes(
      "\x80\x02\x7d\x71\x00\x28\x58\x01\x00\x00\x00\x61\x71\x01\x5d\x71"
      "\x02\x28\x4b\x01\x4a\xfe\xff\xff\xff\x4d\x2c\x01\x4a\x70\x11\x01"
      "\x00\x8a\x06\x00\x00\x00\x00\x00\x01\x47\xbf\xf8\x00\x00\x00\x00"
      "\x00\x00\x88\x4e\x65\x58\x01\x00\x00\x00\x62\x71\x03\x58\x01\x00"
      "\x00\x00\x78\x71\x04\x58\x02\x00\x00\x00\x79\x7a\x71\x05\x86\x71"
      "\x06\x75\x2e",
      83);
  auto v = unpickle(bytes);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(*v, json::parse(R"({"a": [1, -2, 300, 70000, 1099511627776, -1.5, true, null], "b": ["x", "yz"]})"));
  // A GLOBAL (an object's class) is never followed.
  auto g = unpickle(std::string("\x80\x02" "cos\nsystem\n" ".", 14));
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("byte 2"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("not plain data"), std::string::npos);
  // Truncated: names what is missing.
  auto t = unpickle(std::string("\x80\x02X\x05\x00\x00\x00ab", 9));
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("truncated"), std::string::npos) << t.error().message;
  EXPECT_FALSE(unpickle(std::string("\x80\x02}", 3)));  // no STOP
}

TEST(FlightRecorder, OpsAreTheShimsNames) {
  EXPECT_EQ(opFromProfilingName("nccl:all_reduce"), "allreduce");
  EXPECT_EQ(opFromProfilingName("gloo:all_reduce"), "allreduce");
  EXPECT_EQ(opFromProfilingName("nccl:all_reduce_barrier"), "barrier");
  EXPECT_EQ(opFromProfilingName("nccl:_allgather_base"), "allgather");
  EXPECT_EQ(opFromProfilingName("nccl:all_gather_into_tensor_coalesced"), "allgather");
  EXPECT_EQ(opFromProfilingName("nccl:_reduce_scatter_base"), "reduce_scatter");
  EXPECT_EQ(opFromProfilingName("nccl:all_to_all"), "alltoall");
  EXPECT_EQ(opFromProfilingName("gloo:broadcast"), "broadcast");
  EXPECT_EQ(opFromProfilingName("nccl:allreduce_coalesced"), "allreduce_coalesced");
}

TEST(FlightRecorder, TheRankThatNeverEnteredIsNamedFromTheDumps) {
  const FlightRecorderDumps d = readFlightRecorderDumps(dumps());
  EXPECT_TRUE(d.problems.empty());
  ASSERT_EQ(d.by_rank.size(), 2u);
  EXPECT_EQ(d.by_rank.at(0).version, "2.10");
  ASSERT_EQ(d.by_rank.at(0).entries.size(), 5u);
  const FlightRecorderEntry& last = d.by_rank.at(0).entries.back();
  EXPECT_EQ(last.op, "allreduce");
  EXPECT_EQ(last.numel, 16);
  EXPECT_EQ(last.dtype, "float");
  EXPECT_TRUE(last.default_group);
  EXPECT_FALSE(last.ended());
  EXPECT_TRUE(d.by_rank.at(1).entries.back().ended());
  const auto events = collectiveEventsOf(d);
  EventLog l0{events.at(0)}, l1{events.at(1)};
  const auto hung = findHungCollective({{0, &l0}, {1, &l1}});
  ASSERT_TRUE(hung);
  EXPECT_EQ(hung->collective.seq, 4);  // the recorder's 5th, counted from 0 as the shim counts
  EXPECT_EQ(hung->collective.op, "allreduce");
  EXPECT_EQ(hung->missing, std::vector<int>{1});
  EXPECT_EQ(hung->waiting, std::vector<int>{0});
}

TEST(FlightRecorder, OnlyTheWindowEveryRingStillHoldsIsCompared) {
  faultline::testing::TempDir dir;
  auto entry = [](int seq, bool retired) {
    return json{{"collective_seq_id", seq}, {"profiling_name", "nccl:all_reduce"}, {"process_group", {"0", "default_pg"}},
                {"input_sizes", {{4}}}, {"input_dtypes", {"Float"}}, {"state", retired ? "completed" : "started"},
                {"retired", retired}, {"time_created_ns", 1000 + seq}, {"is_p2p", false}};
  };
  // Rank 0's ring dropped calls 1-2, rank 1's kept them: 1-2 are no evidence against rank 0.
  json r0 = {{"version", "2.10"}, {"entries", {entry(3, true), entry(4, false)}}};
  json r1 = {{"version", "2.10"}, {"entries", {entry(1, true), entry(2, true), entry(3, true)}}};
  std::ofstream(dir.path() + "/rank_0") << r0.dump();
  std::ofstream(dir.path() + "/rank_1.json") << r1.dump();
  std::ofstream(dir.path() + "/rank_2") << "not a dump";
  const FlightRecorderDumps d = readFlightRecorderDumps(dir.path());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_NE(d.problems[0].find("flight_recorder/rank_2: neither a pickle nor JSON"), std::string::npos) << d.problems[0];
  const auto events = collectiveEventsOf(d);
  for (const auto& [rank, evs] : events) {
    for (const Event& e : evs) EXPECT_GE(e.seq, 2) << "rank " << rank;
  }
  EventLog l0{events.at(0)}, l1{events.at(1)};
  const auto hung = findHungCollective({{0, &l0}, {1, &l1}});
  ASSERT_TRUE(hung);
  EXPECT_EQ(hung->collective.seq, 3);
  EXPECT_EQ(hung->missing, std::vector<int>{1});
}

TEST(FlightRecorder, AnUninstrumentedRunGetsItsHangFromTheDumps) {
  // A run directory with no events at all: the ranks' stderr and the dumps.
  faultline::testing::TempDir dir;
  fs::create_directories(dir.path() + "/flight_recorder");
  for (int r : {0, 1}) {
    fs::create_directories(dir.path() + "/ranks/" + std::to_string(r));
    fs::copy_file(dumps() + "/rank_" + std::to_string(r), dir.path() + "/flight_recorder/rank_" + std::to_string(r));
    std::ofstream(dir.path() + "/ranks/" + std::to_string(r) + "/stderr") << "";
  }
  // The supervisor called a hang and stopped both ranks.
  SupervisorRecord rec;
  rec.launcher = "builtin";
  rec.world_size = 2;
  rec.trigger = {TriggerKind::kHang, 2'000, std::nullopt, "no progress for 10 s"};
  for (int r : {0, 1}) {
    SupervisedRank sr;
    sr.rank = r;
    sr.pid = 100 + r;
    sr.start_ns = 1;
    sr.exit_ns = 3'000;
    sr.signal = "SIGTERM";
    sr.killed_by_teardown = true;
    rec.ranks.push_back(sr);
  }
  ASSERT_TRUE(writeSupervisorRecord(rec, dir.path() + "/supervisor.json"));
  auto report = testing::diagnosedReport(dir.path());
  ASSERT_TRUE(report) << report.error().message;
  ASSERT_TRUE(report->root_cause);
  EXPECT_EQ(report->root_cause->kind, Kind::kHungCollective);
  EXPECT_NE(report->root_cause->summary.find("rank 1 never entered allreduce #4"), std::string::npos)
      << report->root_cause->summary;
  EXPECT_NE(report->root_cause->summary.find("from torch's Flight Recorder dumps"), std::string::npos)
      << report->root_cause->summary;
}

}  // namespace
}  // namespace faultline::diagnose
