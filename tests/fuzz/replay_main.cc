// A driver for the fuzz targets where libFuzzer is not linked (the default
// GCC build): every seed, then deterministic mutations of the seeds, through
// LLVMFuzzerTestOneInput. It takes libFuzzer's flags that the targets' .args
// files and smoke tests use, so that the CTest smoke run of every target is
// the same command on every machine; coverage guidance and sanitizers come
// with the clang build (FAULTLINE_FUZZ=ON, ci/fuzz).
//   TARGET [-runs=N] [-seed=S] [-max_len=N] [-dict=FILE] [-print_final_stats=1] CORPUS_DIR...
// A broken invariant aborts (fuzz_check.h); the input is then written to
// ./crash-replay-<n> and named on stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// The input being run, for the abort handler.
const Bytes* g_current = nullptr;
uint64_t g_exec = 0;

void onAbort(int sig) {
  if (g_current) {
    const std::string name = "crash-replay-" + std::to_string(g_exec);
    if (FILE* f = std::fopen(name.c_str(), "wb")) {
      std::fwrite(g_current->data(), 1, g_current->size(), f);
      std::fclose(f);
    }
    std::fprintf(stderr, "replay: execution %llu died (signal %d); input written to %s\n",
                 static_cast<unsigned long long>(g_exec), sig, name.c_str());
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

Bytes readAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// libFuzzer's dictionary format: one `name="value"` or `"value"` per line,
// with \\, \" and \xNN escapes; # starts a comment.
std::vector<Bytes> readDict(const fs::path& p) {
  std::vector<Bytes> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    const size_t open = line.find('"');
    const size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    Bytes v;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        if (line[i + 1] == 'x' && i + 3 < close) {
          v.push_back(static_cast<uint8_t>(std::strtol(line.substr(i + 2, 2).c_str(), nullptr, 16)));
          i += 3;
        } else {
          v.push_back(static_cast<uint8_t>(line[++i]));
        }
      } else {
        v.push_back(static_cast<uint8_t>(line[i]));
      }
    }
    out.push_back(std::move(v));
  }
  return out;
}

class Mutator {
 public:
  Mutator(uint64_t seed, size_t max_len, std::vector<Bytes> dict) : rng_(seed), max_len_(max_len), dict_(std::move(dict)) {}

  // One to four random edits of `in`; `other` is a second seed for splicing.
  Bytes mutate(Bytes in, const Bytes& other) {
    const int edits = 1 + static_cast<int>(below(4));
    for (int e = 0; e < edits; ++e) edit(in, other);
    if (in.size() > max_len_) in.resize(max_len_);
    return in;
  }

 private:
  size_t below(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  uint8_t byte() {
    // Bytes that matter to text parsers, more often than chance would pick them.
    static const char kInteresting[] = "\"'\\[]{}=:,.\n\r\t #0123456789-+eE\x7f\xc0\xe2\xf0\xff";
    return below(2) ? static_cast<uint8_t>(kInteresting[below(sizeof kInteresting - 1)])
                    : static_cast<uint8_t>(below(256));
  }

  void edit(Bytes& b, const Bytes& other) {
    switch (below(8)) {
      case 0:  // flip a bit
        if (!b.empty()) b[below(b.size())] ^= static_cast<uint8_t>(1u << below(8));
        break;
      case 1:  // overwrite a byte
        if (!b.empty()) b[below(b.size())] = byte();
        break;
      case 2:  // insert a byte
        b.insert(b.begin() + static_cast<long>(below(b.size() + 1)), byte());
        break;
      case 3: {  // erase a range
        if (b.empty()) break;
        const size_t at = below(b.size());
        const size_t n = 1 + below(std::min<size_t>(16, b.size() - at));
        b.erase(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
        break;
      }
      case 4: {  // duplicate a range
        if (b.empty()) break;
        const size_t at = below(b.size());
        const size_t n = 1 + below(std::min<size_t>(64, b.size() - at));
        Bytes part(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + n));
        b.insert(b.begin() + static_cast<long>(below(b.size() + 1)), part.begin(), part.end());
        break;
      }
      case 5:  // a dictionary token
        if (!dict_.empty()) {
          const Bytes& t = dict_[below(dict_.size())];
          b.insert(b.begin() + static_cast<long>(below(b.size() + 1)), t.begin(), t.end());
        }
        break;
      case 6: {  // splice: a prefix of this input, a suffix of another
        const size_t keep = below(b.size() + 1);
        b.resize(keep);
        const size_t from = below(other.size() + 1);
        b.insert(b.end(), other.begin() + static_cast<long>(from), other.end());
        break;
      }
      default:  // truncate
        b.resize(below(b.size() + 1));
        break;
    }
  }

  std::mt19937_64 rng_;
  size_t max_len_;
  std::vector<Bytes> dict_;
};

void run(const Bytes& input) {
  g_current = &input;
  ++g_exec;
  LLVMFuzzerTestOneInput(input.data(), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t runs = 10000;
  uint64_t seed = 1;
  size_t max_len = 4096;
  bool stats = false;
  std::vector<Bytes> dict;
  std::vector<Bytes> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const std::string f = flag;
      return a.rfind(f, 0) == 0 ? argv[i] + f.size() : nullptr;
    };
    if (const char* v = value("-runs=")) {
      runs = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("-seed=")) {
      seed = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("-max_len=")) {
      max_len = std::strtoull(v, nullptr, 10);
    } else if (const char* v = value("-dict=")) {
      dict = readDict(v);
    } else if (const char* v = value("-print_final_stats=")) {
      stats = std::atoi(v) != 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "replay: ignoring libFuzzer flag %s\n", a.c_str());
    } else {
      std::error_code ec;
      if (fs::is_regular_file(a, ec)) {
        seeds.push_back(readAll(a));
        continue;
      }
      if (!fs::is_directory(a, ec)) {
        std::fprintf(stderr, "replay: %s: no such file or folder\n", a.c_str());
        return 2;
      }
      std::vector<fs::path> files;
      for (const auto& e : fs::recursive_directory_iterator(a)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());  // the same order on every machine
      for (const auto& f : files) seeds.push_back(readAll(f));
    }
  }
  std::signal(SIGABRT, onAbort);
  std::signal(SIGSEGV, onAbort);
  std::signal(SIGFPE, onAbort);
  std::signal(SIGBUS, onAbort);
  for (auto& s : seeds) {
    if (s.size() > max_len) s.resize(max_len);
  }
  seeds.push_back({});  // the empty input
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& s : seeds) run(s);
  Mutator m(seed, max_len, std::move(dict));
  std::mt19937_64 pick(seed ^ 0x9e3779b97f4a7c15ull);
  std::uniform_int_distribution<size_t> any(0, seeds.size() - 1);
  while (g_exec < runs) {
    run(m.mutate(seeds[any(pick)], seeds[any(pick)]));
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replay: %zu seeds, %llu executions in %.1f s, no crash\n", seeds.size(),
              static_cast<unsigned long long>(g_exec), s);
  if (stats) std::printf("stat::number_of_executed_units: %llu\n", static_cast<unsigned long long>(g_exec));
  return 0;
}
