/* The same tiny trainer in C: the probe's API is C, and a C program links
 * faultline::probe with the C linker (its C++ runtime comes with the target). */
#include <faultline/probe.h>

#include <stdlib.h>

int main(void) {
  const char* world_env = getenv("WORLD_SIZE");
  fl_probe_start(world_env ? atoi(world_env) : 1, "none", "cpu");
  for (int step = 1; step <= 3; ++step) {
    fl_probe_step_begin(step, 0);
    fl_probe_collective_begin("allreduce", step, 1024, "float32");
    fl_probe_collective_end("allreduce", step, 1024, "float32");
    fl_probe_step_end(step, 0);
  }
  fl_probe_exit(0);
  return 0;
}
