// A native trainer that links only faultline::probe, for the probe's scripted
// faults end to end: STEPS steps (argv[1], default 6), each with one
// "allreduce" that is a real barrier across WORLD_SIZE ranks (files in
// $FAULTLINE_RUN_DIR/barrier), so a rank that never enters it leaves its
// peers waiting there, as a hung collective does. No fault code of its own:
// the faults come from FAULTLINE_FAULT, struck by the probe.
// argv[2] "exit-then-crash=R:S:N": rank R calls exit(N) at step S, and a part
// torn down on the way out fails (a static's destructor throws), as a torch
// operator a thread still calls does while exit() unregisters it.
#include <faultline/probe.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

// Constructed before main, so destroyed after what main registers with exit().
struct TornDownOnTheWayOut {
  bool armed = false;
  ~TornDownOnTheWayOut() noexcept(false) {
    if (armed) throw std::runtime_error("operator registry torn down while a thread still called it");
  }
} g_way_out;

void barrier(const std::string& dir, int rank, int world, int64_t seq) {
  const std::string mine = dir + "/" + std::to_string(seq) + "." + std::to_string(rank);
  const int fd = ::open(mine.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) ::close(fd);
  for (int r = 0; r < world; ++r) {
    const std::string theirs = dir + "/" + std::to_string(seq) + "." + std::to_string(r);
    while (::access(theirs.c_str(), F_OK) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  fl_probe_install_crash_handlers();
  const int rank = std::getenv("RANK") ? std::atoi(std::getenv("RANK")) : 0;
  const int world = std::getenv("WORLD_SIZE") ? std::atoi(std::getenv("WORLD_SIZE")) : 1;
  const int steps = argc > 1 ? std::atoi(argv[1]) : 6;
  int exit_rank = -1, exit_step = -1, exit_code = 0;
  if (argc > 2 && std::sscanf(argv[2], "exit-then-crash=%d:%d:%d", &exit_rank, &exit_step, &exit_code) != 3) {
    std::fprintf(stderr, "probe_trainer: argument 2 is exit-then-crash=RANK:STEP:CODE, not '%s'\n", argv[2]);
    return 2;
  }
  const char* run_dir = std::getenv("FAULTLINE_RUN_DIR");
  const std::string dir = std::string(run_dir ? run_dir : "/tmp") + "/barrier";
  ::mkdir(dir.c_str(), 0755);
  fl_probe_start(world, "files", "cpu");
  int64_t seq = 0;
  for (int step = 1; step <= steps; ++step) {
    fl_probe_step_begin(step, 0);
    if (rank == exit_rank && step == exit_step) {
      g_way_out.armed = true;
      std::exit(exit_code);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the step's compute
    fl_probe_collective_begin("allreduce", seq, 1, "float32");
    barrier(dir, rank, world, seq);
    fl_probe_collective_end("allreduce", seq, 1, "float32");
    ++seq;
    fl_probe_step_end(step, 0);
  }
  fl_probe_exit(0);
  return 0;
}
