"""Every rank seeds torch with its own rank before building the model (the
"different augmentations per rank" idiom applied one line too early): the
replicas start from different weights. DDP's constructor broadcasts rank 0's
parameters, so training runs and ends cleanly; only the parameters as each
rank built them show the bug."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ddp_common as ddp  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler  # noqa: E402


def main():
    rank, world = ddp.setup()
    model = ddp.make_model(seed=rank)  # the bug: a per-rank seed for the weights
    data = ddp.make_dataset()
    loader = DataLoader(data, batch_size=16, sampler=DistributedSampler(data, num_replicas=world, rank=rank))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (xb, yb) in enumerate(loader):
        if step == 4:
            break
        ddp.train_step(model, opt, xb, yb)
    ddp.cleanup()


if __name__ == "__main__":
    main()
