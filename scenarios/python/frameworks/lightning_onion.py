"""onion.py's failures (errors inside errors, earlier failures that cause
later ones) in a Lightning user's LightningModule: rank --fault-rank R
(default 1) fails at training batch --fault-step S (default 3) in the way
--shape names, through onion.py's own pieces (its records, prefetch thread,
config reader, schedule parser and strike()), so each error's innermost
frame is the one the plain trainer's row names.

Run as `python lightning_onion.py --devices 2 --shape dataloader`:
Lightning's own launcher (this script is rank 0). CPU, Gloo.
"""
import argparse
import logging
import os
import sys

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..")))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "diagnosis")))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks
import ddp_common as ddp  # noqa: E402
import onion  # noqa: E402
from lightning_bugs import short_timeout_trainer  # noqa: E402  beside this script


class Model(L.LightningModule):
    def __init__(self, args):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.args = args
        self.prefetch = None

    def faulty(self):
        return self.global_rank == self.args.fault_rank

    def on_train_start(self):
        if self.args.shape in ("thread_queue", "thread_result"):
            fail_at = self.args.fault_step if self.faulty() else -1
            self.prefetch = onion.Prefetcher(fail_at, self.args.shape.split("_")[1])
            self.prefetch.start()

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.prefetch is not None:
            self.prefetch.value(batch_idx)
        if batch_idx == 1 and self.faulty() and self.args.shape == "logged_then_fail":
            try:
                onion.read_config({"lr": 0.01}, "warmup")
            except RuntimeError:
                logging.exception("no warmup configured, going on without it")
        if batch_idx == self.args.fault_step and self.faulty():
            onion.strike(self.args.shape, x)
        return nn.functional.mse_loss(self.net(x), y)

    def on_train_end(self):
        if self.prefetch is not None:
            self.prefetch.todo.put(None)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--shape", required=True)
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    args = p.parse_args()

    L.seed_everything(0, verbose=False)
    # Each rank's own shard, as Lightning's DistributedSampler will cut it
    # (a training loader's is shuffled, with the seed above): the record rank
    # R reads first in batch S is the poisoned one.
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    base = ddp.make_dataset()
    how = {"dataloader": "raise", "worker_kill": "kill", "worker_segv": "segv"}.get(args.shape)
    poison = None
    if how and rank == args.fault_rank:
        shard = list(DistributedSampler(base, num_replicas=args.devices, rank=rank, shuffle=True, seed=0))
        poison = shard[args.fault_step * onion.BATCH]
    data = DataLoader(onion.Records(base, poison, how), batch_size=onion.BATCH, num_workers=2 if how else 0)
    trainer = short_timeout_trainer(args.devices, args.steps)
    model = Model(args)
    trainer.fit(model, data)
    gloo_exit.settle(model)


if __name__ == "__main__":
    main()
