"""The sample indices each rank trains on, per epoch, as `samples` events.

One data stream per process is followed: the first DistributedSampler or
DataLoader the process iterates (the training data, in nearly every
trainer; a validation loader iterated later would otherwise pose as a
second epoch 0).

- A DistributedSampler computes its whole epoch up front (a permutation
  seeded by seed + epoch, no global RNG), so its indices are reported when
  the epoch starts.
- A DataLoader over any other sampler (the usual unsharded-data bug:
  shuffle=True and no DistributedSampler) is followed lazily: the indices it
  actually draws are passed through unchanged and reported when the epoch
  ends, when the next one begins, or when the process exits. Reading them
  ahead would move the sampler's draw from the global RNG and change the
  trainer's data order.

hash: the sum (mod 2**64) of splitmix64 of each index, as the reference
trainer's probe computes it (order-independent, separates different sets);
indices are included when there are at most 4096.
"""
import atexit
import functools
import sys

from . import _errors, _faults, _instrument, _metrics, _state

_M64 = (1 << 64) - 1
_source = None      # the followed sampler or DataLoader
_epoch = 0          # the followed stream's current epoch
_pending = None     # the DataLoader pass being recorded


def current_epoch():
    return _epoch


def _hash_python(indices):
    total = 0
    for i in indices:
        z = (i + 0x9E3779B97F4A7C15) & _M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        total += z ^ (z >> 31)
    return total & _M64


def _hash_numpy(indices):
    """The same, vectorised: numpy's uint64 arithmetic wraps mod 2**64 by definition."""
    import numpy as np

    with np.errstate(over="ignore"):
        z = np.asarray(indices, dtype=np.int64).astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return int((z ^ (z >> np.uint64(31))).sum(dtype=np.uint64))


def hash_indices(indices):
    """Python's loop costs ~1-3 us an index: large epochs go through numpy when it is there."""
    if len(indices) > 4096:
        try:
            return _hash_numpy(indices)
        except Exception as e:  # noqa: BLE001  no numpy, or indices it cannot take
            _instrument.pass_through(e)
    return _hash_python(indices)


class _Samples:
    """One epoch's indices, folded as they come: count, first, last, the
    hash, and the indices themselves only while there are at most 4096.
    Memory stays bounded however long the epoch (chunks of 65536 are
    hashed and dropped)."""

    _CHUNK = 65536

    def __init__(self):
        self.count = 0
        self.first = None
        self.last = None
        self.hash = 0
        self.head = []      # the first 4096
        self._chunk = []    # not hashed yet
        self.valid = True   # false once something is not an integer index

    def add(self, items):
        if not self.valid:
            return
        try:
            ints = [int(i) for i in items]
        except (TypeError, ValueError):
            self.valid = False  # an iterable-style dataset's keys, not indices
            return
        if not ints:
            return
        if self.first is None:
            self.first = ints[0]
        self.last = ints[-1]
        self.count += len(ints)
        if len(self.head) <= 4096:
            self.head.extend(ints[:4097 - len(self.head)])
        self._chunk.extend(ints)
        if len(self._chunk) >= self._CHUNK:
            self._fold()

    def _fold(self):
        self.hash = (self.hash + hash_indices(self._chunk)) & _M64
        self._chunk = []

    def report(self, epoch, sampler):
        rec = _state.recorder
        if rec is None or not self.valid or self.count == 0:
            return
        self._fold()
        fields = {"epoch": epoch, "count": self.count, "hash": "%016x" % self.hash, "first": self.first,
                  "last": self.last, "sampler": sampler}
        if self.count <= 4096:
            fields["indices"] = self.head
        rec.emit("samples", **fields)


def _follows(obj):
    global _source
    if _source is None:
        _source = obj
    return _source is obj


class _Recording:
    """The DataLoader's index iterator, passed through and remembered."""

    def __init__(self, it, epoch, sampler):
        self._it = it
        self._epoch = epoch
        self._sampler = sampler
        self._samples = _Samples()
        self._flushed = False

    def __iter__(self):
        return self

    def __next__(self):
        try:
            item = next(self._it)
        except StopIteration:
            self.flush()
            raise
        try:
            self._samples.add(item if isinstance(item, (list, tuple)) else (item,))
        except Exception as e:  # noqa: BLE001
            _instrument.pass_through(e)
        return item

    def flush(self):
        global _epoch
        if self._flushed:
            return
        self._flushed = True
        if self._samples.count:
            self._samples.report(self._epoch, self._sampler)
            _epoch = self._epoch + 1


def flush_pending():
    """Says what the followed loader's pass drew so far (`samples`); at exit,
    at the next pass, or when the rank's work is done (Ray Train's worker)."""
    if _pending is not None:
        try:
            _pending.flush()
        except Exception as e:  # noqa: BLE001
            _instrument.pass_through(e)


def _sharding_batch_sampler(batch_sampler):
    """A batch sampler that hands this rank its share of another one's
    batches (accelerate's BatchSamplerShard: batch_sampler, num_processes,
    process_index); None for any other."""
    inner = getattr(batch_sampler, "batch_sampler", None)
    if inner is None or not hasattr(batch_sampler, "num_processes") or not hasattr(batch_sampler, "process_index"):
        return None
    return inner


def _follow_loader_pass(it, loader):
    """After _BaseDataLoaderIter set _sampler_iter: record it if this loader is followed."""
    global _pending
    sampler = getattr(loader, "sampler", None)
    batch_sampler = getattr(loader, "batch_sampler", None)
    unsharded = _sharding_batch_sampler(batch_sampler)
    if unsharded is not None and _faults.armed and _faults.drops_sampler():
        # unsharded_data where a framework shards by batches (accelerate):
        # every batch of the sampler it wraps, on every rank.
        it._sampler_iter = iter(unsharded)
    inner = getattr(batch_sampler, "sampler", None)
    distributed = _distributed_sampler is not None and (isinstance(sampler, _distributed_sampler) or
                                                        isinstance(inner, _distributed_sampler))
    # What a metric computed after this pass saw: this rank's share, or all of it.
    _metrics.last_pass_sharded = distributed or unsharded is not None
    if distributed:
        return  # the sampler reports itself
    if getattr(loader, "_dataset_kind", 0) != 0:
        return  # an iterable-style dataset: no sampler, no indices
    if not _follows(loader):
        return
    current = it.__dict__.get("_sampler_iter")
    if current is None or isinstance(current, _Recording):
        return
    flush_pending()
    epoch = _epoch
    _pending = _Recording(current, epoch, type(sampler).__name__ if sampler is not None else "")
    it._sampler_iter = _pending


_distributed_sampler = None


def _unsharded(sampler):
    """unsharded_data: the sampler's whole dataset on this rank, in the order
    its seed and epoch give every rank (the sampler as good as absent)."""
    import torch

    n = len(sampler.dataset)
    if getattr(sampler, "shuffle", False):
        g = torch.Generator()
        g.manual_seed(sampler.seed + sampler.epoch)
        return iter(torch.randperm(n, generator=g).tolist())
    return iter(range(n))


def _patch_sampler(module):
    global _distributed_sampler
    cls = module.DistributedSampler
    _distributed_sampler = cls
    orig = cls.__iter__
    if hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)
    def __iter__(self):
        it = orig(self)
        if _faults.armed and _faults.drops_sampler():
            it = _unsharded(self)
        if _state.recorder is None or not _follows(self):
            return it
        global _epoch
        try:
            indices = list(it)
        except Exception as e:  # noqa: BLE001  the sampler's own error: raised again, as it would have been
            _instrument.pass_through(e)
            return orig(self)
        try:
            _epoch = int(self.epoch)
            samples = _Samples()
            samples.add(indices)
            samples.report(_epoch, type(self).__name__)
        except Exception as e:  # noqa: BLE001
            _instrument.broke("data.distributed_sampler", e)
        return iter(indices)

    __iter__.__faultline_wrapped__ = orig
    cls.__iter__ = __iter__


def patch_distributed_sampler(module):
    """torch.utils.data.distributed."""
    _instrument.attempt("data.distributed_sampler", _patch_sampler, module)


def _patch_loader_iter(module):
    base = module._BaseDataLoaderIter
    if getattr(base, "__faultline_patched__", False):
        return
    orig_init = base.__init__
    orig_reset = base._reset

    @functools.wraps(orig_init)
    def __init__(self, loader, *args, **kwargs):
        orig_init(self, loader, *args, **kwargs)
        if _state.recorder is not None:
            try:
                _follow_loader_pass(self, loader)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("data.dataloader", e)

    @functools.wraps(orig_reset)
    def _reset(self, loader, *args, **kwargs):
        orig_reset(self, loader, *args, **kwargs)
        if _state.recorder is not None:
            try:
                _follow_loader_pass(self, loader)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("data.dataloader", e)

    orig_next = base.__next__

    @functools.wraps(orig_next)
    def __next__(self):
        # The rank waits for its next batch: while data_begin is open, its
        # DataLoader (its workers, or __getitem__ itself) decides when it
        # goes on, so a rank idle here beside peers in a collective is
        # waiting for data, not hung.
        rec = _state.recorder
        if rec is None:
            return orig_next(self)
        rec.emit("data_begin")
        try:
            return orig_next(self)
        finally:
            rec.emit("data_end")

    base.__init__ = __init__
    base._reset = _reset
    base.__next__ = __next__
    base.__faultline_patched__ = True
    atexit.register(flush_pending)


def _patch_worker_death(signal_handling):
    """torch's SIGCHLD handler (signal_handling._set_SIGCHLD_handler's
    `handler`, 1.13 and 2.x alike) raises a worker's death, through
    _error_if_any_worker_fails, in the main thread wherever it is: written
    as `signal_raised` with the frame it interrupted before it goes on, for
    the trainer's code may catch it there and go on without the worker."""
    orig = signal_handling._error_if_any_worker_fails
    if getattr(orig, "__faultline_wrapped__", None) is not None:
        return

    def _error_if_any_worker_fails():
        try:
            orig()
        except Exception as e:
            # this frame, the handler's, then the frame the signal interrupted
            _errors.record_raised("signal_raised", e, _errors.frame_site(sys._getframe(2)))
            raise

    _error_if_any_worker_fails.__faultline_wrapped__ = orig
    signal_handling._error_if_any_worker_fails = _error_if_any_worker_fails


def patch_dataloader(module):
    """torch.utils.data.dataloader: every place that (re)starts a pass over the
    sampler (_BaseDataLoaderIter.__init__ and _reset, 1.13 and 2.x alike),
    each batch's wait (__next__: data_begin / data_end), and the worker
    deaths its SIGCHLD handler raises (signal_raised)."""
    def patch(m):
        _patch_loader_iter(m)
        _patch_worker_death(m._utils.signal_handling)

    _instrument.attempt("data.dataloader", patch, module)
