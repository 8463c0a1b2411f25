// faultline-trainer: the reference LibTorch DDP trainer. Runs under torchrun
// --no_python, faultline, or a shell loop that sets the torchrun environment.
#include "reference-trainer/entry.h"

int main(int argc, char** argv) { return faultline_trainer_main(argc, argv); }
