"""Runs a per-rank trainer script as Ray Train's training function, as the
ray stack runs a Python scenario that has no Ray Train driver of its own
(docs/LAUNCHERS.md, "ray").

    python ray_script.py --num-workers N [--max-failures K] SCRIPT [ARGS...]
    python ray_script.py --num-workers N [--max-failures K] -m MODULE [ARGS...]

Ray Train runs a function in each worker of its group, not a script. This
driver is what a user writes to move a torchrun script onto Ray Train: a
TorchTrainer (ScalingConfig(num_workers=N), CPU workers,
FailureConfig(max_failures=K)) whose training function runs the script's
main in each worker, with the environment torchrun would give it (RANK,
LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...; Ray Train's own
backend sets them). The script makes its own process group, as it does
under torchrun: the backend here is Ray Train's TorchConfig with its
process-group setup left out (the step a user removes from the script
otherwise, init_process_group, stays in it). Whatever the script raises
reaches the driver through Ray (TrainingFailedError, with each failed
worker's "[Rank N Error Snippet]"), and that report is the stack's.

The driver connects to the cluster RAY_ADDRESS names (ray_runner.py starts
one); Ray keeps the run's results under $FAULTLINE_RUN_DIR/trainer/ray_results,
else ./ray_results.
"""
import os
import sys

from run_trainer import split_trainer


def _usage(message):
    sys.stderr.write("ray_script: %s\nusage: ray_script.py --num-workers N [--max-failures K] "
                     "(SCRIPT | -m MODULE) [ARGS...]\n" % message)
    sys.exit(2)


def _parse(argv):
    opts, i = {"num_workers": None, "max_failures": 0}, 0
    while i < len(argv) and argv[i] in ("--num-workers", "--max-failures"):
        if i + 1 >= len(argv):
            _usage("missing value: %s" % argv[i])
        try:
            opts[argv[i][2:].replace("-", "_")] = int(argv[i + 1])
        except ValueError:
            _usage("%s %r: expected a whole number" % (argv[i], argv[i + 1]))
        i += 2
    if opts["num_workers"] is None or opts["num_workers"] < 1:
        _usage("--num-workers N (N >= 1) is required")
    module, target, args = split_trainer(argv[i:], _usage)
    return opts, module, target, args


def run_script(config):
    """The training function: one rank runs the script as its __main__."""
    os.chdir(config["cwd"])  # a rank starts where torchrun was started
    # The worker imports from this program's folder as it runs the function
    # (Ray pickles the function itself, not what it imports).
    sys.path.insert(0, config["runners"])
    from run_trainer import run_as_main

    try:
        run_as_main(config["module"], config["target"], config["args"])
    except SystemExit as e:
        # A script's exit(0) ends its rank's work, as it ends a torchrun
        # rank; any other status is the rank's failure, and Ray Train reports
        # the SystemExit as it reports any exception of a training function.
        if e.code not in (None, 0):
            raise


def script_torch_config():
    """Ray Train's TorchConfig whose backend sets the rank environment
    (MASTER_ADDR and MASTER_PORT from worker 0, then RANK, LOCAL_RANK,
    WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK) and leaves init_process_group
    to the script. Its shutdown is Ray's own (the group destroyed if the
    script left one)."""
    from ray.train._internal.utils import get_address_and_port
    from ray.train._internal.worker_group import WorkerGroup as V1WorkerGroup
    from ray.train.torch.config import TorchConfig, _set_torch_distributed_env_vars, _TorchBackend

    class ScriptBackend(_TorchBackend):
        def on_start(self, worker_group, backend_config):
            addr, port = worker_group.execute_single(0, get_address_and_port)

            def set_env_vars(addr, port):
                os.environ["MASTER_ADDR"] = addr
                os.environ["MASTER_PORT"] = str(port)

            worker_group.execute(set_env_vars, addr=addr, port=port)
            if not isinstance(worker_group, V1WorkerGroup):  # V1 sets them at on_training_start
                worker_group.execute(_set_torch_distributed_env_vars)

    class ScriptTorchConfig(TorchConfig):
        @property
        def backend_cls(self):
            return ScriptBackend

    return ScriptTorchConfig()


def main():
    opts, module, target, args = _parse(sys.argv[1:])
    if not module and not os.path.isfile(target):
        _usage("no such trainer script: %s" % target)
    import ray.train
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    run_dir = os.environ.get("FAULTLINE_RUN_DIR")
    storage = os.path.join(run_dir, "trainer", "ray_results") if run_dir else os.path.abspath("ray_results")
    trainer = TorchTrainer(
        run_script,
        train_loop_config={"target": target if module else os.path.abspath(target), "args": args,
                           "module": module, "cwd": os.getcwd(),
                           "runners": os.path.dirname(os.path.abspath(__file__))},
        torch_config=script_torch_config(),
        scaling_config=ScalingConfig(num_workers=opts["num_workers"], use_gpu=False),
        run_config=RunConfig(storage_path=storage, failure_config=FailureConfig(max_failures=opts["max_failures"])),
    )
    trainer.fit()


if __name__ == "__main__":
    main()
