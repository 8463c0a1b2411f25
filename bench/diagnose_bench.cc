// Diagnosis speed on a large run: 64 ranks, 10 MB of log per rank (stdout and
// stderr), 1000 steps of events per rank, one NameError on rank 17, peer
// errors on every other rank. Goal (issue 4): well under 1 s.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "harness/diagnose/diagnose.h"

namespace {

namespace fs = std::filesystem;

constexpr int kRanks = 64;
constexpr size_t kLogBytes = 10u << 20;
constexpr int kSteps = 1000;

std::string makeRunDir() {
  const fs::path dir = fs::temp_directory_path() / ("faultline_diag_bench_" + std::to_string(::getpid()));
  if (fs::exists(dir / "ready")) return dir.string();
  fs::create_directories(dir);
  const int64_t t0 = 1'796'000'000'000'000'000;
  for (int r = 0; r < kRanks; ++r) {
    const fs::path rd = dir / "ranks" / std::to_string(r);
    fs::create_directories(rd);
    {
      std::ofstream out(rd / "stdout");
      std::string line;
      for (size_t n = 0; n < kLogBytes / 2;) {
        line = "[rank " + std::to_string(r) + "] step " + std::to_string(n % 997) +
               " loss 0.123456 lr 0.05 throughput 1234.5 samples/s\n";
        out << line;
        n += line.size();
      }
    }
    {
      std::ofstream err(rd / "stderr");
      std::string line;
      for (size_t n = 0; n < kLogBytes / 2;) {
        line = "WARNING:root:rank " + std::to_string(r) + " slow data loader at step " + std::to_string(n % 991) + "\n";
        err << line;
        n += line.size();
      }
      if (r == 17) {
        err << "Traceback (most recent call last):\n"
               "  File \"/app/train.py\", line 88, in <module>\n    main()\n"
               "  File \"/app/train.py\", line 42, in main\n    b = c\n        ^\n"
               "NameError: name 'c' is not defined\n";
      } else {
        err << "Traceback (most recent call last):\n"
               "  File \"/app/train.py\", line 50, in step\n    loss.backward()\n"
               "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.17]:4711\n";
      }
    }
    std::ofstream ev(rd / "events.jsonl");
    int64_t t = t0 + r * 1000;
    char buf[256];
    const int pid = 10000 + r;
    std::snprintf(buf, sizeof buf, "{\"t\":%lld,\"rank\":%d,\"pid\":%d,\"ev\":\"pg_init\",\"backend\":\"gloo\"}\n",
                  static_cast<long long>(t), r, pid);
    ev << buf;
    const int last = r == 17 ? 600 : kSteps;
    for (int s = 0; s < last; ++s) {
      t += 1'000'000;
      std::snprintf(buf, sizeof buf, "{\"t\":%lld,\"rank\":%d,\"pid\":%d,\"ev\":\"step_begin\",\"step\":%d,\"epoch\":0}\n",
                    static_cast<long long>(t), r, pid, s);
      ev << buf;
      if (r != 17 && s == 600) break;  // the others die in the step after rank 17
      for (int c = 0; c < 2; ++c) {
        for (const char* kind : {"collective_begin", "collective_end"}) {
          t += 100'000;
          std::snprintf(buf, sizeof buf,
                        "{\"t\":%lld,\"rank\":%d,\"pid\":%d,\"ev\":\"%s\",\"op\":\"allreduce\",\"seq\":%d,"
                        "\"numel\":65536,\"dtype\":\"float32\"}\n",
                        static_cast<long long>(t), r, pid, kind, s * 2 + c);
          ev << buf;
        }
      }
      t += 1'000'000;
      std::snprintf(buf, sizeof buf, "{\"t\":%lld,\"rank\":%d,\"pid\":%d,\"ev\":\"step_end\",\"step\":%d,\"epoch\":0}\n",
                    static_cast<long long>(t), r, pid, s);
      ev << buf;
    }
  }
  std::ofstream(dir / "ready") << "ok\n";
  return dir.string();
}

void BM_Diagnose64Ranks10MB(benchmark::State& state) {
  const std::string dir = makeRunDir();
  for (auto _ : state) {
    auto d = faultline::diagnose::diagnoseRun(dir);
    if (!d || !d->root_cause || d->root_cause->rank != 17) {
      state.SkipWithError("wrong diagnosis");
      break;
    }
    benchmark::DoNotOptimize(*d);
  }
  state.SetLabel("64 ranks x 10 MB logs + 1000 steps of events");
}
BENCHMARK(BM_Diagnose64Ranks10MB)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::error_code ec;
  fs::remove_all(fs::temp_directory_path() / ("faultline_diag_bench_" + std::to_string(::getpid())), ec);
  return 0;
}
