// A bounded multi-process launcher for trainer tests.
#include "tests/reference-trainer/rank_launcher.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/test_scale.h"

namespace faultline::testing {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool RankRun::exitedWith(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
bool RankRun::killedBy(int signal) const { return WIFSIGNALED(status) && WTERMSIG(status) == signal; }

std::vector<nlohmann::json> RankRun::eventsOf(const std::string& ev) const {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e.value("ev", "") == ev) out.push_back(e);
  }
  return out;
}

std::string trainerBin() {
  const char* bin = std::getenv("FAULTLINE_TRAINER_BIN");
  return bin && *bin ? bin : FAULTLINE_TRAINER_BIN;
}

std::string trainerUnavailable() {
  const char* why = std::getenv("FAULTLINE_TRAINER_UNAVAILABLE");
  if (!why || !*why) return "";
  return "unsupported: " + fs::path(trainerBin()).filename().string() + " was not built: " + why;
}

Launch launchRanks(const std::string& name, const LaunchOptions& options) {
  Launch launch;
  launch.dir = fs::temp_directory_path() / ("fl_trainer_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(launch.dir);
  fs::create_directories(launch.dir);
  const int port = freePort();
  const std::string bin = trainerBin();
  const auto start = Clock::now();
  std::vector<pid_t> pids;
  for (int r = 0; r < options.world_size; ++r) {
    const fs::path rdir = launch.dir / std::to_string(r);
    fs::create_directories(rdir);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      int out = ::open((rdir / "stdout").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open((rdir / "stderr").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(options.world_size).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(options.world_size).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("FAULTLINE_EVENTS", (rdir / "events.jsonl").c_str(), 1);
      ::unsetenv("FAULTLINE_EVENTS_DIR");
      ::unsetenv("FAULTLINE_FAULT");
      std::vector<std::string> args{bin, "--out-dir", (launch.dir / "out").string()};
      args.insert(args.end(), options.args.begin(), options.args.end());
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(126);
    }
    pids.push_back(pid);
  }
  launch.ranks.resize(static_cast<size_t>(options.world_size));
  size_t left = pids.size();
  std::optional<Clock::time_point> kill_at;
  while (left > 0) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] != pid) continue;
        launch.ranks[r].status = status;
        launch.ranks[r].exit_s = std::chrono::duration<double>(Clock::now() - start).count();
        pids[r] = -1;
        --left;
        const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        if (failed && !kill_at) kill_at = Clock::now() + scaled(options.after_failure);
      }
      continue;
    }
    const auto now = Clock::now();
    if ((kill_at && now >= *kill_at) || now - start >= scaled(options.deadline)) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] > 0) {
          ::kill(-pids[r], SIGKILL);
          launch.ranks[r].killed_by_launcher = true;
        }
      }
      kill_at = now + std::chrono::hours(1);
    }
    // A bounded wait for the next exit; the launcher has nothing else to do.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < options.world_size; ++r) {
    auto& run = launch.ranks[static_cast<size_t>(r)];
    run.rank = r;
    const fs::path rdir = launch.dir / std::to_string(r);
    run.out = readFile(rdir / "stdout");
    run.err = readFile(rdir / "stderr");
    std::ifstream ev(rdir / "events.jsonl");
    std::string line;
    while (std::getline(ev, line)) run.events.push_back(nlohmann::json::parse(line));
  }
  return launch;
}

}  // namespace faultline::testing
