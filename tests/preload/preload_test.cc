// libfaultline_preload.so in real processes: a plain C program, a C++ program
// with the probe, and /usr/bin/python3, each started with LD_PRELOAD. What the
// program sees (stdout, exit status) must not change, except where a fault
// was asked for; what the interposer saw is in the events file.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/files.h"
#include "tests/support/process.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "fl-preload-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

using faultline::testing::readFile;

// Every line must be one whole JSON object: json::parse throws on a torn one.
std::vector<json> readEvents(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

std::vector<json> eventsOf(const std::vector<json>& all, const std::string& ev) {
  std::vector<json> out;
  for (const auto& e : all) {
    if (e["ev"] == ev) out.push_back(e);
  }
  return out;
}

using Outcome = faultline::testing::Outcome;

// Runs argv with this process's environment minus any rank or faultline
// variables, plus `env`; LD_PRELOAD is the interposer unless `preload` is false.
// Its stdout and stderr are captured in the outcome.
Outcome run(const std::vector<std::string>& argv, std::map<std::string, std::string> env, const TempDir& dir,
            bool preload = true) {
  if (preload) env["LD_PRELOAD"] = FL_PRELOAD;
  faultline::testing::SpawnOptions o;
  o.argv = argv;
  o.env = faultline::testing::environmentWith(env, [](std::string_view key) {
    return key == "RANK" || key == "LD_PRELOAD" || key.rfind("FAULTLINE_", 0) == 0;
  });
  o.stdout_path = dir / "stdout";
  o.stderr_path = dir / "stderr";
  return faultline::testing::runChild(o, std::nullopt, /*capture=*/true);
}

Outcome victim(const std::vector<std::string>& actions, const std::map<std::string, std::string>& env,
               const TempDir& dir, bool preload = true) {
  std::vector<std::string> argv{FL_VICTIM};
  argv.insert(argv.end(), actions.begin(), actions.end());
  return run(argv, env, dir, preload);
}

std::map<std::string, std::string> rankEnv(const TempDir& dir, const std::string& rank) {
  return {{"RANK", rank}, {"FAULTLINE_EVENTS", dir / "events.jsonl"}};
}

// ---- file_open ----

TEST(PreloadFileOpen, EveryOpenForWritingIsRecordedWithItsMode) {
  TempDir dir;
  const std::string d = dir.path().string();
  std::ofstream(dir / "existing.txt") << "x";
  auto o = victim({"open-w:" + d + "/w.txt", "open-a:" + d + "/a.txt", "open-rw:" + d + "/rw.txt",
                   "open-r:" + d + "/existing.txt", "openat-w:" + d + "/at.txt", "creat:" + d + "/creat.txt",
                   "fopen-w:" + d + "/fw.txt", "fopen-a:" + d + "/fa.txt", "fopen-r+:" + d + "/existing.txt",
                   "fopen-r:" + d + "/existing.txt"},
                  rankEnv(dir, "2"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  auto opens = eventsOf(readEvents(dir / "events.jsonl"), "file_open");
  std::map<std::string, std::string> seen;
  for (const auto& e : opens) {
    EXPECT_EQ(e["rank"], 2);
    EXPECT_TRUE(e["t"].is_number_integer());
    EXPECT_TRUE(e["pid"].is_number_integer());
    seen[fs::path(e["path"].get<std::string>()).filename().string()] += e["mode"].get<std::string>();
    EXPECT_EQ(e["path"].get<std::string>().rfind(fs::canonical(dir.path()).string(), 0), 0u) << e.dump();
  }
  const std::map<std::string, std::string> want{{"w.txt", "w"},     {"a.txt", "a"},       {"rw.txt", "rw"},
                                                {"at.txt", "w"},    {"creat.txt", "w"},   {"fw.txt", "w"},
                                                {"fa.txt", "a"},    {"existing.txt", "rw"}};
  EXPECT_EQ(seen, want);
}

// A file name is bytes: a surrogate, an overlong form and a truncated
// sequence in one still make a line that a strict reader takes (readEvents
// throws otherwise), each maximal subpart as U+FFFD.
TEST(PreloadFileOpen, AnIllFormedFileNameIsWrittenAsValidUtf8) {
  TempDir dir;
  const std::string d = dir.path().string();
  auto o = victim({"open-w:" + d + "/s\xed\xa0\x80-o\xc0\xaf-t\xe2\x82.txt"}, rankEnv(dir, "0"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  auto opens = eventsOf(readEvents(dir / "events.jsonl"), "file_open");
  ASSERT_EQ(opens.size(), 1u);
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(fs::path(opens[0]["path"].get<std::string>()).filename().string(), "s" + r + r + r + "-o" + r + r + "-t" + r + ".txt");
}

TEST(PreloadFileOpen, PythonOpenForWriting) {
  TempDir dir;
  const std::string script = "import os\n"
                             "open('out.txt', 'w').write('x')\n"
                             "open('log.txt', 'a').write('y')\n"
                             "open('out.txt').read()\n"
                             "with open('bin.pt', 'wb') as f: f.write(b'z')\n";
  auto env = rankEnv(dir, "1");
  auto o = run({"/usr/bin/python3", "-c", "import os; os.chdir('" + dir.path().string() + "')\n" + script}, env, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  std::map<std::string, std::string> seen;
  for (const auto& e : eventsOf(readEvents(dir / "events.jsonl"), "file_open")) {
    seen[e["path"].get<std::string>()] = e["mode"].get<std::string>();
  }
  const std::string canon = fs::canonical(dir.path()).string();
  const std::map<std::string, std::string> want{
      {canon + "/out.txt", "w"}, {canon + "/log.txt", "a"}, {canon + "/bin.pt", "w"}};
  EXPECT_EQ(seen, want);
}

TEST(PreloadFileOpen, ARelativeNameAfterChdirIsAnotherFile) {
  TempDir dir;
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  const std::string script = "import os, sys\n"
                             "for d in ('a', 'b', 'a'):\n"
                             "    os.chdir(os.path.join(sys.argv[1], d))\n"
                             "    open('same.txt', 'w').close()\n";
  auto o = run({"/usr/bin/python3", "-c", script, dir.path().string()}, rankEnv(dir, "0"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  std::vector<std::string> paths;
  for (const auto& e : eventsOf(readEvents(dir / "events.jsonl"), "file_open")) paths.push_back(e["path"]);
  const std::string canon = fs::canonical(dir.path()).string();
  EXPECT_EQ(paths, (std::vector<std::string>{canon + "/a/same.txt", canon + "/b/same.txt"}));
}

TEST(PreloadFileOpen, NothingIsRecordedWithoutARank) {
  TempDir dir;
  auto o = victim({"open-w:" + dir / "w.txt", "segv"}, {{"FAULTLINE_EVENTS_DIR", dir / "events"}}, dir);
  EXPECT_EQ(o.signal(), SIGSEGV);
  EXPECT_FALSE(fs::exists(dir / "events"));
}

TEST(PreloadFileOpen, SpawnRankComesFromFaultlineRank) {
  // torch.multiprocessing.spawn children have no RANK; the Python shim names
  // the rank in FAULTLINE_RANK, possibly after the process started.
  TempDir dir;
  const std::string script = "import os\n"
                             "open(os.path.join(os.environ['D'], 'before.txt'), 'w')\n"
                             "os.environ['FAULTLINE_RANK'] = '3'\n"
                             "open(os.path.join(os.environ['D'], 'after.txt'), 'w')\n";
  auto o = run({"/usr/bin/python3", "-c", script},
               {{"FAULTLINE_EVENTS_DIR", dir / "events"}, {"D", dir.path().string()}}, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  auto opens = eventsOf(readEvents(dir / "events/3/events.jsonl"), "file_open");
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(opens[0]["rank"], 3);
  EXPECT_EQ(fs::path(opens[0]["path"].get<std::string>()).filename(), "after.txt");
}

TEST(PreloadFileOpen, OncePerPathAndModeInAProcess) {
  TempDir dir;
  const std::string p = dir / "again.txt";
  auto o = victim({"open-w:" + p, "open-w:" + p, "open-w:" + p, "open-a:" + p}, rankEnv(dir, "0"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  auto opens = eventsOf(readEvents(dir / "events.jsonl"), "file_open");
  ASSERT_EQ(opens.size(), 2u);
  EXPECT_EQ(opens[0]["mode"], "w");
  EXPECT_EQ(opens[1]["mode"], "a");
}

TEST(PreloadFileOpen, TheRunsOwnFilesAndDevicesAreNotRecorded) {
  TempDir dir;
  const std::string run_dir = dir / "run";
  fs::create_directories(run_dir + "/ranks/0");
  fs::create_directories(run_dir + "/launcher/logs");
  auto env = std::map<std::string, std::string>{
      {"RANK", "0"}, {"FAULTLINE_RUN_DIR", run_dir}, {"FAULTLINE_EVENTS", run_dir + "/ranks/0/events.jsonl"}};
  auto o = victim({"open-a:" + run_dir + "/ranks/0/events.jsonl", "open-w:" + run_dir + "/ranks/0/error.json",
                   "open-w:" + run_dir + "/launcher/logs/stderr.log", "open-w:/dev/null",
                   "open-w:" + run_dir + "/checkpoint.pt"},
                  env, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  auto opens = eventsOf(readEvents(run_dir + "/ranks/0/events.jsonl"), "file_open");
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(fs::path(opens[0]["path"].get<std::string>()).filename(), "checkpoint.pt");
}

TEST(PreloadFileOpen, ErrnoIsPreserved) {
  TempDir dir;
  auto o = victim({"errno-keep:" + dir / "keep.txt", "errno-fail:" + dir / "missing.txt"}, rankEnv(dir, "0"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(o.out, "errno EXDEV fd ok\nerrno ENOENT\n");
  EXPECT_EQ(eventsOf(readEvents(dir / "events.jsonl"), "file_open").size(), 1u);
}

TEST(PreloadFileOpen, OpensBeforeTheInterposersConstructorWork) {
  TempDir dir;
  auto env = rankEnv(dir, "0");
  env["VICTIM_EARLY_FILE"] = dir / "early.txt";
  auto o = victim({}, env, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(readFile(dir / "early.txt"), "early\n");
  auto opens = eventsOf(readEvents(dir / "events.jsonl"), "file_open");
  ASSERT_EQ(opens.size(), 1u);
  EXPECT_EQ(fs::path(opens[0]["path"].get<std::string>()).filename(), "early.txt");
}

TEST(PreloadFileOpen, ThreadsKeepLinesWhole) {
  TempDir dir;
  fs::create_directories(dir / "files");
  constexpr int kThreads = 8, kFiles = 250;
  auto o = victim({"threads:" + dir / "files" + ":" + std::to_string(kThreads) + ":" + std::to_string(kFiles)},
                  rankEnv(dir, "0"), dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(eventsOf(readEvents(dir / "events.jsonl"), "file_open").size(), static_cast<size_t>(kThreads * kFiles));
}

TEST(PreloadFileOpen, ForkChildWithAnotherRankWritesItsOwnEvents) {
  TempDir dir;
  auto o = victim({"open-w:" + dir / "parent.txt", "fork:3:" + dir / "child.txt"},
                  {{"RANK", "0"}, {"FAULTLINE_EVENTS_DIR", dir / "events"}}, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(o.out, "open ok\nfork ok\n");
  auto parent = eventsOf(readEvents(dir / "events/0/events.jsonl"), "file_open");
  auto child = eventsOf(readEvents(dir / "events/3/events.jsonl"), "file_open");
  ASSERT_EQ(parent.size(), 1u);
  ASSERT_EQ(child.size(), 1u);
  EXPECT_EQ(child[0]["rank"], 3);
  EXPECT_EQ(fs::path(child[0]["path"].get<std::string>()).filename(), "child.txt");
  EXPECT_NE(child[0]["pid"], parent[0]["pid"]);
}

// ---- fatal signals ----

TEST(PreloadCrash, SegfaultIsReportedAndTheProcessStillDiesOfIt) {
  TempDir dir;
  auto o = victim({"segv"}, rankEnv(dir, "1"), dir);
  EXPECT_EQ(o.signal(), SIGSEGV);
  auto errors = eventsOf(readEvents(dir / "events.jsonl"), "error");
  ASSERT_EQ(errors.size(), 1u);
  const json& e = errors[0];
  EXPECT_EQ(e["rank"], 1);
  EXPECT_EQ(e["kind"], "signal");
  EXPECT_EQ(e["type"], "SIGSEGV");
  EXPECT_EQ(e["message"], "segmentation fault at address 0x000000000000");
  ASSERT_TRUE(e["stack"].is_array());
  ASSERT_GT(e["stack"].size(), 0u);
  // The faulting program's frames, not the handler's.
  EXPECT_NE(e["stack"][0].get<std::string>().find("fl_preload_victim"), std::string::npos) << e["stack"].dump();
  for (const auto& f : e["stack"]) EXPECT_EQ(f.get<std::string>().find("libfaultline_preload"), std::string::npos);
}

TEST(PreloadCrash, AbortIsReported) {
  TempDir dir;
  auto o = victim({"abort"}, rankEnv(dir, "0"), dir);
  EXPECT_EQ(o.signal(), SIGABRT);
  auto errors = eventsOf(readEvents(dir / "events.jsonl"), "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["type"], "SIGABRT");
  EXPECT_EQ(errors[0]["message"], "aborted");
}

TEST(PreloadCrash, TheProgramsOwnHandlerStillRuns) {
  TempDir dir;
  auto o = victim({"handler-segv"}, rankEnv(dir, "0"), dir);
  EXPECT_EQ(o.code(), 42);
  EXPECT_EQ(o.out, "handler ran\n");
  EXPECT_TRUE(eventsOf(readEvents(dir / "events.jsonl"), "error").empty());
}

TEST(PreloadCrash, AProbeLinkedProgramIsReportedOnce) {
  TempDir dir;
  auto o = run({FL_PROBE_CRASH}, rankEnv(dir, "0"), dir);
  EXPECT_EQ(o.signal(), SIGSEGV);
  auto errors = eventsOf(readEvents(dir / "events.jsonl"), "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_FALSE(errors[0].contains("source")) << "the probe's handler, not the interposer's, reports";
}

TEST(PreloadCrash, PythonSegfaultIsReported) {
  TempDir dir;
  auto o = run({"/usr/bin/python3", "-c", "import ctypes; ctypes.string_at(0)"}, rankEnv(dir, "1"), dir);
  EXPECT_EQ(o.signal(), SIGSEGV);
  auto errors = eventsOf(readEvents(dir / "events.jsonl"), "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["type"], "SIGSEGV");
  EXPECT_EQ(errors[0]["message"], "segmentation fault at address 0x000000000000");
}

// faulthandler installs its handler over this one, dumps the Python stack,
// restores the previous handler and re-raises: both report, the exit status
// stays the signal, and a re-raised signal has no fault address.
TEST(PreloadCrash, FaulthandlerChainsBackToTheInterposer) {
  TempDir dir;
  auto o = run({"/usr/bin/python3", "-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"},
               rankEnv(dir, "1"), dir);
  EXPECT_EQ(o.signal(), SIGSEGV);
  EXPECT_NE(o.err.find("Fatal Python error: Segmentation fault"), std::string::npos) << o.err;
  auto errors = eventsOf(readEvents(dir / "events.jsonl"), "error");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["message"], "segmentation fault");
}

// ---- injection ----

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string l; std::getline(s, l);) out.push_back(l);
  return out;
}

TEST(PreloadInject, WriteEnospcHitsRankOneOnlyAfterExactlyNWrites) {
  for (const std::string rank : {"0", "1"}) {
    TempDir dir;
    auto env = rankEnv(dir, rank);
    env["FAULTLINE_INJECT"] = "write:ENOSPC:rank=1:after=3";
    auto o = victim({"write:" + dir / "ckpt.bin" + ":6"}, env, dir);
    ASSERT_EQ(o.code(), 0) << o.err;
    const bool hit = rank == "1";
    const std::vector<std::string> want{"write 0 ok",
                                        "write 1 ok",
                                        "write 2 ok",
                                        hit ? "write 3 ENOSPC" : "write 3 ok",
                                        hit ? "write 4 ENOSPC" : "write 4 ok",
                                        hit ? "write 5 ENOSPC" : "write 5 ok"};
    EXPECT_EQ(lines(o.out), want) << "rank " << rank;
    EXPECT_EQ(fs::file_size(dir / "ckpt.bin"), hit ? 6u : 12u) << "rank " << rank;
    auto faults = eventsOf(readEvents(dir / "events.jsonl"), "fault");
    ASSERT_EQ(faults.size(), hit ? 3u : 0u);
    for (size_t i = 0; i < faults.size(); ++i) {
      EXPECT_EQ(faults[i]["kind"], "syscall");
      EXPECT_TRUE(faults[i]["step"].is_null());
      EXPECT_EQ(faults[i]["call"], "write");
      EXPECT_EQ(faults[i]["errno"], "ENOSPC");
      EXPECT_EQ(faults[i]["rule"], "write:ENOSPC:rank=1:after=3");
      EXPECT_EQ(fs::path(faults[i]["path"].get<std::string>()).filename(), "ckpt.bin");
      EXPECT_EQ(faults[i]["nth"], static_cast<int>(i) + 1);
    }
  }
}

TEST(PreloadInject, CountEndsTheFailures) {
  TempDir dir;
  auto env = rankEnv(dir, "0");
  env["FAULTLINE_INJECT"] = "write:EIO:after=1:count=2";
  auto o = victim({"write:" + dir / "f:5"}, env, dir);
  EXPECT_EQ(lines(o.out),
            (std::vector<std::string>{"write 0 ok", "write 1 EIO", "write 2 EIO", "write 3 ok", "write 4 ok"}));
}

TEST(PreloadInject, FsyncEio) {
  TempDir dir;
  auto env = rankEnv(dir, "0");
  env["FAULTLINE_INJECT"] = "fsync:EIO";
  auto o = victim({"fsync:" + dir / "a", "fdatasync:" + dir / "b", "pwrite:" + dir / "c"}, env, dir);
  EXPECT_EQ(o.out, "fsync EIO\nfdatasync ok\npwrite ok\n");
  auto faults = eventsOf(readEvents(dir / "events.jsonl"), "fault");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["call"], "fsync");
  EXPECT_EQ(faults[0]["errno"], "EIO");
}

TEST(PreloadInject, PwriteIsAWrite) {
  TempDir dir;
  auto env = rankEnv(dir, "0");
  env["FAULTLINE_INJECT"] = "write:EDQUOT:path=*/c";
  auto o = victim({"pwrite:" + dir / "c", "write:" + dir / "d:1"}, env, dir);
  EXPECT_EQ(o.out, "pwrite EDQUOT\nwrite 0 ok\n");
}

// A listening socket on 127.0.0.1 for connect to reach.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() { ::close(fd_); }
  std::string port() const { return std::to_string(port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(PreloadInject, ConnectRefused) {
  Listener server;
  TempDir dir;
  auto env = rankEnv(dir, "0");
  EXPECT_EQ(victim({"connect:" + server.port()}, env, dir).out, "connect ok\n");
  env["FAULTLINE_INJECT"] = "connect:ECONNREFUSED";
  EXPECT_EQ(victim({"connect:" + server.port()}, env, dir).out, "connect ECONNREFUSED\n");
  auto faults = eventsOf(readEvents(dir / "events.jsonl"), "fault");
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0]["addr"], "127.0.0.1:" + server.port());
  env["FAULTLINE_INJECT"] = "connect:ECONNREFUSED:addr=*:1";
  EXPECT_EQ(victim({"connect:" + server.port()}, env, dir).out, "connect ok\n");
}

TEST(PreloadInject, OpenFailsOnlyForWritingAndOnlyOnItsPaths) {
  TempDir dir;
  std::ofstream(dir / "blocked.pt") << "x";
  auto env = rankEnv(dir, "0");
  env["FAULTLINE_INJECT"] = "open:EACCES:path=*/blocked*";
  auto o = victim({"open-w:" + dir / "blocked.pt", "fopen-a:" + dir / "blocked.pt", "open-r:" + dir / "blocked.pt",
                   "open-w:" + dir / "other.pt"},
                  env, dir);
  EXPECT_EQ(o.out, "open EACCES\nfopen EACCES\nopen ok\nopen ok\n");
  EXPECT_EQ(eventsOf(readEvents(dir / "events.jsonl"), "fault").size(), 2u);
}

TEST(PreloadInject, StdoutAndTheRunsFilesAreNeverFaulted) {
  TempDir dir;
  const std::string run_dir = dir / "run";
  fs::create_directories(run_dir + "/ranks/0");
  auto o = victim({"stdout-write", "write:" + run_dir + "/ranks/0/stderr:2", "write:" + run_dir + "/mine:1"},
                  {{"RANK", "0"},
                   {"FAULTLINE_RUN_DIR", run_dir},
                   {"FAULTLINE_EVENTS", run_dir + "/ranks/0/events.jsonl"},
                   {"FAULTLINE_INJECT", "write:ENOSPC"}},
                  dir);
  EXPECT_EQ(o.out, "stdout-write ok\nwrite 0 ok\nwrite 1 ok\nwrite 0 ENOSPC\n");
}

TEST(PreloadInject, NoRankNoFault) {
  TempDir dir;
  auto o = victim({"write:" + dir / "f:1"}, {{"FAULTLINE_INJECT", "write:ENOSPC"}}, dir);
  EXPECT_EQ(o.out, "write 0 ok\n");
}

TEST(PreloadInject, ABadSpecIsReportedAndInjectsNothing) {
  TempDir dir;
  auto env = rankEnv(dir, "1");
  env["FAULTLINE_INJECT"] = "write:ENOSPACE:rank=1";
  auto o = victim({"write:" + dir / "f:1"}, env, dir);
  EXPECT_EQ(o.code(), 0);
  EXPECT_EQ(o.out, "write 0 ok\n");
  EXPECT_NE(o.err.find("bad FAULTLINE_INJECT \"write:ENOSPACE:rank=1\" at character 7: unknown errno 'ENOSPACE'"),
            std::string::npos)
      << o.err;
}

TEST(PreloadInject, PythonSeesOSErrorWithTheErrno) {
  TempDir dir;
  auto env = rankEnv(dir, "1");
  env["FAULTLINE_INJECT"] = "write:ENOSPC:rank=1:path=*.pt";
  const std::string script = "import errno, os, sys\n"
                             "open(sys.argv[1] + '/log.txt', 'w').write('fine')\n"
                             "try:\n"
                             "    with open(sys.argv[1] + '/ckpt.pt', 'wb') as f: f.write(b'x' * 100)\n"
                             "except OSError as e:\n"
                             "    print(errno.errorcode[e.errno])\n";
  auto o = run({"/usr/bin/python3", "-c", script, dir.path().string()}, env, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(o.out, "ENOSPC\n");
}

TEST(PreloadInject, ReadEioOnItsFileOnly) {
  TempDir dir;
  std::ofstream(dir / "data.bin") << "samples";
  std::ofstream(dir / "other.bin") << "samples";
  auto env = rankEnv(dir, "0");
  env["FAULTLINE_INJECT"] = "read:EIO:path=*/data.bin";
  const std::string script = "import sys\n"
                             "print(open(sys.argv[1] + '/other.bin', 'rb').read().decode())\n"
                             "try:\n"
                             "    open(sys.argv[1] + '/data.bin', 'rb').read()\n"
                             "except OSError as e:\n"
                             "    print(e.strerror)\n";
  auto o = run({"/usr/bin/python3", "-c", script, dir.path().string()}, env, dir);
  ASSERT_EQ(o.code(), 0) << o.err;
  EXPECT_EQ(o.out, "samples\nInput/output error\n");
}

// Only the wrapped libc functions are visible: nothing of the library's own
// can clash with a symbol of the program it is loaded into.
TEST(PreloadLibrary, ExportsOnlyTheInterposedFunctions) {
  void* lib = ::dlopen(FL_PRELOAD, RTLD_LAZY | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  for (const char* own : {"fl_rank", "fl_emit", "fl_next", "fl_inject_parse", "fl_inject_mask_", "fl_record_open"}) {
    EXPECT_EQ(::dlsym(lib, own), nullptr) << own;
  }
  for (const char* wrapped : {"open", "openat64", "fopen", "write", "pwrite64", "fsync", "connect", "chdir"}) {
    EXPECT_NE(::dlsym(lib, wrapped), nullptr) << wrapped;
  }
  ::dlclose(lib);
}

TEST(PreloadInject, WithoutThePreloadNothingHappens) {
  TempDir dir;
  auto env = rankEnv(dir, "1");
  env["FAULTLINE_INJECT"] = "write:ENOSPC";
  auto o = victim({"write:" + dir / "f:1", "open-w:" + dir / "g"}, env, dir, /*preload=*/false);
  EXPECT_EQ(o.out, "write 0 ok\nopen ok\n");
  EXPECT_FALSE(fs::exists(dir / "events.jsonl"));
}

}  // namespace
