// The probe: well-formed JSON lines, no torn lines under concurrency, and crash
// handlers that report and then die by the same signal.
#include "faultline/probe.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

[[noreturn]] void throwC10Like() {
  throw std::runtime_error(
      "mat1 and mat2 shapes cannot be multiplied (32x4 and 5x4)\nException raised from meta at "
      "./aten/src/ATen/native/LinearAlgebra.cpp:73 (most recent call first):\nframe #0: ...");
}

// Outside the anonymous namespace and exported (ENABLE_EXPORTS), so dladdr names it.
[[noreturn]] void throwUncaught() { throw std::runtime_error("checkpoint shape mismatch"); }

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path freshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("fl_probe_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<json> readEvents(const fs::path& file) {
  std::vector<json> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));  // throws on a torn line
  return out;
}

// Runs `body` in a forked child with the probe pointed at `events`; returns the wait status.
template <class F>
int inChild(const fs::path& events, const char* rank, F body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FAULTLINE_EVENTS", events.c_str(), 1);
    ::setenv("RANK", rank, 1);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(Probe, WritesEveryContractEvent) {
  auto dir = freshDir("all");
  auto events = dir / "events.jsonl";
  int status = inChild(events, "3", [] {
    fl_probe_start(4, "gloo", "cpu");
    fl_probe_pg_init("gloo");
    fl_probe_step_begin(1, 0);
    fl_probe_collective_begin("allreduce", 7, 1024, "float32");
    fl_probe_collective_end("allreduce", 7, 1024, "float32");
    fl_probe_step_end(1, 0);
    fl_probe_fingerprint("params", 1, 0xdeadbeefULL);
    const int64_t idx[] = {5, 1, 9};
    fl_probe_samples(0, 3, fl_probe_hash_indices(idx, 3), 5, 9, idx, 3);
    fl_probe_metric("loss", 0.25, "global", 1);
    fl_probe_metric("loss", 0.0 / 0.0, "local", 1);
    fl_probe_file_open("relative/ckpt.pt", "w");
    fl_probe_fault("segfault", 3);
    const char* frames[] = {"#0 main", "#1 \"quoted\"\n"};
    fl_probe_error("cpp_exception", "std::runtime_error", "bad \xff byte", "train.cc", 12, frames, 2);
    fl_probe_pg_destroy("gloo");
    fl_probe_exit(0);
  });
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 15u);
  for (const auto& e : ev) {
    EXPECT_EQ(e["rank"], 3);
    EXPECT_TRUE(e["t"].is_number_integer());
    EXPECT_GT(e["t"].get<int64_t>(), 1'600'000'000'000'000'000LL);  // ns, not s
    EXPECT_TRUE(e["pid"].is_number_integer());
  }
  EXPECT_EQ(ev[0]["ev"], "start");
  EXPECT_EQ(ev[0]["world_size"], 4);
  EXPECT_EQ(ev[3]["op"], "allreduce");
  EXPECT_EQ(ev[3]["seq"], 7);
  EXPECT_EQ(ev[3]["numel"], 1024);
  EXPECT_EQ(ev[6]["hash"], "00000000deadbeef");
  EXPECT_EQ(ev[7]["indices"], json::array({5, 1, 9}));
  EXPECT_EQ(ev[7]["first"], 5);
  EXPECT_DOUBLE_EQ(ev[8]["value"].get<double>(), 0.25);
  EXPECT_TRUE(ev[9]["value"].is_null());
  EXPECT_TRUE(fs::path(ev[10]["path"].get<std::string>()).is_absolute());
  EXPECT_EQ(ev[12]["line"], 12);
  EXPECT_EQ(ev[12]["stack"][1], "#1 \"quoted\"\n");
  EXPECT_EQ(ev[12]["message"], "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(ev[14]["code"], 0);
}

// A surrogate, an overlong form and a truncated sequence have the bit
// patterns of UTF-8 sequences; the probe checks code points, so each line
// still parses as strict UTF-8 JSON (readEvents throws otherwise).
TEST(Probe, CollectiveCallSiteAndJoiningTheGroup) {
  const fs::path dir = freshDir("site");
  const fs::path file = dir / "events.jsonl";
  const int status = inChild(file, "1", [] {
    fl_probe_pg_init_begin("gloo");
    fl_probe_pg_init_begin(nullptr);
    fl_probe_collective_begin_at("barrier", 3, 0, "none", "trainer.cc:328");
    fl_probe_collective_begin_at("barrier", 4, 0, "none", "");
    fl_probe_collective_begin("barrier", 5, 0, "none");
  });
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto ev = readEvents(file);
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0]["ev"], "pg_init_begin");
  EXPECT_EQ(ev[0]["backend"], "gloo");
  EXPECT_FALSE(ev[1].contains("backend"));
  EXPECT_EQ(ev[2]["site"], "trainer.cc:328");
  EXPECT_EQ(ev[2]["seq"], 3);
  EXPECT_FALSE(ev[3].contains("site"));  // "" and the old call write none
  EXPECT_FALSE(ev[4].contains("site"));
  fs::remove_all(dir);
}

TEST(Probe, IllFormedUtf8InAStringBecomesReplacementCharacters) {
  auto dir = freshDir("utf8");
  auto events = dir / "events.jsonl";
  int status = inChild(events, "0", [] {
    const char* frames[] = {"#0 \xf4\x90\x80\x80"};
    fl_probe_error("cpp_exception", "std::runtime_error", "surrogate \xed\xa0\x80 overlong \xc0\xaf cut \xe2\x82",
                   "train\xed\xbf\xbf.cc", 1, frames, 1);
  });
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string r = "\xEF\xBF\xBD";
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["message"], "surrogate " + r + r + r + " overlong " + r + r + " cut " + r);
  EXPECT_EQ(ev[0]["file"], "train" + r + r + r + ".cc");
  EXPECT_EQ(ev[0]["stack"][0], "#0 " + r + r + r + r);
}

TEST(Probe, NoOpWithoutEnvironment) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::unsetenv("FAULTLINE_EVENTS");
    ::unsetenv("FAULTLINE_EVENTS_DIR");
    fl_probe_step_begin(1, 0);
    ::_exit(fl_probe_active() == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(Probe, EventsDirUsesRankSubdirectory) {
  auto dir = freshDir("dir");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::unsetenv("FAULTLINE_EVENTS");
    ::setenv("FAULTLINE_EVENTS_DIR", dir.c_str(), 1);
    ::setenv("RANK", "2", 1);
    fl_probe_exit(0);
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto ev = readEvents(dir / "2" / "events.jsonl");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["rank"], 2);
}

TEST(Probe, ConcurrentWritersNeverTearLines) {
  auto dir = freshDir("threads");
  auto events = dir / "events.jsonl";
  constexpr int kThreads = 8, kPerThread = 2000;
  int status = inChild(events, "0", [] {
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([t] {
        for (int i = 0; i < kPerThread; ++i) fl_probe_collective_begin("allreduce", i, t, "float32");
      });
    }
    for (auto& t : ts) t.join();
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(readEvents(events).size(), static_cast<size_t>(kThreads * kPerThread));
}

TEST(Probe, IndicesOmittedAboveLimit) {
  auto dir = freshDir("big");
  auto events = dir / "events.jsonl";
  inChild(events, "0", [] {
    std::vector<int64_t> idx(5000);
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
    fl_probe_samples(0, 5000, fl_probe_hash_indices(idx.data(), idx.size()), 0, 4999, idx.data(), idx.size());
  });
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_FALSE(ev[0].contains("indices"));
  EXPECT_EQ(ev[0]["count"], 5000);
}

TEST(Probe, IndexHashIsOrderIndependent) {
  const int64_t a[] = {1, 2, 3, 4};
  const int64_t b[] = {4, 2, 3, 1};
  const int64_t c[] = {1, 2, 3, 5};
  EXPECT_EQ(fl_probe_hash_indices(a, 4), fl_probe_hash_indices(b, 4));
  EXPECT_NE(fl_probe_hash_indices(a, 4), fl_probe_hash_indices(c, 4));
}

TEST(ProbeCrash, SegfaultIsReportedAndExitStatusUnchanged) {
  auto dir = freshDir("segv");
  auto events = dir / "events.jsonl";
  int status = inChild(events, "1", [] {
    fl_probe_install_crash_handlers();
    volatile int* p = nullptr;
    *p = 42;
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["ev"], "error");
  EXPECT_EQ(ev[0]["kind"], "signal");
  EXPECT_EQ(ev[0]["type"], "SIGSEGV");
  EXPECT_NE(ev[0]["message"].get<std::string>().find("segmentation fault"), std::string::npos);
  EXPECT_GT(ev[0]["stack"].size(), 0u);
}

TEST(ProbeCrash, AbortIsReported) {
  auto dir = freshDir("abrt");
  auto events = dir / "events.jsonl";
  int status = inChild(events, "1", [] {
    fl_probe_install_crash_handlers();
    std::abort();
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "SIGABRT");
}

TEST(ProbeCrash, UncaughtExceptionNamesTypeAndWhatOnce) {
  auto dir = freshDir("terminate");
  auto events = dir / "events.jsonl";
  int status = inChild(events, "0", [] {
    fl_probe_install_crash_handlers();
    std::thread t([] { throwUncaught(); });
    t.join();
  });
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);  // std::terminate aborts, as without the probe
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);  // the abort() that follows adds no second error
  EXPECT_EQ(ev[0]["kind"], "cpp_exception");
  EXPECT_EQ(ev[0]["type"], "std::runtime_error");
  EXPECT_EQ(ev[0]["message"], "checkpoint shape mismatch");
  bool sawThrower = false;
  for (const auto& f : ev[0]["stack"]) sawThrower |= f.get<std::string>().find("throwUncaught") != std::string::npos;
  EXPECT_TRUE(sawThrower) << ev[0]["stack"].dump();
}

TEST(ProbeCrash, ExceptionSourceLocationIsExtracted) {
  auto dir = freshDir("c10loc");
  auto events = dir / "events.jsonl";
  inChild(events, "0", [] {
    fl_probe_install_crash_handlers();
    std::thread t([] { throwC10Like(); });  // outside gtest's own try block
    t.join();
  });
  auto ev = readEvents(events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["file"], "./aten/src/ATen/native/LinearAlgebra.cpp");
  EXPECT_EQ(ev[0]["line"], 73);
}

}  // namespace
