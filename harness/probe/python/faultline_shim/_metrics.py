"""Where a rank's metrics go, and whether they met a collective on the way:
`metric_log` events (issue 33; docs/BLACKBOX.md, "Metric sinks").

The fourth silent DDP pitfall is a metric computed on one rank's share of
the data and logged as if it were the job's. The shim hooks the places
people send metrics, on every rank (a sink that writes on the main process
only is hooked before that check, so every rank's value is seen):

- Lightning: the value each `self.log`ged name hands the loggers and
  callbacks (_ResultCollection._get_cache: a step's value, or the epoch's
  reduction), with its sync_dist; `self.log` itself for the call site, the
  trainer's step and epoch, and whether a ModelCheckpoint or EarlyStopping
  monitors the name;
- torchmetrics: Metric.compute's result, with its sync_on_compute (a
  Metric that Lightning logs is recorded once, under the logged name);
- accelerate: Accelerator.log's values, and the numbers Accelerator.print
  prints that a tensor gave (.item() to the digits printed), named by the
  word before them; gather_for_metrics, gather and reduce mark what they
  return as having met a collective;
- torch.utils.tensorboard: SummaryWriter.add_scalar / add_scalars;
- wandb: Run.log.

Provenance, cheaply: a collective marks the tensor it wrote (_dist calls
after_collective); .item() and float() remember the last scalars they took
out of tensors, with their tensor's mark, so that a float handed to a
logger can be matched back; and the reducing collectives a rank calls from
Python are counted, so a value can be said to have met none since its
name's previous value.

One event per value (CONTRACT.md section 3):
    {"ev":"metric_log","sink":"lightning","name":"val_acc","n":2,"step":1,"value":0.81,
     "sync":false,"collective":false,"stage":"validation","epoch_level":true,"monitored":true,
     "site":"train.py:40"}
type: the torchmetrics class of a Metric object Lightning logged.
n: this is the n-th value of that name from that sink on this rank, so the
same n is the same value on every rank. sync: the sink's own setting where
it has one (Lightning's sync_dist, torchmetrics' sync_on_compute).
collective: true when the value came out of a collective; false when it came
from a tensor no collective wrote and no reducing collective ran on this
rank since the name's previous value; absent when unknown. shard: whether
the last DataLoader pass this rank started read its own share of the data
(absent before any): a value rank 0 computed over the whole validation set
is the job's without a collective.
"""
import collections
import functools
import json
import math
import re
import threading
import weakref

from . import _instrument, _site, _state

# The ops after which a rank's tensors may hold the job's value.
REDUCING_OPS = frozenset(("allreduce", "allreduce_coalesced", "reduce", "allgather", "gather", "reduce_scatter",
                          "broadcast"))
_RECENT = 64

_recent = collections.deque(maxlen=_RECENT)  # (scalar, came from a marked tensor) of the last .item()/float()
_reducing = 0        # reducing collectives called from Python on this rank so far
_last_reducing = {}  # (sink, name) -> _reducing at its previous value
_counts = {}         # (sink, name) -> values so far
_local = threading.local()  # .in_lightning: inside Lightning's logging (its Metric computes are its)
_lightning = {"trainer": None, "sites": {}}  # the trainer (a weakref) and self.log's call site by name
_metric_names = {}   # torchmetrics class name -> instances named so far
_MARK = "_faultline_synced"
# Set by _data at the start of each DataLoader pass: whether it reads this
# rank's share (a DistributedSampler, accelerate's batch shards) or all of
# the data; None before any pass. A rank-0 value after a pass over the whole
# validation set is the job's, collective or not.
last_pass_sharded = None


def _mark(obj):
    if isinstance(obj, (list, tuple)):
        for x in obj:
            _mark(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            _mark(x)
    elif hasattr(obj, "numel"):
        try:
            setattr(obj, _MARK, True)
        except (AttributeError, TypeError):
            pass


def _marked(t):
    return getattr(t, _MARK, False) is True


def after_collective(op, output):
    """_dist's wrapper, after a collective returned: `output` is its first
    argument (the tensor it wrote, or the list of them)."""
    global _reducing
    if op in REDUCING_OPS:
        _reducing += 1
        _mark(output)


def _wrap_once(cls, name, wrapper_for):
    """cls.name = wrapper_for(cls.name), unless it already is a wrapper (a
    module imported again, a subclass that inherits the patched method)."""
    fn = getattr(cls, name)
    if not hasattr(fn, "__faultline_wrapped__"):
        setattr(cls, name, wrapper_for(fn))


# --- provenance of scalars ---------------------------------------------------

def _wrap_scalar(orig):
    @functools.wraps(orig)
    def scalar(self):
        v = orig(self)
        _recent.append((v, _marked(self)))
        return v

    scalar.__faultline_wrapped__ = orig
    return scalar


def _orig(fn):
    return getattr(fn, "__faultline_wrapped__", fn)


def patch_tensor(torch):
    """torch, once imported: Tensor.item and Tensor.__float__ remember what they return."""
    for name in ("item", "__float__"):
        _wrap_once(torch.Tensor, name, _wrap_scalar)


def _scalar(value):
    """(float, from a marked tensor: True/False/None) of a logged value;
    (None, None) for what is not one number."""
    if hasattr(value, "numel") and hasattr(value, "detach"):
        try:
            if value.numel() != 1:
                return None, None
            return float(_orig(type(value).item)(value)), _marked(value)
        except Exception as e:  # noqa: BLE001
            _instrument.pass_through(e)
            return None, None
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        return None, None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None, None
    for seen, marked in reversed(_recent):
        if seen == v:
            return v, marked
    return v, None


# --- the event ---------------------------------------------------------------

_fixed = {}  # the fields a name's values share (sink, name, sync, site, ...) -> their JSON
_FIXED_MAX = 4096


def _fixed_json(sink, name, sync, site, extra):
    """',"sink":...,"name":...' for the fields that stay the same from one
    value of a name to the next, encoded once: the per-value path formats
    only n, value, step and provenance."""
    key = (sink, name, sync, site, tuple(sorted(extra.items())))
    out = _fixed.get(key)
    if out is None:
        fields = {"sink": sink, "name": str(name)[:200]}
        if sync is not None:
            fields["sync"] = bool(sync)
        if site:
            fields["site"] = site
        fields.update((k, x) for k, x in extra.items() if x is not None)
        out = "," + json.dumps(fields, separators=(",", ":"), ensure_ascii=True, default=str)[1:-1]
        if len(_fixed) < _FIXED_MAX:
            _fixed[key] = out
    return out


def _record(sink, name, value, step=None, sync=None, site=None, **extra):
    rec = _state.recorder
    if rec is None:
        return
    v, marked = _scalar(value)
    if v is None or not math.isfinite(v):  # not a number; NaN and inf never agree across ranks
        return
    key = (sink, name)
    n = _counts[key] = _counts.get(key, 0) + 1
    met = _reducing != _last_reducing.get(key, 0)
    _last_reducing[key] = _reducing
    body = _fixed_json(sink, name, sync, site, extra) + ',"n":%d,"value":%r' % (n, v)
    if step is not None:
        try:
            body += ',"step":%d' % int(step)
        except (TypeError, ValueError):
            pass
    if marked:
        body += ',"collective":true'
    elif marked is False and not met:
        body += ',"collective":false'
    if last_pass_sharded is not None:
        body += ',"shard":true' if last_pass_sharded else ',"shard":false'
    rec.emit_json("metric_log", body)


def _caller_site():
    return _site.site(3)


# --- Lightning ---------------------------------------------------------------

def _lightning_trainer():
    ref = _lightning["trainer"]
    return ref() if ref is not None else None


def _monitored(trainer, name):
    try:
        callbacks = list(getattr(trainer, "checkpoint_callbacks", []) or [])
        callbacks += list(getattr(trainer, "early_stopping_callbacks", []) or [])
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)
        return None
    return any(getattr(cb, "monitor", None) == name for cb in callbacks)


def _wrap_module_log(orig):
    @functools.wraps(orig)
    def log(self, name, *args, **kwargs):
        if _state.recorder is not None:
            try:
                trainer = getattr(self, "_trainer", None)
                if trainer is not None and _lightning_trainer() is not trainer:
                    _lightning["trainer"] = weakref.ref(trainer)
                if name not in _lightning["sites"]:
                    _lightning["sites"][name] = _site.site(2)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("metrics.lightning", e)
        return orig(self, name, *args, **kwargs)

    log.__faultline_wrapped__ = orig
    return log


def _stage(fx):
    fx = fx or ""
    for stage in ("validation", "test", "predict", "train"):
        if stage in fx:
            return "training" if stage == "train" else stage
    return None


def _lightning_value(result_metric, on_step, cache):
    meta = result_metric.meta
    name = meta.name
    trainer = _lightning_trainer()
    if trainer is not None and getattr(trainer, "sanity_checking", False):
        return  # the sanity check's values reach no logger and no callback
    metric_type = None
    if result_metric.is_tensor:
        sync = bool(meta.sync.should)
    else:  # a torchmetrics Metric: it syncs itself
        sync = bool(getattr(result_metric.value, "sync_on_compute", True))
        metric_type = type(result_metric.value).__name__
    step = None
    if trainer is not None:
        step = getattr(trainer, "global_step", None) if on_step else getattr(trainer, "current_epoch", None)
    logged = meta.forked_name(on_step)
    monitored = None
    if trainer is not None:
        monitored = _monitored(trainer, name) or _monitored(trainer, logged)
    _record("lightning", logged, cache, step=step, sync=sync, site=_lightning["sites"].get(name),
            stage=_stage(meta.fx), epoch_level=not on_step, monitored=monitored, type=metric_type)


def _wrap_get_cache(orig):
    @functools.wraps(orig)
    def _get_cache(result_metric, on_step):
        _local.in_lightning = True
        try:
            cache = orig(result_metric, on_step)
        finally:
            _local.in_lightning = False
        if _state.recorder is not None and cache is not None:
            try:
                # Called for the loggers, the callbacks and the progress bar
                # alike, each time with a fresh detach(): each value once, by
                # the tensor it was detached from.
                held = result_metric._forward_cache if on_step else result_metric._computed
                seen = result_metric.__dict__.get("_faultline_seen")
                if held is not None and (seen is None or seen() is not held):
                    object.__setattr__(result_metric, "_faultline_seen", weakref.ref(held))
                    _lightning_value(result_metric, on_step, cache)
            except Exception as e:  # noqa: BLE001
                _instrument.broke("metrics.lightning", e)
        return cache

    _get_cache.__faultline_wrapped__ = orig
    return staticmethod(_get_cache)


def patch_lightning_result(module):
    """lightning.pytorch.trainer.connectors.logger_connector.result (or pytorch_lightning's)."""
    Collection = module._ResultCollection
    if not hasattr(Collection.__dict__["_get_cache"].__func__, "__faultline_wrapped__"):
        Collection._get_cache = _wrap_get_cache(Collection.__dict__["_get_cache"].__func__)


def patch_lightning_module(module):
    """lightning.pytorch.core.module (or pytorch_lightning's)."""
    _wrap_once(module.LightningModule, "log", _wrap_module_log)


# --- torchmetrics ------------------------------------------------------------

def _metric_name(metric):
    name = metric.__dict__.get("_faultline_name")
    if name is None:
        cls = type(metric).__name__
        k = _metric_names.get(cls, 0)
        _metric_names[cls] = k + 1
        name = cls if k == 0 else "%s#%d" % (cls, k + 1)
        object.__setattr__(metric, "_faultline_name", name)
    return name


def _wrap_wrap_compute(orig):
    @functools.wraps(orig)
    def _wrap_compute(self, compute):
        wrapped = orig(self, compute)

        @functools.wraps(wrapped)
        def compute_and_record(*args, **kwargs):
            out = wrapped(*args, **kwargs)
            if _state.recorder is not None and not getattr(_local, "in_lightning", False):
                try:
                    _record("torchmetrics", _metric_name(self), out,
                            sync=bool(getattr(self, "sync_on_compute", True)), site=_caller_site())
                except Exception as e:  # noqa: BLE001
                    _instrument.broke("metrics.torchmetrics", e)
            return out

        return compute_and_record

    _wrap_compute.__faultline_wrapped__ = orig
    return _wrap_compute


def patch_torchmetrics(module):
    """torchmetrics.metric: every Metric wraps its compute at construction."""
    _wrap_once(module.Metric, "_wrap_compute", _wrap_wrap_compute)


# --- the sinks' methods -------------------------------------------------------

def _arg(args, kwargs, i, name, default=None):
    return args[i] if len(args) > i else kwargs.get(name, default)


def _recording(sink, label, values_of):
    """A wrapper for a sink's method that records, on every rank, each
    (name, value, step) values_of(args, kwargs) finds in a call (args[0] is
    the sink's self), then makes the call."""

    def wrapper_for(orig):
        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if _state.recorder is not None:
                try:
                    site = _caller_site()
                    for name, value, step in values_of(args, kwargs):
                        _record(sink, name, value, step=step, site=site)
                except Exception as e:  # noqa: BLE001
                    _instrument.broke(label, e)
            return orig(*args, **kwargs)

        wrapper.__faultline_wrapped__ = orig
        return wrapper

    return wrapper_for


def _dict_values(args, kwargs):
    """log(values: dict, step=None): Accelerator.log, wandb's Run.log (data)."""
    values = _arg(args, kwargs, 1, "values", kwargs.get("data"))
    step = _arg(args, kwargs, 2, "step")
    return [(name, value, step) for name, value in values.items()] if isinstance(values, dict) else []


def _printed_values(args, kwargs):
    """Accelerator.print(*args): the main process prints; every rank says
    what it would have, so that a number each rank computed for itself shows."""
    text = kwargs.get("sep", " ").join(str(a) for a in args[1:])
    return [(name, value, None) for name, value in _printed_metrics(text)]


def _scalar_values(args, kwargs):
    """SummaryWriter.add_scalar(tag, scalar_value, global_step=None, ...)."""
    return [(_arg(args, kwargs, 1, "tag"), _arg(args, kwargs, 2, "scalar_value"), _arg(args, kwargs, 3, "global_step"))]


def _scalars_values(args, kwargs):
    """SummaryWriter.add_scalars(main_tag, tag_scalar_dict, global_step=None, ...): main_tag/tag each."""
    main, values = _arg(args, kwargs, 1, "main_tag"), _arg(args, kwargs, 2, "tag_scalar_dict")
    step = _arg(args, kwargs, 3, "global_step")
    return [("%s/%s" % (main, tag), value, step) for tag, value in dict(values or {}).items()]


# --- accelerate --------------------------------------------------------------

def _wrap_marking(orig):
    @functools.wraps(orig)
    def wrapper(*args, **kwargs):
        out = orig(*args, **kwargs)
        if _state.recorder is not None:
            _mark(out)
        return out

    wrapper.__faultline_wrapped__ = orig
    return wrapper


_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"([A-Za-z_][\w./-]*)\W*$")


def _from_tensor(token):
    """The recent .item()/float() scalar a printed number shows, to the
    digits printed; None when no tensor gave it (a step count, a time)."""
    decimals = len(token.split(".")[1]) if "." in token and "e" not in token.lower() else None
    try:
        shown = float(token)
    except ValueError:
        return None
    for seen, marked in reversed(_recent):
        if isinstance(seen, float) and (seen == shown or decimals is not None and round(seen, decimals) == shown):
            return seen, marked
    return None


def _printed_metrics(text):
    """(name, value) of each number in a printed line that a tensor gave:
    the word before it names it ("epoch 3: val_acc 0.8125" -> val_acc)."""
    out = []
    for m in _NUMBER.finditer(text):
        found = _from_tensor(m.group())
        word = _WORD.search(text[:m.start()]) if found is not None else None
        if word:
            out.append((word.group(1), found[0]))  # the scalar itself: its provenance is known
    return out


def patch_accelerate(module):
    """accelerate.accelerator: Accelerator.log and print record; its gathers mark."""
    A = module.Accelerator
    _wrap_once(A, "log", _recording("accelerate", "metrics.accelerate", _dict_values))
    _wrap_once(A, "print", _recording("accelerate.print", "metrics.accelerate", _printed_values))
    for name in ("gather_for_metrics", "gather", "reduce"):
        _wrap_once(A, name, _wrap_marking)


# --- tensorboard and wandb ---------------------------------------------------

def patch_tensorboard(module):
    """torch.utils.tensorboard.writer."""
    _wrap_once(module.SummaryWriter, "add_scalar", _recording("tensorboard", "metrics.tensorboard", _scalar_values))
    _wrap_once(module.SummaryWriter, "add_scalars", _recording("tensorboard", "metrics.tensorboard", _scalars_values))


def patch_wandb(module):
    """wandb.sdk.wandb_run: Run.log(data, step=None, ...), what wandb.log is once a run exists."""
    _wrap_once(module.Run, "log", _recording("wandb", "metrics.wandb", _dict_values))


_SINKS = (
    ("torch", patch_tensor, "metrics.provenance"),
    ("lightning.pytorch.trainer.connectors.logger_connector.result", patch_lightning_result, "metrics.lightning"),
    ("lightning.pytorch.core.module", patch_lightning_module, "metrics.lightning.log"),
    ("pytorch_lightning.trainer.connectors.logger_connector.result", patch_lightning_result, "metrics.lightning"),
    ("pytorch_lightning.core.module", patch_lightning_module, "metrics.lightning.log"),
    ("torchmetrics.metric", patch_torchmetrics, "metrics.torchmetrics"),
    ("accelerate.accelerator", patch_accelerate, "metrics.accelerate"),
    ("torch.utils.tensorboard.writer", patch_tensorboard, "metrics.tensorboard"),
    ("wandb.sdk.wandb_run", patch_wandb, "metrics.wandb"),
)


def install(when_imported):
    """Registers every sink's patch with _imports.when_imported. At boot,
    before this process is known to be a rank: the classes are patched as
    they are imported (a Metric built before a late rank is named must
    already carry the wrapper); a wrapper records only in a rank."""
    for module, patch, label in _SINKS:
        when_imported(module, lambda m, patch=patch, label=label: _instrument.attempt(label, patch, m), label)
