// The reference trainer's run, from its command line (entry.h).
#include "reference-trainer/entry.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "faultline/probe.h"
#include "reference-trainer/options.h"
#include "reference-trainer/rank_env.h"
#include "reference-trainer/trainer.h"

extern "C" int faultline_trainer_main(int argc, char** argv) {
  using namespace faultline::trainer;
  using faultline::probe::validateFaultSpec;
  // --no-probe: the probe finds no events file to open (it opens lazily, on
  // its first event), so nothing is written, as in a program without it.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--no-probe") {
      ::unsetenv("FAULTLINE_EVENTS");
      ::unsetenv("FAULTLINE_EVENTS_DIR");
    }
  }
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
  // A fault for another attempt than this one (a restart by the launcher) is not armed here.
  if (!options->fault.inAttempt(faultline::probe::launchAttempt())) options->fault = {};
  if (options->fault.kind != faultline::probe::FaultKind::kNone) {
    // Kinds and points of the shim and the supervisor are not this trainer's to strike.
    if (auto ok = faultline::probe::checkLayer(options->fault, faultline::probe::FaultLayer::kReferenceTrainer); !ok) {
      std::fprintf(stderr, "faultline-trainer: error: %s\n", ok.error().c_str());
      return 2;
    }
  }
  // No handler around the training: an exception nobody catches reaches
  // std::terminate without unwinding, as in any LibTorch program, which prints
  // its type and what() and aborts with the process group still up. Caught
  // and rethrown here, the unwinding destroyed the process group first: under
  // LibTorch 2.x the peers' Gloo threads then aborted on "Connection closed"
  // before this rank had said why, and were the first failure seen.
  const int code = runTraining(*options, *env);
  fl_probe_exit(code);
  return code;
}
