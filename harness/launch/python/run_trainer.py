"""What the launch stage's runners share (spawn_runner.py, ray_script.py,
lightning_script.py): the trainer their command line names, and running it
as a rank's __main__, as `python SCRIPT ARGS` or `python -m MODULE ARGS`
would."""
import os
import runpy
import sys


def split_trainer(rest, usage):
    """(module, target, args) from `SCRIPT [ARGS...]` or `-m MODULE [ARGS...]`;
    usage(message) when there is none."""
    module = bool(rest) and rest[0] == "-m"
    if module:
        rest = rest[1:]
    if not rest:
        usage("no trainer to run")
    return module, rest[0], rest[1:]


def run_as_main(module, target, args):
    """The trainer as this process's __main__, with its own argv."""
    sys.argv = [target] + list(args)
    if module:
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
