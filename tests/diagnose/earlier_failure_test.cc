// An earlier failure of a rank's part (a thread, a DataLoader worker) as the
// cause of its later error (docs/DIAGNOSIS.md section 2), and the guards: a
// collateral thread error, a handled and logged traceback, unordered sources.
#include "harness/diagnose/earlier_failure.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "harness/diagnose/native_error.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/text.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

TEST(WorkerDeath, TorchsSentences) {
  auto k = parseWorkerDeath("DataLoader worker (pid 1395) is killed by signal: Killed. ");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, Kind::kSignal);
  EXPECT_EQ(k->signal, "SIGKILL");
  EXPECT_EQ(k->worker, "DataLoader worker (pid 1395)");
  EXPECT_EQ(k->message, "DataLoader worker (pid 1395) is killed by signal: Killed.");
  EXPECT_NE(k->note.find("OOM"), std::string::npos);
  EXPECT_FALSE(k->collateral);
  auto s = parseWorkerDeath("RuntimeError: DataLoader worker (pid 77) is killed by signal: Segmentation fault. ");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->signal, "SIGSEGV");
  auto b = parseWorkerDeath("DataLoader worker (pid 8) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->signal, "SIGBUS");
  auto x = parseWorkerDeath(
      "DataLoader worker (pid 9) exited unexpectedly with exit code 3. Details are lost due to multiprocessing.");
  ASSERT_TRUE(x);
  EXPECT_EQ(x->kind, Kind::kExitCode);
  EXPECT_EQ(x->exit_code, 3);
  auto p = parseWorkerDeath("RuntimeError: DataLoader worker (pid(s) 12, 13) exited unexpectedly");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->worker, "DataLoader worker (pid(s) 12, 13)");
  EXPECT_FALSE(p->exit_code);
  // A teardown's signal is collateral; other text is no worker death.
  auto t = parseWorkerDeath("DataLoader worker (pid 5) is killed by signal: Terminated. ");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->collateral);
  EXPECT_FALSE(parseWorkerDeath("DataLoader worker (pid 5) is fine"));
  EXPECT_FALSE(parseWorkerDeath("DataLoader worker (pid 5) is killed by signal: No such signal. "));
  EXPECT_FALSE(parseWorkerDeath("DataLoader worker (pid"));
}

TEST(WorkerDeath, TheWorkersOwnReport) {
  auto e = parseWorkerFatal("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->signal, "SIGBUS");
  EXPECT_EQ(e->message, "Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).");
  EXPECT_EQ(parseWorkerFatal("[rank1]: ERROR: Unexpected segmentation fault encountered in worker.")->signal, "SIGSEGV");
  EXPECT_FALSE(parseWorkerFatal("ERROR: Unexpected frobnication encountered in worker."));
  EXPECT_FALSE(parseWorkerFatal("segmentation fault encountered"));
}

// A rank's stderr as Python 3.11 prints it: the thread's traceback, then the main thread's.
constexpr const char* kThreadThenEmpty =
    "Exception in thread prefetch:\n"
    "Traceback (most recent call last):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038, in _bootstrap_inner\n"
    "    self.run()\n"
    "  File \"/app/train.py\", line 126, in run\n"
    "    raise ValueError(\"checksum mismatch in shard %d\" % step)\n"
    "ValueError: checksum mismatch in shard 3\n"
    "Traceback (most recent call last):\n"
    "  File \"/app/train.py\", line 200, in <module>\n"
    "    main()\n"
    "  File \"/app/train.py\", line 140, in value\n"
    "    return self.done.get(timeout=3)\n"
    "  File \"/usr/lib/python3.11/queue.py\", line 179, in get\n"
    "    raise Empty\n"
    "_queue.Empty\n";

TEST(RankFailure, AThreadThatDiedFirstIsTheCause) {
  const RankLog log = scanRankLog(kThreadThenEmpty);
  ASSERT_EQ(log.errors.size(), 2u);
  EXPECT_EQ(log.errors[0].thread, "prefetch");
  EXPECT_EQ(terminalError(log.errors)->type, "_queue.Empty");
  auto f = rankFailure(log.errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "ValueError");
  EXPECT_EQ(f->thread, "prefetch");
  EXPECT_EQ(f->location->line, 126);
  ASSERT_EQ(f->chain.size(), 1u);
  EXPECT_EQ(f->chain[0], "_queue.Empty (/app/train.py:140)");
  EXPECT_EQ(describe(*f), "ValueError: checksum mismatch in shard 3 (/app/train.py:126) in thread prefetch");
}

TEST(RankFailure, ACollateralThreadErrorIsNoCause) {
  const std::string text =
      "Exception in thread heartbeat:\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 30, in beat\n"
      "    store.set(\"hb\", \"1\")\n"
      "RuntimeError: Connection reset by peer\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 60, in main\n"
      "    b = c\n"
      "NameError: name 'c' is not defined\n";
  auto f = rankFailure(scanRankLog(text).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "NameError");
  EXPECT_TRUE(f->chain.empty());
}

TEST(RankFailure, AHandledLoggedTracebackIsNoCause) {
  // logging.exception(): the process went on; no part of it died.
  const std::string text =
      "ERROR:root:no warmup configured, going on without it\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 100, in read_config\n"
      "    return cfg[key]\n"
      "KeyError: 'warmup'\n"
      "UserWarning: something unrelated\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 184, in strike\n"
      "    b = c\n"
      "NameError: name 'c' is not defined\n";
  auto f = rankFailure(scanRankLog(text).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "NameError");
  EXPECT_EQ(f->location->line, 184);
}

TEST(RankFailure, AThreadThatDiedAfterwardsIsNoCause) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 60, in main\n"
      "    b = c\n"
      "NameError: name 'c' is not defined\n"
      "Exception in thread uploader:\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 30, in run\n"
      "    x = 1 / 0\n"
      "ZeroDivisionError: division by zero\n";
  const RankLog log = scanRankLog(text);
  // The last primary error ends the rank; a dead thread is its own failure then.
  auto f = rankFailure(log.errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->thread, "uploader");
  EXPECT_TRUE(f->chain.empty());
}

TEST(RankFailure, EventsAreOrderedByTheirClockAndOtherFilesNot) {
  Evidence thread;
  thread.kind = Kind::kPythonException;
  thread.type = "ZeroDivisionError";
  thread.thread = "prefetch";
  thread.origin = "events.jsonl";
  thread.t_ns = 100;
  Evidence main;
  main.kind = Kind::kPythonException;
  main.type = "KeyError";
  main.message = "3";
  main.origin = "events.jsonl";
  main.t_ns = 200;
  auto f = rankFailure({thread, main});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "ZeroDivisionError");
  EXPECT_EQ(f->chain, std::vector<std::string>{"KeyError: 3"});
  // The thread's error from another file, with no clock: not ordered, not taken.
  thread.origin = "stderr";
  thread.t_ns.reset();
  EXPECT_EQ(rankFailure({thread, main})->type, "KeyError");
  // Later by the clock: not a cause.
  thread.origin = "events.jsonl";
  thread.t_ns = 300;
  EXPECT_EQ(rankFailure({main, thread})->thread, "prefetch");  // the last error, the thread's own
  EXPECT_EQ(rankFailure({thread, main})->type, "KeyError");
  // A torchelastic error file's clock is whole seconds (a multi-node
  // torchrun's node keeps a rank's only error file): a thread's event before
  // that second came first; one within it cannot be said to.
  main.origin = "error.json";
  main.t_ns = 3'000'000'000;
  thread.t_ns = 440'000'000;
  EXPECT_EQ(rankFailure({thread, main})->type, "ZeroDivisionError");
  thread.t_ns = 3'077'000'000;
  EXPECT_EQ(rankFailure({thread, main})->type, "KeyError");
}

// CI, builtin@2.13 undefined-symbol: a native rank, stopped as its terminate
// handler printed, left "terminate called after throwing an instance of '"
// in its stderr; the probe's event had already recorded the exception whole
// (a peer's closed connection). The cut report must not hide it.
TEST(RankFailure, AReportCutShortGivesWayToTheWholeRecordOfIt) {
  Evidence whole;
  whole.kind = Kind::kCppException;
  whole.type = "gloo::IoException";
  whole.message = "[pair.cc:553] Connection closed by peer [127.0.0.1]:63121";
  whole.collateral = true;
  whole.origin = "events.jsonl";
  whole.t_ns = 100;
  Evidence cut = *parseTerminate(splitLines("terminate called after throwing an instance of '"));
  auto f = rankFailure({whole, cut});
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "gloo::IoException");
  EXPECT_TRUE(f->collateral);
  // Alone, it still says the process ended in std::terminate.
  EXPECT_EQ(rankFailure({cut})->type, "std::terminate");
}

TEST(RankFailure, AWorkerKilledBySignalUnderTheMainProcessError) {
  // torch 2.13 (the main process's SIGCHLD handler raises wherever it was),
  // after the worker's own report.
  const std::string text =
      "ERROR: Unexpected segmentation fault encountered in worker.\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 169, in train\n"
      "    ddp.mean_loss(ddp.train_step(model, opt, xb, yb))\n"
      "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/signal_handling.py\", line 73, in handler\n"
      "    _error_if_any_worker_fails()\n"
      "RuntimeError: DataLoader worker (pid 1395) is killed by signal: Segmentation fault. \n";
  auto f = rankFailure(scanRankLog(text).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Kind::kSignal);
  EXPECT_EQ(f->signal, "SIGSEGV");
  EXPECT_EQ(f->worker, "DataLoader worker (pid 1395)");
  EXPECT_EQ(f->note, "Unexpected segmentation fault encountered in worker.");
  ASSERT_EQ(f->chain.size(), 1u);
  EXPECT_EQ(f->chain[0].rfind("RuntimeError: DataLoader worker (pid 1395) is killed by signal: Segmentation fault.", 0), 0u);
}

TEST(RankFailure, AWorkerThatExitedBehindAnEmptyQueue) {
  // "exited unexpectedly" is raised from the queue.Empty that noticed it.
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1251, in _try_get_data\n"
      "    data = self._data_queue.get(timeout=timeout)\n"
      "  File \"/usr/lib/python3.11/queue.py\", line 179, in get\n"
      "    raise Empty\n"
      "_queue.Empty\n"
      "\n"
      "The above exception was the direct cause of the following exception:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 157, in train\n"
      "    for step, (xb, yb) in enumerate(loader):\n"
      "  File \"/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py\", line 1264, in _try_get_data\n"
      "    raise RuntimeError(f\"DataLoader worker (pid(s) {pids_str}) exited unexpectedly\") from e\n"
      "RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly\n";
  const RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 1u);
  // The bare Empty names no failure: the RuntimeError is the chain's root, the Empty inside it.
  EXPECT_EQ(log.errors[0].type, "RuntimeError");
  EXPECT_EQ(log.errors[0].inner, std::vector<std::string>{"_queue.Empty (/usr/lib/python3.11/queue.py:179)"});
  auto f = rankFailure(log.errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Kind::kExitCode);
  EXPECT_EQ(f->worker, "DataLoader worker (pid(s) 4242)");
  // Outermost first: the error that propagated, the Empty inside it, then the worker's death itself.
  const std::vector<std::string> outer{"RuntimeError: DataLoader worker (pid(s) 4242) exited unexpectedly (/app/train.py:157)",
                                       "_queue.Empty (/usr/lib/python3.11/queue.py:179)"};
  EXPECT_EQ(f->chain, outer);
}

TEST(RankFailure, AWorkersOwnReportSaysHowAnUnexplainedExitWas) {
  // torch 1.13 under torchrun, --no-instrument: the worker's handler line, then
  // the main process noticed only that the worker was gone.
  const std::string text =
      "ERROR: Unexpected segmentation fault encountered in worker.\n"
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 158, in train\n"
      "    for step, (xb, yb) in enumerate(loader):\n"
      "RuntimeError: DataLoader worker (pid(s) 13385) exited unexpectedly\n";
  auto f = rankFailure(scanRankLog(text).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Kind::kSignal);
  EXPECT_EQ(f->signal, "SIGSEGV");
  EXPECT_EQ(f->note, "Unexpected segmentation fault encountered in worker.");
}

TEST(RankFailure, APrefixPushedOffTheLineStartIsStillARanksLine) {
  // torch 2.13 under torchrun: the worker's report ends in its string's NUL,
  // which starts the rank's next line (captured byte for byte).
  const std::string text = std::string("ERROR: Unexpected segmentation fault encountered in worker.\n") + '\0' +
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"/app/train.py\", line 170, in train\n"
      "[rank1]:     ddp.mean_loss(ddp.train_step(model, opt, xb, yb))\n"
      "[rank1]: RuntimeError: DataLoader worker (pid 12776) is killed by signal: Segmentation fault. \n";
  const RankLog log = scanRankLog(text);
  ASSERT_EQ(log.errors.size(), 2u);
  EXPECT_EQ(log.errors[1].type, "RuntimeError");
  auto f = rankFailure(log.errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->worker, "DataLoader worker (pid 12776)");
  EXPECT_EQ(f->signal, "SIGSEGV");
}

// torch 1.13: a worker segfaults while the main process takes a batch from
// it, and the main process notices first by the fd the worker shared a
// tensor through (seen in onion-worker-segv on spawn@1.13). No sentence of
// torch's names the worker then; its own crash report before the error does.
const std::string kWorkerCrashThenReset =
    std::string("ERROR: Unexpected segmentation fault encountered in worker.\n") + testing::kLostWorkerTraceback;

TEST(RankFailure, AWorkersCrashReportBeforeALostConnectionToItIsTheCause) {
  auto f = rankFailure(scanRankLog(kWorkerCrashThenReset).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Kind::kSignal);
  EXPECT_EQ(f->signal, "SIGSEGV");
  EXPECT_EQ(f->worker, "DataLoader worker");
  EXPECT_FALSE(f->collateral);
  EXPECT_EQ(f->message, "DataLoader worker died of SIGSEGV (its own report: \"Unexpected segmentation fault encountered in worker.\")");
  EXPECT_EQ(f->note, "the main process then lost its connection to it (ConnectionResetError)");
  ASSERT_EQ(f->chain.size(), 1u);
  EXPECT_EQ(f->chain[0].rfind("ConnectionResetError: [Errno 104] Connection reset by peer", 0), 0u) << f->chain[0];
}

TEST(RankFailure, ALostConnectionToAWorkerWithoutItsReportIsTheRanksOwnError) {
  // No crash report (torch's handler never ran): the error stands, the rank's own.
  const std::string text = testing::kLostWorkerTraceback;
  auto f = rankFailure(scanRankLog(text).errors);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "ConnectionResetError");
  EXPECT_FALSE(f->collateral);
  EXPECT_TRUE(f->chain.empty());
  // A worker's report after the error did not cause it.
  auto later = rankFailure(scanRankLog(text + "ERROR: Unexpected segmentation fault encountered in worker.\n").errors);
  ASSERT_TRUE(later);
  EXPECT_NE(later->type, "ConnectionResetError");
  // The same reset in a collective, with a worker's report before it, is a peer's: no worker was lost.
  const std::string peer =
      "ERROR: Unexpected segmentation fault encountered in worker.\n"
      "Traceback (most recent call last):\n"
      "  File \"/w/train.py\", line 5, in step\n"
      "    dist.all_reduce(t)\n"
      "ConnectionResetError: [Errno 104] Connection reset by peer\n";
  auto p = rankFailure(scanRankLog(peer).errors);
  ASSERT_TRUE(p);
  EXPECT_NE(p->message.find("Unexpected segmentation fault"), std::string::npos);  // the report alone, not as a worker's cause
  EXPECT_TRUE(p->chain.empty());
}

// What the supervisor saw of the rank's own children (an observed launcher's
// process_exits, tied to the rank by their parents).
std::vector<ProcessExit> crashedChild(int pid, const char* sig, int64_t t_ns) {
  ProcessExit e;
  e.pid = pid;
  e.signal = sig;
  e.t_ns = t_ns;
  return {e};
}

TEST(RankFailure, ACrashedChildBeforeALostConnectionToAWorkerNamesItsPid) {
  const std::string text = kWorkerCrashThenReset;
  // Both: the pid from the supervisor, the how from the worker's report.
  auto both = rankFailure(scanRankLog(text).errors, crashedChild(4242, "SIGSEGV", 10));
  ASSERT_TRUE(both);
  EXPECT_EQ(both->worker, "DataLoader worker (pid 4242)");
  EXPECT_EQ(both->message,
            "DataLoader worker (pid 4242) died of SIGSEGV (its own report: \"Unexpected segmentation fault encountered in worker.\")");
  // Only the supervisor's exit (the report went to no rank's file, as under spawn).
  auto exit_only = rankFailure(scanRankLog(testing::kLostWorkerTraceback).errors, crashedChild(4242, "SIGBUS", 10));
  ASSERT_TRUE(exit_only);
  EXPECT_EQ(exit_only->kind, Kind::kSignal);
  EXPECT_EQ(exit_only->signal, "SIGBUS");
  EXPECT_EQ(exit_only->message, "DataLoader worker (pid 4242) died of SIGBUS");
  EXPECT_EQ(exit_only->chain.at(0).rfind("ConnectionResetError", 0), 0u);
}

TEST(RankFailure, ACrashedChildLongAfterTheErrorIsNoCause) {
  Evidence lost = scanRankLog(testing::kLostWorkerTraceback).errors.at(0);
  lost.origin = "events.jsonl";
  lost.t_ns = 1'000'000'000;
  auto f = rankFailure({lost}, crashedChild(4242, "SIGSEGV", 3'000'000'000));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->type, "ConnectionResetError");
  // Within the supervisor's stamping slack (it stamps when it reads the event), it is.
  auto near = rankFailure({lost}, crashedChild(4242, "SIGSEGV", 1'200'000'000));
  ASSERT_TRUE(near);
  EXPECT_EQ(near->signal, "SIGSEGV");
}

TEST(RankFailure, TheSupervisorSaysHowAWorkerThatExitedUnexpectedlyDied) {
  const std::string text =
      "Traceback (most recent call last):\n"
      "  File \"/app/train.py\", line 158, in train\n"
      "    for step, (xb, yb) in enumerate(loader):\n"
      "RuntimeError: DataLoader worker (pid(s) 13385, 13386) exited unexpectedly\n";
  auto f = rankFailure(scanRankLog(text).errors, crashedChild(13386, "SIGKILL", 10));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->kind, Kind::kSignal);
  EXPECT_EQ(f->signal, "SIGKILL");
  // Another child's death (pid 1338, a prefix of the named ones) explains nothing.
  auto other = rankFailure(scanRankLog(text).errors, crashedChild(1338, "SIGSEGV", 10));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->kind, Kind::kExitCode);
}

// Lightning's per-step SIGTERM broadcast (training_epoch_loop.py,
// _broadcast_sigterm_tensor) catches every Exception around its broadcast. A
// DataLoader worker of rank 1 dies; torch's SIGCHLD handler raises "worker is
// killed by signal" as rank 1 enters that broadcast, before the broadcast ran;
// Lightning swallows it, and rank 1 goes on into the step's all-reduce, which
// rank 0, still in the broadcast rank 1 never joined, does not match. Both
// time out 10 s later (CI's lightning@2.6 onion-worker-segv, 1 run in 10 or
// more). The events as the shim writes them: the caught exception is rank
// 1's failure, its timeout and rank 0's collateral.
TEST(RankFailure, AWorkerDeathTheTrainerCaughtIsTheRanksFailure) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "caught_worker_death";
  fs::remove_all(dir);
  const auto write = [&](int rank, const std::string& lines) {
    fs::create_directories(dir / "ranks" / std::to_string(rank));
    std::ofstream(dir / "ranks" / std::to_string(rank) / "events.jsonl") << lines;
  };
  const auto begin = [](int rank, int64_t t, const char* op, int seq) {
    return "{\"t\":" + std::to_string(t) + ",\"rank\":" + std::to_string(rank) + ",\"pid\":" + std::to_string(100 + rank) +
           ",\"ev\":\"collective_begin\",\"op\":\"" + op + "\",\"seq\":" + std::to_string(seq) + ",\"numel\":1,\"dtype\":\"int64\"}\n";
  };
  const auto error = [](int rank, int64_t t, const char* ev, const std::string& extra, const char* message) {
    return "{\"t\":" + std::to_string(t) + ",\"rank\":" + std::to_string(rank) + ",\"pid\":" + std::to_string(100 + rank) +
           ",\"ev\":\"" + ev + "\"" + extra + ",\"kind\":\"python_exception\",\"type\":\"RuntimeError\",\"message\":\"" +
           message + "\",\"file\":\"/lightning/pytorch/loops/training_epoch_loop.py\",\"line\":265,\"stack\":[]}\n";
  };
  const char* kTimeout = "[../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 10000ms for recv operation to complete";
  const char* kClosure = "[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Application timeout caused pair closure";
  const std::string in_broadcast = ",\"op\":\"broadcast\",\"seq\":13,\"site\":\"/lightning/pytorch/loops/training_epoch_loop.py:265\"";
  write(0, begin(0, 1'000'000'000, "broadcast", 13) +
               error(0, 11'000'000'000, "collective_raised", in_broadcast, kTimeout) +  // swallowed too
               begin(0, 11'010'000'000, "allreduce", 14) + error(0, 11'070'000'000, "error", "", kClosure));
  write(1, begin(1, 1'002'000'000, "broadcast", 13) +
               error(1, 1'003'000'000, "collective_raised", in_broadcast,
                     "DataLoader worker (pid 4242) is killed by signal: Segmentation fault. ") +
               begin(1, 1'020'000'000, "allreduce", 14) + error(1, 11'020'000'000, "error", "", kTimeout));
  auto report = testing::diagnosedReport(dir.string());
  ASSERT_TRUE(report);
  ASSERT_TRUE(report->root_cause);
  const RootCause& rc = *report->root_cause;
  EXPECT_EQ(rc.rank, 1);
  EXPECT_EQ(rc.kind, Kind::kSignal);
  EXPECT_EQ(rc.signal, "SIGSEGV");
  EXPECT_EQ(rc.summary.rfind("rank 1: DataLoader worker (pid 4242) is killed by signal: Segmentation fault.", 0), 0u)
      << rc.summary;
  std::string layers;
  for (const auto& l : rc.layers) layers += l.text + "\n";
  EXPECT_NE(layers.find("RuntimeError: DataLoader worker (pid 4242) is killed by signal"), std::string::npos) << layers;
  EXPECT_NE(layers.find("raised in broadcast #13 and caught by its caller at training_epoch_loop.py:265, which went on"),
            std::string::npos)
      << layers;
  EXPECT_NE(rc.summary.find("caught by its caller at training_epoch_loop.py:265"), std::string::npos) << rc.summary;
  // A timeout that rank 0 caught names no worker: its failure stays collateral.
  ASSERT_GE(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[0].role, RankRole::kCollateral);
  // torch's SIGCHLD handler's own record (signal_raised): the handler ran
  // before the broadcast was entered, where only it saw the exception
  // (CI's run of it: no collective_raised on rank 1).
  write(1, begin(1, 1'002'000'000, "broadcast", 13) +
               error(1, 1'003'000'000, "signal_raised", ",\"site\":\"/lightning/pytorch/loops/training_epoch_loop.py:261\"",
                     "DataLoader worker (pid 4242) is killed by signal: Segmentation fault. ") +
               begin(1, 1'020'000'000, "allreduce", 14) + error(1, 11'020'000'000, "error", "", kTimeout));
  auto by_handler = testing::diagnosedReport(dir.string());
  ASSERT_TRUE(by_handler && by_handler->root_cause);
  EXPECT_EQ(by_handler->root_cause->rank, 1);
  EXPECT_EQ(by_handler->root_cause->signal, "SIGSEGV");
  EXPECT_NE(by_handler->root_cause->summary.find("raised by torch's SIGCHLD handler at training_epoch_loop.py:261 and caught"),
            std::string::npos)
      << by_handler->root_cause->summary;
  // Without the shim's record of the caught exception, rank 1's timeout is all there is.
  fs::remove(dir / "ranks" / "1" / "events.jsonl");
  write(1, begin(1, 1'002'000'000, "broadcast", 13) + begin(1, 1'020'000'000, "allreduce", 14) +
               error(1, 11'020'000'000, "error", "", kTimeout));
  auto without = testing::diagnosedReport(dir.string());
  ASSERT_TRUE(without);
  EXPECT_FALSE(without->root_cause && without->root_cause->kind == Kind::kSignal);
}

}  // namespace
}  // namespace faultline::diagnose
