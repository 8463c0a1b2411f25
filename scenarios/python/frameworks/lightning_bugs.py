"""Bugs in a Lightning user's own code, one per --bug, on one rank
(--bug-rank, default 1) at one training batch (--bug-batch, default 3):

  name_error        training_step uses a name it never defined (the seed's
                    `b = c`)
  shape             a batch cut to the wrong width reaches the first layer:
                    a shape error inside the LightningModule's forward
  worker            a DataLoader worker of that rank fails to decode a record
                    (the first of batch --bug-batch)
  rank0_validation  rank 0 alone runs a batch through the DDP-wrapped model
                    (trainer.model) to check it, as a quick validation: the
                    wrapped forward broadcasts BatchNorm buffers on rank 0
                    only, and no other rank joins

Run as `python lightning_bugs.py --devices 3 --bug name_error`: Lightning's
own launcher (this script is rank 0). CPU, Gloo.
"""
import argparse
import os
import sys
from datetime import timedelta

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks
from records import Records  # noqa: E402  encoded records, corrupt from one on (--bug worker)



class Model(L.LightningModule):
    def __init__(self, bug, bug_rank, bug_batch):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 1))
        self.bug, self.bug_rank, self.bug_batch = bug, bug_rank, bug_batch

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.bug == "name_error" and self.global_rank == self.bug_rank and batch_idx == self.bug_batch:
            b = c  # noqa: F821,F841
        if self.bug == "shape" and self.global_rank == self.bug_rank and batch_idx == self.bug_batch:
            x = x[:, :12]  # the crop meant for the other dataset
        return nn.functional.mse_loss(self.net(x), y)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if self.bug == "rank0_validation" and batch_idx == self.bug_batch and self.trainer.is_global_zero:
            with torch.no_grad():
                self.trainer.model(batch, batch_idx)  # only rank 0 gets here

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def short_timeout_trainer(devices, steps):
    """A CPU DDP Trainer whose collectives fail after waiting 10 s for a
    peer, as the plain scripts' init_process_group(timeout=10 s) do
    (Lightning's own default is 30 min): a rank left alone in one ends in
    seconds."""
    return L.Trainer(
        accelerator="cpu",
        devices=devices,
        strategy=DDPStrategy(timeout=timedelta(seconds=10)),
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--bug", choices=["name_error", "shape", "worker", "rank0_validation"], required=True)
    p.add_argument("--bug-rank", type=int, default=1)
    p.add_argument("--bug-batch", type=int, default=3)
    args = p.parse_args()

    L.seed_everything(0, verbose=False)
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    bad = args.bug_batch * 8 if args.bug == "worker" and rank == args.bug_rank else None
    data = DataLoader(Records(512, bad), batch_size=8, num_workers=1 if args.bug == "worker" else 0)
    trainer = short_timeout_trainer(args.devices, args.steps)
    model = Model(args.bug, args.bug_rank, args.bug_batch)
    trainer.fit(model, data)
    gloo_exit.settle(model)


if __name__ == "__main__":
    main()
