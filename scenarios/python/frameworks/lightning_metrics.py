"""A Lightning DDP classifier whose validation accuracy decides checkpointing
(ModelCheckpoint(monitor="val_acc")), logged one of the ways users log it
(--log), with a per-step training loss:

  local              self.log("val_acc", acc, on_epoch=True): each rank's
                     accuracy on its own third of the validation set, the
                     seed's unsynchronised metric (Lightning itself warns)
  sync_dist          the same with sync_dist=True: Lightning all-reduces it
  torchmetrics       a torchmetrics MulticlassAccuracy, updated per batch and
                     self.log-ged as the Metric object (it syncs itself)
  torchmetrics_local the same Metric built with sync_on_compute=False
  rank_local         each rank logs its own accuracy under its own name
                     (f"val_acc_rank{r}", rank_zero_only=True), on purpose;
                     the checkpoint monitors the synced val_loss

The training loss is logged per step with sync_dist=True, except under
--log local, which logs it as most examples do (rank 0's own, a warning).
Run as `python lightning_metrics.py --devices 3 --log local`: Lightning's
own launcher (this script is rank 0). CPU, Gloo.
"""
import argparse
import os
import sys
import tempfile

import lightning as L
import torch
import torch.nn as nn
import torchmetrics
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gloo_exit  # noqa: E402  torch 2.x's abort at exit; before any backward(), whose state it tracks


class Classifier(L.LightningModule):
    def __init__(self, how):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
        self.how = how
        if how.startswith("torchmetrics"):
            self.val_acc = torchmetrics.classification.MulticlassAccuracy(
                num_classes=2, sync_on_compute=(how == "torchmetrics"))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, sync_dist=self.how != "local")
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        self.log("val_loss", nn.functional.cross_entropy(logits, y), sync_dist=True)
        if self.how.startswith("torchmetrics"):
            self.val_acc.update(logits, y)
            self.log("val_acc", self.val_acc, on_epoch=True)
            return
        acc = (logits.argmax(dim=1) == y).float().mean()
        if self.how == "rank_local":
            self.log("val_acc_rank%d" % self.global_rank, acc, on_epoch=True, rank_zero_only=True)
        else:
            self.log("val_acc", acc, on_epoch=True, sync_dist=self.how == "sync_dist")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def loader(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    # A noisy label: the ranks' shards score differently, as real ones do.
    y = ((x[:, 0] + 0.8 * torch.randn(n, generator=g)) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=8)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=3)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--log", default="local",
                   choices=["local", "sync_dist", "torchmetrics", "torchmetrics_local", "rank_local"])
    args = p.parse_args()

    L.seed_everything(0, verbose=False)
    model = Classifier(args.log)
    monitor = "val_loss" if args.log == "rank_local" else "val_acc"
    with tempfile.TemporaryDirectory() as ckpt_dir:
        trainer = L.Trainer(
            accelerator="cpu",
            devices=args.devices,
            strategy="ddp",
            max_epochs=args.epochs,
            limit_train_batches=4,
            logger=False,
            callbacks=[ModelCheckpoint(dirpath=ckpt_dir, monitor=monitor, mode="max" if monitor == "val_acc" else "min")],
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        trainer.fit(model, loader(256, 1), loader(96, 2))
    if trainer.is_global_zero:
        print("done: %s=%s" % (monitor, trainer.callback_metrics.get(monitor)), flush=True)
    gloo_exit.settle(model)


if __name__ == "__main__":
    main()
