"""No DistributedSampler: every rank shuffles the whole dataset with the same
seed, so all ranks train on the same samples in the same order. Runs and
ends cleanly; N ranks do the work of one."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402


def main():
    ddp.setup()
    model = ddp.make_model(seed=0)
    loader = DataLoader(ddp.make_dataset(), batch_size=16, shuffle=True)  # the bug: no sampler per rank
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (xb, yb) in enumerate(loader):
        if step == 8:
            break
        ddp.mean_loss(ddp.train_step(model, opt, xb, yb))
    ddp.cleanup()


if __name__ == "__main__":
    main()
