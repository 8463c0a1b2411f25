"""Two ranks evaluate their own shard after training and each decides from
its own data which collective to make: a shard whose mean is high all-reduces
an alarm flag, the others broadcast rank 0's threshold. The shards differ
(odd samples are large), so the ranks disagree, and nothing in the code
names a rank: the evidence cannot say which side is wrong."""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def dataset():
    x = torch.arange(64, dtype=torch.float32).unsqueeze(1).repeat(1, 4)
    x[1::2] += 1000.0  # odd samples are outliers
    return TensorDataset(x, x.sum(1, keepdim=True))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    world = dist.get_world_size()
    torch.manual_seed(0)
    model = DDP(nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    data = dataset()
    sampler = DistributedSampler(data, num_replicas=world, rank=dist.get_rank(), shuffle=False)
    for xb, yb in DataLoader(data, batch_size=8, sampler=sampler):
        opt.zero_grad()
        nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
    shard_mean = torch.stack([xb.mean() for xb, _ in DataLoader(data, batch_size=8, sampler=sampler)]).mean()
    if shard_mean > 500:
        alarm = torch.ones(1)
        dist.all_reduce(alarm)
    else:
        threshold = torch.tensor([500.0, 0.0])
        dist.broadcast(threshold, src=0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
