"""A clean DDP run paced to last a few seconds: `--steps N` steps (default
24) over as many epochs as that takes, `--step-ms MS` of work per step
(default 150), so that a fault struck from outside mid-run (a node lost, a
link cut) finds every rank in training. Rank 0 prints the final loss."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    steps, step_ms = arg("--steps", 24), arg("--step-ms", 150)
    rank, world = ddp.setup()
    try:
        model, loader, opt = ddp.make_model_and_data(rank, world)
        done, epoch = 0, 0
        while done < steps:
            loader.sampler.set_epoch(epoch)
            for xb, yb in loader:
                if done == steps:
                    break
                time.sleep(step_ms / 1000.0)  # the step's work
                loss = ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
                done += 1
            epoch += 1
        if rank == 0:
            print(f"final loss {loss.item()!r} after {done} steps")
    finally:
        ddp.cleanup()


if __name__ == "__main__":
    main()
