// An earlier failure of a part of a rank that causes its later, seemingly
// unrelated one: a thread that died of an uncaught exception (printed by
// threading.excepthook, or the shim's error event with `thread`), a DataLoader
// worker killed by a signal. The earlier failure is the rank's; the later one
// becomes its outer layer. docs/DIAGNOSIS.md section 2.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "harness/diagnose/evidence.h"
#include "harness/model/supervisor_record.h"

namespace faultline::diagnose {

// torch's DataLoader reporting a worker's death in the main process:
//   "DataLoader worker (pid 123) is killed by signal: Killed. "
//   "DataLoader worker (pid 123) exited unexpectedly with exit code 1. Details are lost ..."
//   "DataLoader worker (pid(s) 123, 124) exited unexpectedly"
// as the worker's own failure: kind signal (the signal named from its
// strsignal text) or exit_code, `worker` naming it. A worker ended by a
// teardown's signal (SIGTERM, SIGINT, SIGHUP) is collateral.
std::optional<Evidence> parseWorkerDeath(std::string_view text);

// torch's signal handler in a DataLoader worker, before it dies:
// "ERROR: Unexpected segmentation fault encountered in worker." (bus error,
// with "insufficient shared memory (shm)"; floating-point exception).
std::optional<Evidence> parseWorkerFatal(std::string_view line);

// Whether a traceback's frames run through torch's DataLoader
// (torch/utils/data/): a connection lost there is to the rank's own worker
// (its result queue, the fd it hands a tensor through), not to a peer.
bool inDataLoader(const std::vector<Location>& frames);

// How the rank failed, the onion whole: the error that ended it
// (terminalError), unless an earlier failure of one of its parts caused it:
// the worker death that error reports (how it died from the worker's own
// crash report or the supervisor's record of it), a worker that died before
// a connection to it was lost (torch 1.13 can say ConnectionResetError before
// its SIGCHLD handler says "killed by signal"), or a thread that died before
// it (and not of a collateral error). Then that earlier failure, with the
// later error and its wrappers as its outer layers. nullopt when there is no
// evidence.
// crashed_children: the rank's own child processes that died of a signal
// (RankInput::crashed_children), earliest first. caught: exceptions the
// rank caught and went on from (RankInput::caught): when the error that
// ended the rank is collateral (a peer gone, a collective timed out), a
// worker death one of them reports, before that error, is its failure:
// torch's SIGCHLD handler raised it wherever the main thread was, and the
// trainer's code swallowed it (Lightning's per-step SIGTERM broadcast
// catches every exception), so the rank went on without its worker into a
// collective its peers never matched.
std::optional<Evidence> rankFailure(const std::vector<Evidence>& errors,
                                    const std::vector<ProcessExit>& crashed_children = {},
                                    const std::vector<Evidence>& caught = {});

}  // namespace faultline::diagnose
