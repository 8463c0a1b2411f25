// The reference trainer's entry point, shared by the program (main.cc) and the
// library a Python process calls (libfaultline-trainer-<suffix>.so, through
// harness/launch/python/reference_trainer.py): the stacks whose ranks run a
// Python function or script (spawn, Lightning, Ray Train) run the C++
// trainer as a C++ training loop is run from Python, in the rank's own
// process.
#pragma once

extern "C" {

// argv[0] names the trainer; the rest are its options (usage()). Returns the
// exit status the program would have. An exception nobody catches ends the
// process through std::terminate without unwinding, as in the program: no
// caller catches it (not noexcept, whose handler would unwind the trainer's
// frames, its process group among them, first; main.cc's reason), and
// ctypes's C frames above it have no handler either.
int faultline_trainer_main(int argc, char** argv);

}  // extern "C"
