// torch 2.x launcher and rank output, from real torch 2.13 runs in
// tests/fixtures/diagnose (torchrun213_*, launch213_*, spawn213_*), beside the
// torch 1.13 captures: every parser reads both. The *_noinst_* captures ran
// without faultline's instruments, so what is found there is found in torch's
// own text; the tests that cut a capture down (console only, failure block
// only) take the other evidence away on purpose.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/diagnose/diagnose.h"
#include "harness/diagnose/findings.h"
#include "harness/diagnose/launcher_log.h"
#include "harness/diagnose/python_traceback.h"
#include "harness/diagnose/rank_log.h"
#include "harness/diagnose/run_input.h"
#include "harness/diagnose/text.h"
#include "tests/diagnose/test_util.h"

namespace faultline::diagnose {
namespace {

namespace fs = std::filesystem;
using testing::fixture;
using testing::readFile;

// The one file under `dir` named `name` (torchrun's log_dir has a random run id).
std::string findFile(const std::string& dir, const std::string& rel_suffix) {
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (e.is_regular_file() && p.size() >= rel_suffix.size() &&
        p.compare(p.size() - rel_suffix.size(), rel_suffix.size(), rel_suffix) == 0) {
      return p;
    }
  }
  ADD_FAILURE() << "no " << rel_suffix << " under " << dir;
  return {};
}

// A run directory holding only launcher/stderr (as `text`).
std::string consoleOnlyRun(const std::string& name, const std::string& text) {
  const std::string dir = ::testing::TempDir() + "/torch2_" + name;
  fs::remove_all(dir);
  fs::create_directories(dir + "/launcher");
  std::ofstream(dir + "/launcher/stderr", std::ios::binary) << text;
  return dir;
}

Report diagnose(const std::string& dir) {
  auto ok = testing::diagnosedReport(dir);
  EXPECT_TRUE(ok) << (ok ? "" : ok.error().str());
  return ok ? *ok : Report{};
}

TEST(Torch2LauncherLog, ChildFailedErrorEntriesAreIndexedNotRanked) {
  // 2.13 lists the rank that failed first ("[0]:", in the root-cause section)
  // and the peer it SIGTERMed after it ("[1]:" under Failures, rank 0).
  LauncherLog log = parseLauncherLog(readFile(fixture("torchrun213_noinst_name_error/launcher/stderr")));
  ASSERT_TRUE(log.wrapper);
  EXPECT_EQ(log.wrapper->shortType(), "ChildFailedError");
  EXPECT_FALSE(log.launcher_crashed);
  ASSERT_EQ(log.failures.size(), 2u);
  const LauncherFailure& peer = log.failures[0];
  EXPECT_FALSE(peer.root_cause_block);
  EXPECT_EQ(peer.rank, 0);
  EXPECT_EQ(peer.local_rank, 0);
  EXPECT_EQ(peer.signal, "SIGTERM");  // "exitcode  : -15 (pid: 27148)  (SIGTERM)"
  EXPECT_FALSE(peer.exit_code);
  EXPECT_EQ(peer.pid, 27148);
  EXPECT_EQ(peer.traceback, "Signal 15 (SIGTERM) received by PID 27148");
  const LauncherFailure& root = log.failures[1];
  EXPECT_TRUE(root.root_cause_block);
  EXPECT_EQ(root.rank, 1);
  EXPECT_EQ(root.exit_code, 1);  // "exitcode  : 1 (pid: 27149) " (a trailing space in 2.x)
  EXPECT_EQ(root.pid, 27149);
  // What torchrun blamed: from the entry's "rank :" line, not its "[0]:" index.
  ASSERT_TRUE(log.claimed_root_rank);
  EXPECT_EQ(*log.claimed_root_rank, 1);
  // glog-style "E1201 ... api.py:1002] failed (exitcode: 1) local_rank: 1 (pid: 27149)"
  // and "W1201 ... api.py:1028] Sending process 27148 closing signal SIGTERM".
  ASSERT_EQ(log.failed_pids.size(), 1u);
  EXPECT_EQ(log.failed_pids[0].pid, 27149);
  EXPECT_EQ(log.failed_pids[0].local_rank, 1);
  EXPECT_EQ(log.failed_pids[0].exit_code, 1);
  EXPECT_EQ(log.signals_sent, (std::map<int, std::set<std::string>>{{27148, {"SIGTERM"}}}));
  // "[default0]:[rank0]: Traceback ..." lines are the ranks', not the launcher's.
  EXPECT_TRUE(log.unattributed.empty());
}

TEST(Torch2LauncherLog, Torch113EntriesReadTheSame) {
  // 1.13 uses the same "[idx]:" template; its 5 s poll finds both ranks
  // exited, in rank order, and whole-second ties go to rank 0.
  LauncherLog log = parseLauncherLog(readFile(fixture("torchrun_exec_noinst_name_error/launcher/stderr")));
  ASSERT_EQ(log.failures.size(), 2u);
  EXPECT_EQ(log.failures[0].rank, 1);
  EXPECT_FALSE(log.failures[0].root_cause_block);
  EXPECT_EQ(log.failures[1].rank, 0);
  EXPECT_TRUE(log.failures[1].root_cause_block);
  EXPECT_EQ(log.claimed_root_rank, 0);
  EXPECT_TRUE(log.signals_sent.empty());  // both had exited by themselves
}

TEST(Torch2LauncherLog, RecordErrorFileTracebackInTheBlock) {
  // @record: the entry quotes the error file's py_callstack, indented.
  LauncherLog log = parseLauncherLog(readFile(fixture("torchrun213_noinst_record_name_error/launcher/stderr")));
  const LauncherFailure* root = nullptr;
  for (const LauncherFailure& f : log.failures) {
    if (f.root_cause_block) root = &f;
  }
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->rank, 1);
  EXPECT_FALSE(root->error_file.empty());
  ASSERT_TRUE(root->chain);
  EXPECT_EQ(root->chain->final().type, "NameError");
  EXPECT_EQ(root->chain->final().message, "name 'c' is not defined");
  ASSERT_NE(root->chain->final().innermost(), nullptr);
  EXPECT_EQ(root->chain->final().innermost()->line, 18);
  EXPECT_EQ(log.claimed_root_rank, 1);
}

TEST(Torch2LauncherLog, SpawnRaisedAndExited) {
  LauncherLog raised = parseLauncherLog(readFile(fixture("spawn213_noinst_name_error/launcher/stderr")));
  ASSERT_TRUE(raised.spawn_rank);
  EXPECT_EQ(*raised.spawn_rank, 1);
  ASSERT_TRUE(raised.spawn_chain);
  EXPECT_EQ(raised.spawn_chain->final().type, "NameError");
  EXPECT_EQ(raised.spawn_chain->final().innermost()->line, 24);
  ASSERT_TRUE(raised.wrapper);
  EXPECT_EQ(raised.wrapper->shortType(), "ProcessRaisedException");
  // 2.x's spawn says whom it terminates: "spawn.py:165] Terminating process 27392 via signal SIGTERM".
  EXPECT_EQ(raised.signals_sent, (std::map<int, std::set<std::string>>{{27392, {"SIGTERM"}}}));

  LauncherLog exited = parseLauncherLog(readFile(fixture("spawn213_noinst_segfault/launcher/stderr")));
  EXPECT_EQ(exited.spawn_rank, 1);
  EXPECT_EQ(exited.spawn_signal, "SIGSEGV");
  EXPECT_EQ(exited.signals_sent.size(), 1u);
  LauncherLog code = parseLauncherLog(readFile(fixture("spawn213_exit__3/launcher/stderr")));
  EXPECT_EQ(code.spawn_rank, 1);
  EXPECT_EQ(code.spawn_exit_code, 3);
}

TEST(Torch2LauncherLog, LaunchDeprecationWarning) {
  LauncherLog log = parseLauncherLog(readFile(fixture("launch213_noinst_name_error/launcher/stderr")));
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_EQ(log.warnings[0].rfind("FutureWarning: The module torch.distributed.launch is deprecated", 0), 0u)
      << log.warnings[0];
  ASSERT_TRUE(log.wrapper);
  EXPECT_EQ(log.wrapper->shortType(), "ChildFailedError");  // launch runs torchrun's code in 2.x
  EXPECT_EQ(log.claimed_root_rank, 1);
  EXPECT_TRUE(log.unattributed.empty());  // "[rank1]: ..." without --tee is still a rank's
}

TEST(Torch2RankLog, ExcepthookPrefixedTraceback) {
  const std::string dir = fixture("torchrun213_noinst_name_error/launcher/logs");
  RankLog r1 = scanRankLog(readFile(findFile(dir, "/1/stderr.log")));
  ASSERT_EQ(r1.errors.size(), 1u);
  EXPECT_EQ(r1.errors[0].type, "NameError");
  EXPECT_EQ(r1.errors[0].message, "name 'c' is not defined");
  ASSERT_TRUE(r1.errors[0].location);
  EXPECT_EQ(r1.errors[0].location->line, 18);
  EXPECT_FALSE(r1.errors[0].collateral);
  // 2.x's Gloo: "Connection closed by peer [127.0.0.1]:47257. This is typically caused by a remote worker crashing..."
  RankLog r0 = scanRankLog(readFile(findFile(dir, "/0/stderr.log")));
  ASSERT_EQ(r0.errors.size(), 1u);
  EXPECT_EQ(r0.errors[0].type, "RuntimeError");
  EXPECT_TRUE(r0.errors[0].collateral);
  EXPECT_NE(r0.errors[0].message.find("This is typically caused by a remote worker crashing"), std::string::npos);
}

TEST(Torch2RankLog, AnchorInsideAPrefix) {
  // An evidence anchor inside what reads as a role prefix ("[Aborted1]:"):
  // found by the fuzzer, it once sent the anchor scan round the same line forever.
  RankLog log = scanRankLog("[Aborted1]:x\n[Segmentation fault2]:y\n[default0]:Aborted (core dumped)\n");
  EXPECT_LE(log.errors.size(), 1u);
}

TEST(Torch2RankLog, GlogRecordEndsAMessage) {
  auto chains = parsePythonTracebacks(
      "Traceback (most recent call last):\n"
      "  File \"/app/t.py\", line 3, in <module>\n"
      "ValueError: bad\n"
      "E1201 21:08:55.142000 9398 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1)\n"
      "[W1201 21:08:55.142 ProcessGroupNCCL.cpp:1496] Warning: x\n");
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].final().full_message, "bad");
}

TEST(Torch2RankLog, DestroyProcessGroupWarning) {
  // torch 2.x's ProcessGroupNCCL destructor, as printed upstream (NCCL only:
  // the CPU build on the capture machine has no such warning for Gloo).
  RankLog log = scanRankLog(
      "[rank0]:[W604 08:55:15.856186408 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was not "
      "called before program exit, which can leak resources. For more info, please see "
      "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n");
  EXPECT_TRUE(log.errors.empty());
  EXPECT_EQ(log.pg_not_destroyed.rfind("[W604 08:55:15.856186408 ProcessGroupNCCL.cpp:1496] Warning: WARNING: "
                                       "destroy_process_group() was not called",
                                       0),
            0u)
      << log.pg_not_destroyed;
  EXPECT_TRUE(scanRankLog("destroy_process_group() is called\n").pg_not_destroyed.empty());
}

TEST(Torch2Findings, NoPgDestroyFromTheWarningText) {
  // A clean uninstrumented 2.13 run: events gone, torch's warning in rank 0's log.
  const std::string dir = ::testing::TempDir() + "/torch2_no_destroy_text";
  fs::remove_all(dir);
  fs::copy(fixture("torchrun213_clean"), dir, fs::copy_options::recursive);
  for (int r = 0; r < 2; ++r) fs::remove(dir + "/ranks/" + std::to_string(r) + "/events.jsonl");
  EXPECT_TRUE(diagnose(dir).findings.empty());
  std::ofstream(findFile(dir + "/launcher/logs", "/0/stderr.log"), std::ios::app)
      << "[rank0]:[W1201 21:26:01.123456789 ProcessGroupNCCL.cpp:1496] Warning: WARNING: destroy_process_group() was "
         "not called before program exit, which can leak resources. For more info, please see "
         "https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n";
  Report report = diagnose(dir);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].kind, Kind::kNoPgDestroy);
  EXPECT_EQ(report.findings[0].ranks, std::vector<int>{0});
  EXPECT_NE(report.findings[0].evidence.find("destroy_process_group() was not called"), std::string::npos);
  EXPECT_FALSE(report.root_cause);

  // A rank that failed is not expected to clean up.
  RunInput in;
  RankInput& r = in.ranks[0];
  r.exit_known = true;
  r.exit_code = 1;
  r.pg_not_destroyed = "Warning: WARNING: destroy_process_group() was not called before program exit";
  EXPECT_TRUE(findNoPgDestroy(in).empty());
  r.exit_code = 0;
  EXPECT_EQ(findNoPgDestroy(in).size(), 1u);
}

TEST(Torch2Diagnosis, ConsoleOnlyTeeAndExcepthookPrefixes) {
  // No log files, no supervisor, no events: "[default1]:[rank1]: ..." on the console.
  const std::string text = readFile(fixture("torchrun213_noinst_name_error/launcher/stderr"));
  Report report = diagnose(consoleOnlyRun("tee", text));
  ASSERT_TRUE(report.root_cause);
  EXPECT_EQ(report.root_cause->kind, Kind::kPythonException);
  EXPECT_EQ(report.root_cause->rank, 1);
  EXPECT_EQ(report.root_cause->exception_type, "NameError");
  ASSERT_TRUE(report.root_cause->location);
  EXPECT_EQ(report.root_cause->location->line, 18);
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[0].role, RankRole::kCollateral);
  EXPECT_EQ(report.ranks[1].role, RankRole::kRootCause);
  EXPECT_EQ(report.extra.value("launcher_root_cause_rank", -1), 1);
}

TEST(Torch2Diagnosis, ConsoleOnlyExcepthookPrefixWithoutTee) {
  // torch.distributed.launch 2.13 without --tee: only "[rank1]: " marks the rank.
  Report report = diagnose(consoleOnlyRun("launch", readFile(fixture("launch213_noinst_name_error/launcher/stderr"))));
  ASSERT_TRUE(report.root_cause);
  EXPECT_EQ(report.root_cause->rank, 1);
  EXPECT_EQ(report.root_cause->exception_type, "NameError");
  EXPECT_EQ(report.root_cause->location->line, 18);
}

TEST(Torch2Diagnosis, FailureBlockAloneNamesTheRecordedError) {
  // Only the launcher's own lines (the ranks' console lines dropped): the
  // error file's traceback that the ChildFailedError block quotes is the evidence.
  const std::string text = readFile(fixture("torchrun213_noinst_record_name_error/launcher/stderr"));
  std::string own;
  for (std::string_view l : splitLines(text)) {
    if (!splitRankPrefix(l)) own.append(l).push_back('\n');
  }
  Report report = diagnose(consoleOnlyRun("block", own));
  ASSERT_TRUE(report.root_cause);
  EXPECT_EQ(report.root_cause->kind, Kind::kPythonException);
  EXPECT_EQ(report.root_cause->rank, 1);
  EXPECT_EQ(report.root_cause->exception_type, "NameError");
  EXPECT_EQ(report.root_cause->location->line, 18);
  ASSERT_EQ(report.ranks.size(), 2u);
  EXPECT_EQ(report.ranks[0].signal, "SIGTERM");  // from "exitcode : -15"
}

TEST(Torch2Diagnosis, TheStacksOwnVerdictIsRecorded) {
  // torchrun 2.13 (0.1 s poll) blamed the rank that failed; 1.13 (5 s poll) rank 0.
  for (const char* name : {"torchrun213_noinst_name_error", "torchrun213_segfault", "torchrun213_sigkill",
                           "torchrun213_exit__3", "torchrun213_record_name_error", "launch213_noinst_name_error"}) {
    Report report = diagnose(fixture(name));
    EXPECT_EQ(report.extra.value("launcher_root_cause_rank", -1), 1) << name;
    ASSERT_TRUE(report.root_cause) << name;
    EXPECT_EQ(report.root_cause->rank, 1) << name;
  }
  for (const char* name : {"torchrun_exec_noinst_name_error", "torchrun_exec_segfault", "torchrun_exec_sigkill"}) {
    Report report = diagnose(fixture(name));
    EXPECT_EQ(report.extra.value("launcher_root_cause_rank", -1), 0) << name;
    ASSERT_TRUE(report.root_cause) << name;
    EXPECT_EQ(report.root_cause->rank, 1) << name;
  }
  // A Gloo timeout: rank 0 exits first, and 2.13 blames it; rank 1 never entered the collective.
  Report hang = diagnose(fixture("torchrun213_gloo_timeout"));
  EXPECT_EQ(hang.extra.value("launcher_root_cause_rank", -1), 0);
  ASSERT_TRUE(hang.root_cause);
  EXPECT_EQ(hang.root_cause->rank, 1);
}

}  // namespace
}  // namespace faultline::diagnose
