"""Encoded records, decoded in a DataLoader's workers as many real datasets
are (images, tokenized text). From the `bad_from`-th record a worker reads,
they are corrupt: the decode raises UnicodeDecodeError inside the worker,
and the DataLoader re-raises it in the rank as "Caught UnicodeDecodeError in
DataLoader worker process 0", the worker's traceback as text."""
import torch
from torch.utils.data import Dataset


class Records(Dataset):
    def __init__(self, n, bad_from=None, width=16):
        g = torch.Generator().manual_seed(7)
        self.x = torch.randn(n, width, generator=g)
        self.bad_from = bad_from
        self.read = 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.read += 1
        raw = b"\xff\xfe" if self.bad_from is not None and self.read > self.bad_from else b"ok"
        raw.decode("utf-8")  # a corrupt record fails here
        return self.x[i], self.x[i].sum(dim=0, keepdim=True)
