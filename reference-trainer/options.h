// The trainer's command line. No LibTorch, so it is unit-tested cheaply.
#pragma once

#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "harness/probe/fault_spec.h"

namespace faultline::trainer {

using probe::FaultKind;
using probe::FaultSpec;

struct Options {
  long steps = 20;          // total optimizer steps across epochs
  long epochs = 0;          // 0: as many epochs as `steps` needs
  long batch_size = 32;     // per rank
  long hidden = 64;
  long dataset_size = 4096;
  unsigned long seed = 1234;
  double lr = 0.05;
  double bucket_cap_mb = 25.0;
  std::string backend = "auto";  // auto | gloo | nccl
  std::string device = "auto";   // auto | cpu | cuda
  double collective_timeout_s = 1800;  // as PyTorch's default process-group timeout
  double rendezvous_timeout_s = 300;
  long fingerprint_every = 10;
  long checkpoint_every = 0;  // 0: only at the end
  std::string out_dir;        // default: $FAULTLINE_RUN_DIR/trainer, else ./faultline-trainer-out
  FaultSpec fault;
  // --no-probe: write no events, as a LibTorch program that never linked the
  // probe (the harness then sees the rank only from outside: /proc, stacks).
  bool no_probe = false;
  bool help = false;
};

std::string usage();

// What --device auto means: "cuda" where NCCL is compiled in and each of the
// node's ranks has a GPU of its own (rank R takes cuda:LOCAL_RANK), else
// "cpu". Every rank of a node decides alike, so no job mixes NCCL and Gloo;
// two ranks on one GPU is a configuration NCCL refuses.
std::string autoDevice(bool nccl_compiled, long gpus, int local_world_size);
// argv without the program name. FAULTLINE_FAULT (if given) is the fault unless --fault is on the line.
tl::expected<Options, std::string> parseOptions(const std::vector<std::string>& args,
                                                const std::string& fault_env = {});

}  // namespace faultline::trainer
