// The torch installations on this machine: each interpreter that has torch,
// its version, its launchers, and the reference trainer built against its
// LibTorch. The versioned stacks (torchrun@2.13, spawn@1.13, ...) are made of these.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/error.h"

namespace faultline::launch {

struct TorchInstall {
  std::string python;    // the interpreter that imports this torch
  std::string version;   // as torch says it: "1.13.0a0", "2.13.0+cpu"
  std::string series;    // MAJOR.MINOR, the name stacks use: "2.13"
  std::string torchrun;  // the console script beside the interpreter; "" none
  std::string trainer;   // the reference trainer built against this LibTorch; "" none
  bool has_launch = false;  // torch.distributed.launch still ships (deprecated since 2.0)
  std::string problem;   // non-empty: the interpreter or its torch cannot be used, and why
  // The frameworks installed beside this torch, by distribution name:
  // "lightning" -> "2.6.6" (the stack launchers' `framework`).
  std::map<std::string, std::string> frameworks;
  bool usable() const { return problem.empty(); }
};

// Where to look: FAULTLINE_PYTHONS (':'-separated interpreters) when set, else
// /usr/bin/python3 (Debian's torch), the python3 on PATH, every
// FAULTLINE_OPT/torch-*/bin/python and every FAULTLINE_OPT/frameworks-*/bin/python
// (FAULTLINE_OPT defaults to /opt/faultline, where ci/deps puts its venvs).
// Interpreters without torch drop out.
std::vector<std::string> torchInterpreterCandidates();

// Asks each interpreter where its torch is, without importing torch (about
// 20 ms each): the version from torch/version.py, the launchers beside it.
// `trainer_dir` holds faultline-trainer-torchMAJOR.MINOR binaries; a missing
// one leaves `trainer` empty. Installs without torch are left out; ones whose
// interpreter fails are kept with `problem` set. Newest first.
std::vector<TorchInstall> discoverTorch(const std::vector<std::string>& interpreters, const std::string& trainer_dir);

// The install a stack names: `series` ("2.13") or, empty, the newest usable
// one; one without frameworks where there is such. nullopt when there is none.
std::optional<TorchInstall> pickTorch(const std::vector<TorchInstall>& installs, const std::string& series);

// The install that has `framework` at `series` ("2.6"; empty: its newest).
std::optional<TorchInstall> pickFramework(const std::vector<TorchInstall>& installs, const std::string& framework,
                                          const std::string& series);

}  // namespace faultline::launch
