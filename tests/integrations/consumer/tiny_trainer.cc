// A user's trainer, as small as one gets: steps, each with a fake collective,
// written through faultline's probe. CRASH_RANK's rank throws at step 3.
#include <faultline/probe.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

int main(int argc, char** argv) {
  fl_probe_install_crash_handlers();
  const char* rank_env = std::getenv("RANK");
  const char* world_env = std::getenv("WORLD_SIZE");
  const int rank = rank_env ? std::atoi(rank_env) : 0;
  const int world = world_env ? std::atoi(world_env) : 1;
  const int crash_rank = argc > 1 ? std::atoi(argv[1]) : -1;
  fl_probe_start(world, "none", "cpu");
  for (int step = 1; step <= 6; ++step) {
    fl_probe_step_begin(step, 0);
    fl_probe_collective_begin("allreduce", step, 1024, "float32");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fl_probe_collective_end("allreduce", step, 1024, "float32");
    if (rank == crash_rank && step == 3) throw std::runtime_error("tiny trainer: loss is NaN at step 3");
    fl_probe_step_end(step, 0);
  }
  fl_probe_exit(0);
  return 0;
}
