"""A PyTorch Lightning DDP job as its users write one: a LightningModule, a
DataLoader (Lightning adds the DistributedSampler), and
Trainer(strategy="ddp", devices=N).fit(...) on CPU with Gloo. Nothing in it
knows faultline.

Run as `python lightning_ddp.py --devices 3 --steps 8`: this process is rank
0 and Lightning starts the script again for ranks 1 and 2. Each validation
epoch logs val_loss with sync_dist=True (an all-reduce).
"""
import argparse
import os
import sys

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


class Regression(L.LightningModule):
    def __init__(self, lr=0.01):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        self.lr = lr

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def loader(n, seed, batch):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    return DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=batch)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=8)
    args = p.parse_args()

    L.seed_everything(0, verbose=False)
    model = Regression()
    trainer = L.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp",
        max_steps=args.steps,
        limit_val_batches=2,
        val_check_interval=None,
        check_val_every_n_epoch=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader(512, 1, args.batch), loader(64, 2, args.batch))
    if trainer.is_global_zero:
        print("done: %d steps" % trainer.global_step, flush=True)
    gloo_exit.settle(model)


if __name__ == "__main__":
    main()
