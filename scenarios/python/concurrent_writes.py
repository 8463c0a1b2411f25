"""Every rank appends its progress to the same log file, and saves "the"
checkpoint to the same path: lines interleave and the checkpoint is whoever
wrote last. The files go to OUT_DIR, else $FAULTLINE_RUN_DIR/trainer (as the
reference trainer's outputs do), else the working directory."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402
import torch  # noqa: E402


def out_dir():
    if os.environ.get("OUT_DIR"):
        return os.environ["OUT_DIR"]
    if os.environ.get("FAULTLINE_RUN_DIR"):
        return os.path.join(os.environ["FAULTLINE_RUN_DIR"], "trainer")
    return "."


def main():
    rank, world = ddp.setup()
    out = out_dir()
    os.makedirs(out, exist_ok=True)
    model, loader, opt = ddp.make_model_and_data(rank, world)
    with open(os.path.join(out, "train.log"), "a") as log:  # the bug: one file for every rank
        for step, (xb, yb) in enumerate(loader):
            if step == 6:
                break
            loss = ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
            log.write(f"rank={rank} step={step} loss={loss.item():.4f}\n")
            log.flush()
    torch.save(model.state_dict(), os.path.join(out, "checkpoint.pt"))  # and so is this (rank 0's job)
    ddp.cleanup()


if __name__ == "__main__":
    main()
