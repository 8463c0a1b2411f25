// Native fault actions.
#include "reference-trainer/faults.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "faultline/probe.h"

namespace faultline::trainer {

using probe::faultKindName;

namespace {

// The folder of the trainer's own file, after symlinks: the program's, or
// the library's when a Python process loaded it (entry.h).
std::string trainerDir() {
  Dl_info info{};
  std::string path;
  if (::dladdr(reinterpret_cast<void*>(&trainerDir), &info) != 0 && info.dli_fname && info.dli_fname[0] == '/') {
    char buf[PATH_MAX];
    if (::realpath(info.dli_fname, buf)) path = buf;
  }
  if (path.empty()) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    path.assign(buf, static_cast<size_t>(n));
  }
  return path.substr(0, path.rfind('/'));
}

}  // namespace

void announceFault(const FaultSpec& spec, long step, int rank) {
  const std::string kind(faultKindName(spec.kind));
  fl_probe_fault(kind.c_str(), step);
  std::fprintf(stderr, "[faultline-trainer rank %d] injecting fault %s at step %ld%s%s\n", rank, kind.c_str(), step,
               spec.arg.empty() ? "" : " arg=", spec.arg.c_str());
  std::fflush(stderr);
}

void crashWithSegfault() {
  volatile int* p = nullptr;
  *p = 1;
  std::abort();  // unreachable: the write faults
}

void crashWithAbort() { std::abort(); }

void killSelf(int signal) {
  ::kill(::getpid(), signal);
  for (;;) ::pause();
}

void exitWithoutCleanup(int code) {
  std::fflush(nullptr);
  std::exit(code);
}

void sleepForever() {
  for (;;) ::pause();
}

void sleepMs(long ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

void callBrokenExtension(bool now) {
  const std::string path = trainerDir() + "/" FAULTLINE_PLUGIN_FILE;
  void* handle = ::dlopen(path.c_str(), now ? RTLD_NOW : RTLD_LAZY);
  if (!handle) throw std::runtime_error(std::string("cannot load trainer extension: ") + ::dlerror());
  using Entry = int (*)(float*, int);
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "faultline_ext_fused_step"));
  if (!entry) throw std::runtime_error(std::string("trainer extension has no entry point: ") + ::dlerror());
  float buf[4] = {0, 0, 0, 0};
  entry(buf, 4);  // resolving the missing symbol here ends the process
}

void limitAddressSpace(size_t headroom_mb) {
  size_t pages = 0;
  std::ifstream statm("/proc/self/statm");
  statm >> pages;
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) +
                       static_cast<rlim_t>(headroom_mb) * 1024 * 1024;
  struct rlimit rl {limit, limit};
  if (::setrlimit(RLIMIT_AS, &rl) != 0) std::perror("setrlimit(RLIMIT_AS)");
}

}  // namespace faultline::trainer
