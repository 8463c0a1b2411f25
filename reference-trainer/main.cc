// faultline-trainer: the reference LibTorch DDP trainer. Runs under torchrun
// --no_python, faultline, or a shell loop that sets the torchrun environment.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "faultline/probe.h"
#include "reference-trainer/options.h"
#include "reference-trainer/rank_env.h"
#include "reference-trainer/trainer.h"

int main(int argc, char** argv) {
  using namespace faultline::trainer;
  using faultline::probe::validateFaultSpec;
  fl_probe_install_crash_handlers();
  const char* fault_env = std::getenv("FAULTLINE_FAULT");
  auto options = parseOptions(std::vector<std::string>(argv + 1, argv + argc), fault_env ? fault_env : "");
  if (!options) {
    std::fprintf(stderr, "faultline-trainer: error: %s\n", options.error().c_str());
    return 2;
  }
  if (options->help) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  auto env = readRankEnv();
  if (!env) {
    std::fprintf(stderr, "faultline-trainer: error: %s\n", env.error().c_str());
    return 2;
  }
  if (auto ok = validateFaultSpec(options->fault, env->world_size); !ok) {
    std::fprintf(stderr, "faultline-trainer: error: %s\n", ok.error().c_str());
    return 2;
  }
  try {
    const int code = runTraining(*options, *env);
    fl_probe_exit(code);
    return code;
  } catch (...) {
    // The stack has unwound, so the process group is already destroyed.
    // Rethrowing an exception nobody catches calls std::terminate, which
    // prints the type and what() and aborts, as an uncaught exception does.
    throw;
  }
}
