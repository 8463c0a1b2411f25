// The interposer's cost per call: write(2), pwrite(2) and open(2)+close(2),
// the calls a trainer makes most. The binary knows nothing of the interposer;
// bench/preload_overhead.py runs it plain and under LD_PRELOAD with and
// without a rank, recording and an armed (never matching) injection rule.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

namespace {

std::string scratchDir() {
  const char* d = std::getenv("BENCH_DIR");
  return d ? d : "/tmp";
}

void BM_WriteDevNull(benchmark::State& state) {
  const int fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  char buf[64] = {};
  for (auto _ : state) benchmark::DoNotOptimize(::write(fd, buf, sizeof buf));
  ::close(fd);
}
BENCHMARK(BM_WriteDevNull);

// A regular file: where an armed write rule has to look (fstat, readlink).
void BM_PwriteRegularFile(benchmark::State& state) {
  const std::string path = scratchDir() + "/pwrite.bin";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[64] = {};
  for (auto _ : state) benchmark::DoNotOptimize(::pwrite(fd, buf, sizeof buf, 0));
  ::close(fd);
  ::unlink(path.c_str());
}
BENCHMARK(BM_PwriteRegularFile);

// The same path reopened: recorded once, then found in the per-process table.
void BM_OpenForWritingClose(benchmark::State& state) {
  const std::string path = scratchDir() + "/open.bin";
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    benchmark::DoNotOptimize(fd);
    ::close(fd);
  }
  ::unlink(path.c_str());
}
BENCHMARK(BM_OpenForWritingClose);

void BM_OpenForReadingClose(benchmark::State& state) {
  for (auto _ : state) {
    const int fd = ::open("/etc/passwd", O_RDONLY | O_CLOEXEC);
    benchmark::DoNotOptimize(fd);
    ::close(fd);
  }
}
BENCHMARK(BM_OpenForReadingClose);

}  // namespace

BENCHMARK_MAIN();
