// `faultline exec` as a user runs it: exit statuses, report.json, and the
// harness itself being interrupted or SIGKILLed mid-run.
#include <signal.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/model/report.h"
#include "harness/model/supervisor_record.h"
#include "tests/supervise/test_support.h"
#include "tests/test_scale.h"

namespace faultline {
namespace {

using faultline::testing::fileExists;
using faultline::testing::hostilePath;
using faultline::testing::LeakGuard;
using faultline::testing::readFile;
using faultline::testing::TempDir;
using faultline::testing::waitFor;

// Under an external launcher the ranks are faultline's grandchildren: their
// exit statuses come only from the proc connector, which needs CAP_NET_ADMIN.
// The cases that need it are ExecCliExternal, their own CTest entry
// (tests/cli/CMakeLists.txt), which reports itself skipped on this message;
// every other case runs without root.
constexpr char kNeedsRoot[] =
    "unsupported: needs root: an external launcher's ranks are faultline's grandchildren, and their exit statuses "
    "come only from the proc connector (CAP_NET_ADMIN)";

// `faultline ARGS` with this process's environment, its stdout and stderr in `log`.
pid_t startFaultline(const std::vector<std::string>& args, const std::string& log) {
  testing::SpawnOptions o;
  o.argv = {FL_FAULTLINE};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.stdout_path = log;
  o.stderr_to_stdout = true;
  return testing::spawnChild(o);
}

using Finished = testing::Outcome;

Finished waitFaultline(pid_t pid) { return testing::waitChild(pid); }

int exitStatus(const Finished& f) { return f.code(); }

Finished runFaultline(const std::vector<std::string>& args, const std::string& log) {
  return waitFaultline(startFaultline(args, log));
}

// Live processes whose environment names this run directory.
std::vector<pid_t> processesOfRun(const std::string& out) {
  std::vector<pid_t> found;
  for (pid_t p : supervise::listPids()) {
    if (supervise::isAlive(p) && supervise::environVar(p, "FAULTLINE_RUN_DIR") == out) found.push_back(p);
  }
  return found;
}

TEST(ExecCli, CleanRunExitsZeroAndWritesBothFiles) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "3", "-o", out, "--", hostilePath(), "*=ok"}, dir / "log");
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kClean);
  EXPECT_EQ(report->stack.launcher, "builtin");
  EXPECT_EQ(report->stack.world_size, 3);
  ASSERT_EQ(report->ranks.size(), 3u);
  EXPECT_FALSE(report->root_cause);
  EXPECT_TRUE(report->findings.empty());
  EXPECT_TRUE(report->teardown.clean);
  EXPECT_TRUE(report->extra.contains("containment"));
  EXPECT_FALSE(report->harness.version.empty());
  auto sup = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(sup) << sup.error().str();
  EXPECT_EQ(sup->ranks.size(), 3u);
}

TEST(ExecCli, FailingRankExitsOneWithStderrTail) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "2", "--grace", "1", "-o", out, "--", hostilePath(), "1=exit:3", "*=sleep:60"},
                        dir / "log");
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_NE(report->verdict, Verdict::kClean);
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[1].exit_code, 3);
  EXPECT_NE(report->ranks[1].stderr_tail.find("exiting with 3"), std::string::npos);
  EXPECT_EQ(report->ranks[0].signal, "SIGTERM");
  EXPECT_EQ(report->ranks[0].role, RankRole::kKilledByTeardown);
}

// --max-restarts: faultline's own launcher restarts every rank after rank
// 1's failure, and the job comes back; the root cause stays the first
// attempt's failure, and the report shows both attempts.
TEST(ExecCli, MaxRestartsRestartsTheRanksAndReportsTheRecovery) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "2", "--max-restarts", "1", "--grace", "1", "-o", out, "--", "/bin/sh", "-c",
                         "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then if [ $RANK = 1 ]; then sleep 0.3; "
                         "echo dying >&2; exit 3; fi; exec sleep 30; fi; echo back $FAULTLINE_FINGERPRINT_EVERY_STEP"},
                        dir / "log");
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");  // a failure happened, whatever came after
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_TRUE(report->root_cause);
  EXPECT_EQ(report->root_cause->rank, 1);
  ASSERT_EQ(report->attempts.size(), 2u);
  EXPECT_EQ(report->attempts[0].failed_rank, 1);
  EXPECT_FALSE(report->attempts[1].failed_rank);
  ASSERT_TRUE(report->recovery);
  EXPECT_EQ(report->recovery->restarts, 1);
  EXPECT_TRUE(report->recovery->recovered);
  // Every step's parameter fingerprint, as in a scenario that may restart: where it resumed from is then known.
  EXPECT_EQ(readFile(out + "/ranks/0/attempt_1/stdout"), "back 1\n");
  // Not for a launcher that restarts (or not) by its own command line.
  auto bad = runFaultline({"exec", "--launcher", "external", "--max-restarts", "1", "-o", dir / "x", "--", "/bin/true"},
                          dir / "log2");
  EXPECT_EQ(exitStatus(bad), 2);
  EXPECT_NE(readFile(dir / "log2").find("--max-restarts applies to the builtin launcher only"), std::string::npos);
}

// `faultline exec ... | true` and `| head -c 1`: the reader is gone before
// (or soon after) the harness writes. SIGPIPE killed it (exit 141, and once no
// report.json at all); the exit status must be the verdict's, and the report
// complete, whatever becomes of stdout.
TEST(ExecCli, AClosedStdoutLeavesTheVerdictsStatusAndTheReport) {
  LeakGuard guard;
  TempDir dir;
  for (size_t read_bytes : {0u, 1u}) {
    SCOPED_TRACE("the reader took " + std::to_string(read_bytes) + " byte(s)");
    const std::string clean = dir / ("clean" + std::to_string(read_bytes));
    testing::SpawnOptions o;
    o.argv = {FL_FAULTLINE, "exec", "--nproc", "2", "-o", clean, "--", hostilePath(), "*=ok"};
    o.stderr_path = dir / "log";
    auto f = testing::runIntoClosedPipe(o, read_bytes);
    EXPECT_EQ(f.code(), 0) << f.str() << "\n" << readFile(dir / "log");
    auto report = readReport(clean + "/report.json");
    ASSERT_TRUE(report) << report.error().str();
    EXPECT_EQ(report->verdict, Verdict::kClean);
    EXPECT_EQ(report->ranks.size(), 2u);

    const std::string failed = dir / ("failed" + std::to_string(read_bytes));
    o.argv = {FL_FAULTLINE, "exec", "--nproc", "2", "--grace", "1", "-o", failed, "--", hostilePath(), "1=exit:3",
              "*=sleep:60"};
    f = testing::runIntoClosedPipe(o, read_bytes);
    EXPECT_EQ(f.code(), 1) << f.str() << "\n" << readFile(dir / "log");
    report = readReport(failed + "/report.json");
    ASSERT_TRUE(report) << report.error().str();
    ASSERT_TRUE(report->root_cause);
    EXPECT_EQ(report->root_cause->rank, 1);
    EXPECT_TRUE(fileExists(failed + "/report.html"));
  }
}

TEST(ExecCli, ExplainBuildsTheSameReportAsTheLiveRun) {
  // explain takes the live run's path (supervisor.json, diagnosis, assembly):
  // from the same run directory, the same report (on main it patched the
  // stored report in place and lost nothing only by luck).
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "2", "--grace", "1", "-o", out, "--", hostilePath(), "1=exit:3", "*=sleep:60"},
                        dir / "log");
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");
  auto e = runFaultline({"explain", out, "--json"}, dir / "explain");
  EXPECT_EQ(exitStatus(e), 1) << readFile(dir / "explain");
  const auto stored = nlohmann::json::parse(readFile(out + "/report.json"));
  const auto again = nlohmann::json::parse(readFile(dir / "explain"));
  EXPECT_EQ(again, stored) << again.dump(1);
}

TEST(ExecCli, BadUsageExitsTwoWithoutReport) {
  LeakGuard guard;
  TempDir dir;
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--nproc", "2", "-o", dir / "a"}, dir / "log")), 2);
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--bogus", "--", "true"}, dir / "log")), 2);
  EXPECT_EQ(exitStatus(runFaultline({"exec", "-o", dir / "b", "--", "/no/such/binary"}, dir / "log")), 2);
  EXPECT_FALSE(fileExists(dir / "b/report.json"));
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--hang-factor", "-1", "-o", dir / "c", "--", "true"}, dir / "log")), 2);
  EXPECT_NE(readFile(dir / "log").find("--hang-factor must be >= 0 (0: off) and --hang-floor > 0"), std::string::npos);
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--hang-floor", "0", "-o", dir / "c", "--", "true"}, dir / "log")), 2);
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--hang-idle", "-1", "-o", dir / "c", "--", "true"}, dir / "log")), 2);
  EXPECT_NE(readFile(dir / "log").find("--hang-idle must be a number of seconds >= 0 (0: off)"), std::string::npos);
  EXPECT_FALSE(fileExists(dir / "c/report.json"));
}

TEST(ExecCli, SigintMidRunStillWritesAnIncompleteReport) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  pid_t pid = startFaultline({"exec", "--nproc", "2", "--grace", "1", "-o", out, "--", hostilePath(), "*=sleep:60"},
                             dir / "log");
  ASSERT_TRUE(waitFor([&] { return readFile(out + "/ranks/1/stdout").find("hostile rank 1") != std::string::npos; },
                      testing::scaled(std::chrono::seconds(20))));
  ::kill(pid, SIGINT);
  auto f = waitFaultline(pid);
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kIncomplete);
  EXPECT_EQ(report->extra["trigger"]["kind"], "interrupt");
  EXPECT_TRUE(report->teardown.clean);
  EXPECT_TRUE(processesOfRun(out).empty());
}

// The harness SIGKILLed mid-run: its guardian ends every process of the run,
// and report.json says the harness failed.
void harnessKilledLeavesNothing(bool cgroup) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  if (!cgroup) ::setenv("FAULTLINE_NO_CGROUP", "1", 1);
  pid_t pid = startFaultline({"exec", "--nproc", "2", "-o", out, "--", hostilePath(), "*=daemon:60"}, dir / "log");
  ::unsetenv("FAULTLINE_NO_CGROUP");
  // Both ranks' daemons write daemon.pid (fopen "w", then the number, so it
  // can be empty for a moment): take a whole line when one is there.
  pid_t daemon = 0;
  ASSERT_TRUE(waitFor(
      [&] {
        const std::string s = readFile(out + "/daemon.pid");
        if (!daemon && !s.empty() && s.back() == '\n') daemon = std::stoi(s);
        return daemon > 0 && processesOfRun(out).size() >= 3;
      },
      testing::scaled(std::chrono::seconds(20))));
  ASSERT_TRUE(supervise::isAlive(daemon));
  ::kill(pid, SIGKILL);
  const auto killed_at = std::chrono::steady_clock::now();
  waitFaultline(pid);
  // Everything, the setsid daemon included, is gone within a second.
  EXPECT_TRUE(waitFor([&] { return processesOfRun(out).empty(); }, testing::scaled(std::chrono::seconds(1))))
      << processesOfRun(out).size() << " process(es) of the run survived";
  EXPECT_FALSE(supervise::isAlive(daemon));
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, testing::scaled(std::chrono::milliseconds(1500)));
  // Never nothing: the report written before the run started says the
  // harness failed.
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kError);
  EXPECT_NE(report->problems.harness_error.value_or("").find("ended before it wrote this run's report"), std::string::npos)
      << report->extra.dump();
}

TEST(ExecCli, HarnessSigkilledMidRunLeavesNothingBehind) { harnessKilledLeavesNothing(true); }
TEST(ExecCli, HarnessSigkilledMidRunLeavesNothingBehindUnderSubreaper) { harnessKilledLeavesNothing(false); }

TEST(ExecCli, TwoHundredMegabyteFloodKeepsHarnessMemoryBounded) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "1", "-o", out, "--", hostilePath(), "*=flood:200"}, dir / "log");
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "log");
  // ru_maxrss covers the harness and the children it reaped; the flood never
  // passes through the harness, so both stay small.
  // A sanitizer's shadow memory and quarantine are no harness memory.
  if (!testing::kSanitizerBuild) {
    EXPECT_LT(f.maxrss_kb, 64 * 1024);
  }
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report);
  EXPECT_LE(report->ranks[0].stderr_tail.size(), 64u * 1024);
}

TEST(ExecCliExternal, TorchrunExecReportsLauncherAndRanks) {
  if (!fileExists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  if (::geteuid() != 0) GTEST_SKIP() << kNeedsRoot;
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--launcher", "external", "--deadline", "90", "-o", out, "--", "/usr/bin/torchrun",
                         testing::freeTorchrunPortFlag(), "--no_python", "--nproc_per_node=2", "--redirects", "2", "--tee", "2", "--log_dir",
                         dir / "tr", hostilePath(), "delay=0.5", "0=exit:7", "*=sleep:60"},
                        dir / "log");
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->stack.launcher, "external");
  EXPECT_EQ(report->stack.world_size, 2);
  ASSERT_EQ(report->ranks.size(), 2u);
  EXPECT_EQ(report->ranks[0].exit_code, 7);
  EXPECT_EQ(report->ranks[1].signal, "SIGTERM");
  EXPECT_NE(report->launcher.exit_code, 0);
  EXPECT_EQ(report->extra["trigger"]["rank"], 0);
  EXPECT_TRUE(fileExists(out + "/launcher/stderr"));
}

// A rank that forms a process group and exits 0 without destroying it: a
// no_pg_destroy finding, severity warning (written by hand, no torch needed).
const char* kNoPgDestroy =
    "printf '{\"t\":%s,\"rank\":0,\"pid\":%d,\"ev\":\"pg_init\",\"backend\":\"gloo\"}\\n' "
    "\"$(date +%s%N)\" $$ >> \"$FAULTLINE_EVENTS\"";

TEST(ExecCli, AWarningFindingIsReportedAndDoesNotFailTheRun) {
  // Errors fail, warnings are reported: a correct program that never calls
  // destroy_process_group exits 0 (on main it was exit 1, verdict diagnosed).
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--no-instrument", "-o", out, "--", "/bin/sh", "-c", kNoPgDestroy}, dir / "log");
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "log");
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  ASSERT_EQ(report->findings.size(), 1u) << readFile(out + "/report.json");
  EXPECT_EQ(report->findings[0].kind, Kind::kNoPgDestroy);
  EXPECT_EQ(report->findings[0].severity, "warning");
  EXPECT_EQ(report->verdict, Verdict::kClean);
  EXPECT_NE(readFile(dir / "log").find("warning: no_pg_destroy"), std::string::npos) << readFile(dir / "log");
  // explain, the same path again, agrees.
  EXPECT_EQ(exitStatus(runFaultline({"explain", out}, dir / "explain")), 0) << readFile(dir / "explain");

  // --fail-on warning: warnings fail too.
  auto strict = runFaultline({"exec", "--no-instrument", "--fail-on", "warning", "-o", out, "--", "/bin/sh", "-c",
                              kNoPgDestroy},
                             dir / "log");
  EXPECT_EQ(exitStatus(strict), 1) << readFile(dir / "log");
  // A "diagnosed" verdict without a root cause says which finding failed it, and its fix.
  EXPECT_NE(readFile(dir / "log").find("warning: no_pg_destroy: rank 0 exited without destroying the process group\n  fix: "),
            std::string::npos)
      << readFile(dir / "log");
  report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_EQ(report->verdict, Verdict::kDiagnosed);
  EXPECT_EQ(exitStatus(runFaultline({"exec", "--fail-on", "info", "--", "/bin/true"}, dir / "log")), 2);
}

TEST(ExecCli, SupervisorJsonCarriesWhatTheReportNeeds) {
  // The run directory is the only channel between supervise and the report:
  // supervisor.json holds the timeline, notes, interruption and instruments
  // (on main they went from memory into report.json, and explain lost them).
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "-o", out, "--", hostilePath(), "*=ok"}, dir / "log");
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "log");
  auto sup = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(sup) << sup.error().str();
  EXPECT_FALSE(sup->timeline.empty());
  EXPECT_FALSE(sup->interrupted);
  ASSERT_TRUE(sup->instruments);
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_TRUE(report->extra.contains("instruments"));
  EXPECT_TRUE(report->launcher.blamed_rank == std::nullopt);
  EXPECT_TRUE(report->launcher.blamed_correctly == std::nullopt);
}

TEST(ExecCli, ExplainReadsAFinishedRun) {
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  runFaultline({"exec", "--nproc", "1", "-o", out, "--", hostilePath(), "*=ok"}, dir / "log");
  auto f = runFaultline({"explain", out, "--json"}, dir / "explain");
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "explain");
  EXPECT_NE(readFile(dir / "explain").find("faultline.report/1"), std::string::npos);
  EXPECT_EQ(exitStatus(runFaultline({"explain", dir / "nowhere"}, dir / "explain")), 2);
}

}  // namespace
}  // namespace faultline

namespace faultline {
namespace {

// The reference trainer, when built: in this tree, or named by $FAULTLINE_TRAINER.
std::string trainerPath() {
  if (const char* env = std::getenv("FAULTLINE_TRAINER"); env && fileExists(env)) return env;
#ifdef FL_TRAINER
  if (fileExists(FL_TRAINER)) return FL_TRAINER;
#endif
  return "";
}

TEST(ExecCliTrainer, HungCollectiveIsDetectedAsHangAndTornDownClean) {
  const std::string trainer = trainerPath();
  if (trainer.empty()) GTEST_SKIP() << "faultline-trainer not built (set FAULTLINE_TRAINER)";
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--nproc", "2", "--hang-timeout", "5", "--deadline", "180", "--grace", "3", "-o", out,
                         "--", trainer, "--steps", "20", "--fault", "hung_collective", "--fault-rank", "1",
                         "--fault-step", "3"},
                        dir / "log");
  EXPECT_EQ(exitStatus(f), 1) << readFile(dir / "log");
  auto sup = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(sup) << sup.error().str();
  EXPECT_EQ(sup->trigger.kind, TriggerKind::kHang) << sup->trigger.detail;
  // Named by the idle rule (no rhythm yet at step 3), well before --hang-timeout 5.
  EXPECT_EQ(sup->trigger.rank, 1) << sup->trigger.detail;
  EXPECT_NE(sup->trigger.detail.find("in allreduce seq"), std::string::npos) << sup->trigger.detail;
  EXPECT_NE(sup->trigger.detail.find("rank 1 is not in it and idle"), std::string::npos) << sup->trigger.detail;
  auto report = readReport(out + "/report.json");
  ASSERT_TRUE(report) << report.error().str();
  EXPECT_TRUE(report->teardown.clean);
  // The diagnose stage is always linked into faultline: the hang must be diagnosed.
  ASSERT_TRUE(report->root_cause) << "no root cause: the hang was not diagnosed\n" << readFile(out + "/report.json");
  EXPECT_EQ(report->root_cause->kind, Kind::kHungCollective);
  EXPECT_EQ(report->root_cause->rank, 1);
  EXPECT_TRUE(processesOfRun(out).empty());
}

TEST(ExecCliExternal, TorchrunAttributesEveryTrainerRank) {
  const std::string trainer = trainerPath();
  if (trainer.empty()) GTEST_SKIP() << "faultline-trainer not built (set FAULTLINE_TRAINER)";
  if (!fileExists("/usr/bin/torchrun")) GTEST_SKIP() << "no /usr/bin/torchrun";
  if (::geteuid() != 0) GTEST_SKIP() << kNeedsRoot;
  LeakGuard guard;
  TempDir dir;
  const std::string out = dir / "run";
  auto f = runFaultline({"exec", "--launcher", "external", "--deadline", "180", "-o", out, "--", "/usr/bin/torchrun",
                         testing::freeTorchrunPortFlag(), "--no_python", "--nproc_per_node=2", "--redirects", "2", "--tee", "2", "--log_dir",
                         dir / "tr", trainer, "--steps", "5"},
                        dir / "log");
  auto sup = readSupervisorRecord(out + "/supervisor.json");
  ASSERT_TRUE(sup) << sup.error().str() << "\n" << readFile(dir / "log");
  ASSERT_EQ(sup->ranks.size(), 2u) << readFile(out + "/launcher/stderr");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(sup->ranks[r].rank, r);
    EXPECT_EQ(sup->ranks[r].exit_code, 0);
    // The attributed process really carried that RANK: it is torchrun's child running the trainer.
    bool exec_seen = false;
    for (const auto& e : sup->process_exits) {
      if (e.pid == sup->ranks[r].pid) exec_seen = e.cmdline.find("faultline-trainer") != std::string::npos;
    }
    EXPECT_TRUE(exec_seen);
  }
  ASSERT_TRUE(sup->launcher_process);
  EXPECT_EQ(sup->launcher_process->exit_code, 0);
  EXPECT_EQ(exitStatus(f), 0) << readFile(dir / "log");
}

}  // namespace
}  // namespace faultline
