// Micro-benchmarks of the diagnose stage's hot parts: events.jsonl parsing
// (per line and per MB), the stderr scanners (Python tracebacks, native
// errors, the collateral classifier) over a realistic 10 MB log and per line,
// and timeline building (analyzeRun) over 64 ranks x 10k events.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "harness/diagnose/analyze.h"
#include "harness/diagnose/collateral.h"
#include "harness/diagnose/events.h"
#include "harness/diagnose/native_error.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"

namespace faultline::diagnose {
namespace {

constexpr int64_t kT0 = 1'796'000'000'000'000'000;

std::string eventLine(const char* ev, int rank, int64_t t, const std::string& extra) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "{\"t\":%lld,\"rank\":%d,\"pid\":%d,\"ev\":\"%s\"%s%s}\n", static_cast<long long>(t),
                rank, 10000 + rank, ev, extra.empty() ? "" : ",", extra.c_str());
  return buf;
}

// One rank's events.jsonl as the reference trainer writes it: pg_init, then
// per step step_begin, two all-reduces (begin+end) and step_end; `n` events.
std::string rankEvents(int rank, size_t n, int64_t stop_step = -1) {
  std::string out = eventLine("pg_init", rank, kT0 + rank * 1000, "\"backend\":\"gloo\"");
  int64_t t = kT0 + rank * 1000;
  size_t count = 1;
  for (int64_t s = 0; count < n; ++s) {
    t += 1'000'000;
    out += eventLine("step_begin", rank, t, "\"step\":" + std::to_string(s) + ",\"epoch\":0");
    ++count;
    if (s == stop_step) break;
    for (int c = 0; c < 2 && count < n; ++c) {
      for (const char* kind : {"collective_begin", "collective_end"}) {
        t += 100'000;
        out += eventLine(kind, rank, t,
                         "\"op\":\"allreduce\",\"seq\":" + std::to_string(s * 2 + c) +
                             ",\"numel\":65536,\"dtype\":\"float32\"");
        ++count;
      }
    }
    t += 1'000'000;
    if (count < n) {
      out += eventLine("step_end", rank, t, "\"step\":" + std::to_string(s) + ",\"epoch\":0");
      ++count;
    }
  }
  return out;
}

// A realistic failing rank's stderr: warnings and progress lines, Gloo
// collateral errors' text, then the NameError traceback at the end.
std::string rankLog(size_t bytes) {
  std::string out;
  out.reserve(bytes + 1024);
  for (size_t i = 0; out.size() < bytes; ++i) {
    switch (i % 4) {
      case 0: out += "WARNING:root:rank 17 slow data loader at step " + std::to_string(i % 991) + "\n"; break;
      case 1:
        out += "[rank 17] step " + std::to_string(i % 997) + " loss 0.123456 lr 0.05 throughput 1234.5 samples/s\n";
        break;
      case 2: out += "/usr/lib/python3/dist-packages/torch/nn/modules/module.py:1194: UserWarning: deprecated\n"; break;
      default: out += "  return forward_call(*input, **kwargs)\n"; break;
    }
  }
  out += "Traceback (most recent call last):\n"
         "  File \"/app/train.py\", line 88, in <module>\n    main()\n"
         "  File \"/app/train.py\", line 42, in main\n    b = c\n        ^\n"
         "NameError: name 'c' is not defined\n";
  return out;
}

const std::string& tenMegabyteLog() {
  static const std::string log = rankLog(10u << 20);
  return log;
}

// --- events.jsonl ------------------------------------------------------------

void BM_ParseEventLine(benchmark::State& state) {
  const std::string line = eventLine("collective_begin", 3, kT0,
                                     "\"op\":\"allreduce\",\"seq\":17,\"numel\":1048576,\"dtype\":\"float32\"");
  const std::string_view view(line.data(), line.size() - 1);
  for (auto _ : state) benchmark::DoNotOptimize(parseEventLine(view));
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(view.size()));
}
BENCHMARK(BM_ParseEventLine);

void BM_ParseEventsOneMegabyte(benchmark::State& state) {
  std::string text = rankEvents(0, 1'000'000);
  text.resize(text.rfind('\n', 1u << 20) + 1);
  size_t lines = 0;
  for (auto _ : state) {
    EventLog log = parseEvents(text);
    lines = log.events.size();
    benchmark::DoNotOptimize(log);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_ParseEventsOneMegabyte)->Unit(benchmark::kMillisecond);

// --- rank output ---------------------------------------------------------------

// Everything diagnosis runs over one rank's text (splitLines, tracebacks, the
// anchored native parsers, stack dumps), over the whole 10 MB...
void BM_ScanRankLogTenMegabytes(benchmark::State& state) {
  const std::string& log = tenMegabyteLog();
  for (auto _ : state) {
    RankLog r = scanRankLog(log);
    if (r.errors.empty() || r.errors.back().type != "NameError") state.SkipWithError("NameError not found");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(log.size()));
}
BENCHMARK(BM_ScanRankLogTenMegabytes)->Unit(benchmark::kMillisecond);

// ...and over the 1 MiB tail that diagnosis actually reads of each stderr.
void BM_ScanRankLogTail(benchmark::State& state) {
  const std::string& log = tenMegabyteLog();
  const std::string tail = tailOf(log, kMaxLogBytes);
  for (auto _ : state) benchmark::DoNotOptimize(scanRankLog(tail));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(tail.size()));
}
BENCHMARK(BM_ScanRankLogTail)->Unit(benchmark::kMillisecond);

void BM_PythonTracebacksTenMegabytes(benchmark::State& state) {
  const std::vector<std::string_view> lines = splitLines(tenMegabyteLog());
  for (auto _ : state) {
    auto chains = parsePythonTracebacks(lines);
    if (chains.size() != 1) state.SkipWithError("expected one traceback");
    benchmark::DoNotOptimize(chains);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(lines.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(tenMegabyteLog().size()));
}
BENCHMARK(BM_PythonTracebacksTenMegabytes)->Unit(benchmark::kMillisecond);

void BM_SplitLinesTenMegabytes(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(splitLines(tenMegabyteLog()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(tenMegabyteLog().size()));
}
BENCHMARK(BM_SplitLinesTenMegabytes)->Unit(benchmark::kMillisecond);

// Per line: the collateral classifier on a primary error (the whole pattern
// list is tried) and on a peer disconnect.
void BM_ClassifyCollateralPrimary(benchmark::State& state) {
  const std::string text = "NameError: name 'c' is not defined";
  for (auto _ : state) benchmark::DoNotOptimize(classifyCollateral(text));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassifyCollateralPrimary);

void BM_ClassifyCollateralPeerClosed(benchmark::State& state) {
  const std::string text =
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4711";
  for (auto _ : state) benchmark::DoNotOptimize(classifyCollateral(text));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassifyCollateralPeerClosed);

// Per line: the native parsers on an ordinary line and on their own evidence.
void BM_NativeParsersOrdinaryLine(benchmark::State& state) {
  const std::string line = "[rank 17] step 512 loss 0.123456 lr 0.05 throughput 1234.5 samples/s";
  for (auto _ : state) {
    benchmark::DoNotOptimize(parseUndefinedSymbol(line));
    benchmark::DoNotOptimize(parseFatalSignal(line));
    benchmark::DoNotOptimize(parseOom(line));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NativeParsersOrdinaryLine);

void BM_UndefinedSymbolLine(benchmark::State& state) {
  const std::string line =
      "faultline-trainer: symbol lookup error: /build/libfaultline_trainer_ext.so: undefined symbol: "
      "_ZN11trainer_ext13fusedAdamStepERN2at6TensorE";
  for (auto _ : state) benchmark::DoNotOptimize(parseUndefinedSymbol(line));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_UndefinedSymbolLine);

// --- timeline ------------------------------------------------------------------

// 64 ranks x 10k events, rank 17 fails with a NameError, the others end with
// a peer disconnect: analyzeRun names the root cause and builds the timeline.
RunInput bigRun(size_t events_per_rank) {
  RunInput in;
  in.dir = "/nonexistent";
  in.launcher_name = "builtin";
  in.world_size = 64;
  for (int r = 0; r < 64; ++r) {
    RankInput ri;
    ri.rank = r;
    ri.pid = 10000 + r;
    ri.started = true;
    ri.exit_known = true;
    ri.exit_code = 1;
    ri.start_ns = kT0;
    ri.events = parseEvents(rankEvents(r, events_per_rank));
    int64_t last = 0;
    for (const Event& e : ri.events.events) last = std::max(last, e.t);
    ri.exit_ns = last + (r == 17 ? 1'000'000 : 50'000'000);
    Evidence e;
    e.kind = Kind::kPythonException;
    e.origin = "stderr";
    if (r == 17) {
      e.type = "NameError";
      e.message = "name 'c' is not defined";
      e.location = Location{"/app/train.py", 42};
    } else {
      e.type = "RuntimeError";
      e.message = "[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:4711";
      e.collateral = true;
      e.collateral_reason = collateralKindName(CollateralKind::kPeerClosed);
    }
    ri.errors.push_back(e);
    in.ranks[r] = std::move(ri);
  }
  return in;
}

void BM_AnalyzeRun64Ranks10kEvents(benchmark::State& state) {
  const RunInput in = bigRun(10'000);
  size_t entries = 0;
  for (auto _ : state) {
    Diagnosis d = analyzeRun(in);
    if (!d.root_cause || d.root_cause->rank != 17) state.SkipWithError("wrong root cause");
    entries = d.timeline.size();
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations() * 64 * 10'000);
  state.SetLabel(std::to_string(entries) + " timeline entries");
}
BENCHMARK(BM_AnalyzeRun64Ranks10kEvents)->Unit(benchmark::kMillisecond);

// Parsing those events from text first, as diagnosis does.
void BM_ParseAndAnalyze64Ranks10kEvents(benchmark::State& state) {
  std::vector<std::string> texts;
  for (int r = 0; r < 64; ++r) texts.push_back(rankEvents(r, 10'000));
  RunInput in = bigRun(1);
  size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  for (auto _ : state) {
    for (int r = 0; r < 64; ++r) in.ranks[r].events = parseEvents(texts[r]);
    benchmark::DoNotOptimize(analyzeRun(in));
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_ParseAndAnalyze64Ranks10kEvents)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace faultline::diagnose

BENCHMARK_MAIN();
