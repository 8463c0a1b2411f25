"""Runs a per-rank trainer script under Lightning's launcher, as the lightning
stack runs a Python scenario that has no Lightning trainer of its own
(docs/LAUNCHERS.md, "lightning").

    python lightning_script.py --devices N [NODE FLAGS] SCRIPT [ARGS...]
    python lightning_script.py --devices N [NODE FLAGS] -m MODULE [ARGS...]

    NODE FLAGS: --num_nodes M --node_rank K --master_addr ADDR  (one per node)

Lightning starts its ranks from the script itself: Fabric(strategy="ddp",
devices=N).launch(fn) in `python train.py` is rank 0, and starts the same
command again for ranks 1..N-1 (lightning/fabric/strategies/launchers/
subprocess_script.py), watching them with its child-process observer. This
program is that script for a plain torch.distributed trainer, as a user who
moves a torchrun script onto Fabric writes it: the launched function runs the
trainer as its __main__, with the environment torchrun would give it (RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR,
MASTER_PORT). Across nodes the same program runs on every node with
Fabric(num_nodes=M), told its node (NODE_RANK) and node 0's address
(MASTER_ADDR) in the environment, where Lightning's own cluster environment
reads them. The trainer makes its own process group, as it does under
torchrun: the strategy is Lightning's DDPStrategy with its
init_process_group left out (the step a user removes from the script
otherwise stays in it). What the trainer raises, and what Lightning's
launcher does about it, are the stack's.
"""
import os
import sys

from run_trainer import check_node_place, parse_flags, run_as_main, split_trainer


_INT_FLAGS = ("--devices", "--num_nodes", "--node_rank")


def _usage(message):
    sys.stderr.write("lightning_script: %s\nusage: lightning_script.py --devices N [--num_nodes M --node_rank K "
                     "--master_addr ADDR] (SCRIPT | -m MODULE) [ARGS...]\n" % message)
    sys.exit(2)


def _parse(argv):
    """The runner's flags, then the trainer."""
    opts, i = parse_flags(argv, _INT_FLAGS, ("--master_addr",), _usage)
    if opts.get("devices", 0) < 1:
        _usage("--devices N (N >= 1) is required")
    check_node_place(opts.get("num_nodes", 1), opts.get("node_rank", 0), "--num_nodes", _usage)
    module, target, args = split_trainer(argv[i:], _usage)
    return opts, module, target, args


def script_strategy():
    """Lightning's DDPStrategy, setting up the rank's device and its world
    ranks (the cluster environment's) and leaving init_process_group to the
    script, which reads them from the environment."""
    from lightning.fabric.strategies import DDPStrategy, Strategy

    class ScriptDDPStrategy(DDPStrategy):
        def setup_environment(self):
            Strategy.setup_environment(self)  # the accelerator's device, not DDP's process group
            self._set_world_ranks()
            env = self.cluster_environment
            os.environ.update({
                "MASTER_ADDR": env.main_address,
                "MASTER_PORT": str(env.main_port),
                "RANK": str(env.global_rank()),
                "WORLD_SIZE": str(env.world_size()),
                "LOCAL_RANK": str(env.local_rank()),
                "LOCAL_WORLD_SIZE": str(self.num_processes),
                "NODE_RANK": str(env.node_rank()),
                "GROUP_RANK": str(env.node_rank()),
            })

    return ScriptDDPStrategy()


def _tell_faultline(rank, world_size):
    """Under faultline, its Python shim makes a process a rank when the
    trainer's init_process_group names it (Lightning's ranks 1..N-1 start
    without RANK). A trainer that fails before it gets there (an import, its
    arguments, a rank that exits before the rendezvous) would go unseen: the
    rank is named here, as the environment now names it. Nothing without
    faultline."""
    shim = sys.modules.get("faultline_shim")
    if shim is not None and hasattr(shim, "became_rank"):
        shim.became_rank(rank, world_size)


def run_script(_fabric, module, target, args):
    """The launched function: one rank runs the trainer as its __main__."""
    _tell_faultline(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
    try:
        run_as_main(module, target, args)
    except SystemExit as e:
        if e.code not in (None, 0):
            raise


def main():
    opts, module, target, args = _parse(sys.argv[1:])
    if not module and not os.path.isfile(target):
        _usage("no such trainer script: %s" % target)
    if "node_rank" in opts:
        os.environ["NODE_RANK"] = str(opts["node_rank"])
    if "master_addr" in opts:
        os.environ["MASTER_ADDR"] = opts["master_addr"]
    import lightning as L

    fabric = L.Fabric(accelerator="cpu", devices=opts["devices"], num_nodes=opts.get("num_nodes", 1),
                      strategy=script_strategy())
    fabric.launch(run_script, module, target if module else os.path.abspath(target), args)


if __name__ == "__main__":
    main()
