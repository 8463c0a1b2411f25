"""Runs the C++ reference trainer inside a Python rank, as a C++ training loop
is run from Python: the stacks whose ranks run a Python function or script
(spawn, Lightning, Ray Train) run it as this script (docs/LAUNCHERS.md,
"The reference trainer under Python launchers").

    python reference_trainer.py LIBRARY [TRAINER OPTIONS...]

LIBRARY is libfaultline-trainer-<torch>.so, built beside the program
faultline-trainer-<torch> against the LibTorch of the torch this Python
imports. The script imports torch first, so that the library's LibTorch is the
one already loaded, then calls faultline_trainer_main with the options, in
this process and this thread, and exits with its status. Everything else is
the trainer's, as under torchrun --no_python: it reads the rank's
environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...), makes its own
process group, strikes its --fault, and an exception nobody catches or a
fatal signal ends the process there and then. A status other than 0 is this
script's SystemExit, which the launcher reports as it reports any rank's.
"""
import ctypes
import os
import sys


def _usage(message):
    sys.stderr.write("reference_trainer: %s\nusage: reference_trainer.py LIBRARY [TRAINER OPTIONS...]\n" % message)
    sys.exit(2)


def run(library, options):
    """The trainer's exit status."""
    import torch  # noqa: F401  the LibTorch the library was linked against, loaded first

    lib = ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
    entry = lib.faultline_trainer_main
    entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    entry.restype = ctypes.c_int
    args = [os.path.basename(library).encode()] + [a.encode() for a in options]
    argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    sys.stdout.flush()
    sys.stderr.flush()
    return entry(len(args), argv)


def main():
    if len(sys.argv) < 2:
        _usage("no trainer library given")
    library = sys.argv[1]
    if not os.path.isfile(library):
        _usage("no such trainer library: %s" % library)
    status = run(os.path.abspath(library), sys.argv[2:])
    if status != 0:
        sys.exit(status)


if __name__ == "__main__":
    main()
