"""What the launch stage's runners share (spawn_runner.py, ray_script.py,
lightning_script.py): their own flags, the trainer their command line names,
and running it as a rank's __main__, as `python SCRIPT ARGS` or `python -m
MODULE ARGS` would."""
import os
import runpy
import sys


def parse_flags(argv, int_flags, str_flags, usage):
    """A runner's own flags before the trainer, `--flag VALUE` or
    `--flag=VALUE`, by name without the dashes (those of int_flags whole
    numbers), and the index of the first argument after them; usage(message)
    for an unknown flag, a missing value or one that is not a number."""
    opts, i = {}, 0
    while i < len(argv) and argv[i].startswith("--"):
        flag, eq, value = argv[i].partition("=")
        if flag not in int_flags + str_flags or (not eq and i + 1 >= len(argv)):
            usage("unknown option or missing value: %s" % argv[i])
        if not eq:
            value = argv[i + 1]
            i += 1
        i += 1
        if flag in int_flags:
            try:
                value = int(value)
            except ValueError:
                usage("%s %r: expected a whole number" % (flag, value))
        opts[flag[2:]] = value
    return opts, i


def check_node_place(nodes, node, nodes_flag, usage):
    """A node's rank K of M nodes: 0 <= K < M."""
    if nodes < 1 or not 0 <= node < nodes:
        usage("--node_rank %d of %s %d: expected 0 <= K < M" % (node, nodes_flag, nodes))


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
