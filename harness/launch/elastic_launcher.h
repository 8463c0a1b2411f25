// What torchrun and torch.distributed.launch share: torchelastic's agent,
// its flags and its own log (--log_dir: per-rank logs and error files; the
// "Root Cause" block on its stderr).
#pragma once

#include <string>
#include <vector>

#include "harness/launch/observed_launcher.h"

namespace faultline::launch {

// The flags faultline gives torchrun and torch.distributed.launch unless a
// scenario's launcher_args replace them: torch 1.13's elastic agent on Python
// 3.11 crashes in option parsing with its default --redirects/--tee (and with
// 0 or 3); 2/2 works on every version and keeps per-rank stderr logs in
// OUT/launcher/logs, which are rank evidence.
// --max_restarts=N for a scenario whose launcher may restart its ranks ([stack] max_restarts); none otherwise.
std::vector<std::string> restartFlags(const scenario::Stack& stack);
std::vector<std::string> elasticLogFlags(const std::string& out_dir);
// OUT/launcher/logs: where torchelastic's agent (--log_dir) writes RUN/attempt_K/R/std{out,err}.log.
std::string elasticLogDir(const std::string& out_dir);
// How the agents meet ([stack] rendezvous): --master_port=PORT (static), or
// a c10d rendezvous at 127.0.0.1:PORT. Both spellings are 1.13's and 2.x's.
std::vector<std::string> rendezvousFlags(const scenario::Stack& stack, int port);

// A one-rank job (/bin/true) of `launcher` with the flags a run gets, its
// logs under `logs`: --help alone passes where the default --redirects/--tee
// crash (torch 1.13 on Python 3.11).
std::vector<std::string> oneRankJob(std::vector<std::string> launcher, const std::string& logs);

// A scenario's torchrun command line: the stack's torchrun, `shape` (how many
// nodes and ranks per node), --master_port, the scenario's launcher_args (else
// elasticLogFlags), then the trainer. torchrun runs a Python script with its
// own interpreter (the trainer's is dropped); anything else needs --no_python.
// Unsupported when the stack's torch has no torchrun beside its interpreter.
tl::expected<std::vector<std::string>, Unsupported> torchrunCommand(const PlanInput& in,
                                                                    const std::vector<std::string>& shape);

class ElasticLauncher : public ObservedLauncher {
 public:
  // Its output and --log_dir, format "torchelastic".
  LauncherLog ownLog(const LaunchOptions& opts, const RunLayout& layout) const override;
  // torch's elastic agent, SIGTERMed, ends its workers, then finalizes the
  // torch it imported (gc_collect_main in Py_Finalize): a second of CPU, and
  // up to 8 s of wall time measured at load 7 on 2 cores, with two agents of
  // a torchrun-multinode run SIGKILLed after a 3-s grace as survivors.
  double launcherExitS() const override { return 10; }
};

}  // namespace faultline::launch
