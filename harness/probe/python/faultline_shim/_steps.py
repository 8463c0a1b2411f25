"""Training steps, inferred: a step begins at the first DDP forward (with
autograd on, in training mode) after the previous step ended, and ends when
an optimizer's step() returns. Gradient accumulation is one step; a second
optimizer stepping in the same iteration does not end another. A trainer
without DDP gets no step events (nothing marks its steps).

The harness uses them for the timeline, for "every rank finished step N"
(a shutdown hang) and for per-step busy time (a straggler).
"""
import functools

from . import _data, _instrument, _state

_open = False
_step = 1  # steps count from 1, as the reference trainer's do
# Called after every optimizer step() returns, in a DDP step or not (the
# replicas' fingerprints, _ddp).
after_optimizer_step = []


def current_step():
    """The step under way, or the next one."""
    return _step


def on_ddp_forward(ddp):
    """True when this forward begins a step."""
    global _open
    # The wrapped module's mode: Lightning puts its LightningModule in
    # training mode, never the DDP wrapper around it (whose own flag stays
    # as its last eval() left it); ddp.train() sets both.
    if _open or not getattr(ddp, "module", ddp).training:
        return False
    import torch

    if not torch.is_grad_enabled():
        return False
    rec = _state.recorder
    if rec is None:
        return False
    _open = True
    rec.emit("step_begin", step=_step, epoch=_data.current_epoch())
    return True


def on_optimizer_step():
    global _open, _step
    if not _open:
        return
    _open = False
    rec = _state.recorder
    if rec is not None:
        rec.emit("step_end", step=_step, epoch=_data.current_epoch())
    _step += 1


def _wrap_step(step):
    @functools.wraps(step)  # keeps `hooked` and the rest of step's attributes
    def wrapper(*args, **kwargs):
        out = step(*args, **kwargs)
        if _state.recorder is not None:
            try:
                on_optimizer_step()
            except Exception as e:  # noqa: BLE001
                _instrument.broke("optim.step", e)
            for fn in after_optimizer_step:
                try:
                    fn()
                except Exception as e:  # noqa: BLE001
                    _instrument.broke("ddp.fingerprint", e)
        return out

    wrapper.__faultline_wrapped__ = step
    return wrapper


# The Optimizer method that wraps each class's step() for the profiler, run
# from __init__ and __setstate__: torch 1.13's _hook_for_profile, 2.x's
# _patch_step_function (which marks the class's step `hooked`; our wrapper
# keeps the mark, as functools.wraps copies __dict__).
_PROFILE_HOOKS = ("_patch_step_function", "_hook_for_profile")


def _wrap_profile_hook(Optimizer):
    name = next((n for n in _PROFILE_HOOKS if n in Optimizer.__dict__), None)
    if name is None:
        raise AttributeError("torch.optim.Optimizer has none of %s" % ", ".join(_PROFILE_HOOKS))
    orig = Optimizer.__dict__[name]
    if hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)
    def hook(self, *args, **kwargs):
        result = orig(self, *args, **kwargs)
        try:
            # The class that defines the step() this instance calls.
            owner = next((k for k in type(self).__mro__ if "step" in k.__dict__), None)
            step = owner.__dict__["step"] if owner is not None else None
            if callable(step) and not hasattr(step, "__faultline_wrapped__"):
                owner.step = _wrap_step(step)
        except Exception as e:  # noqa: BLE001
            _instrument.broke("optim.step", e)
        return result

    hook.__faultline_wrapped__ = orig
    setattr(Optimizer, name, hook)


def patch(module):
    """torch.optim.optimizer: every optimizer class gets its step() wrapped
    when its first instance is made, where torch wraps it for the profiler."""
    _instrument.attempt("optim.step", _wrap_profile_hook, module.Optimizer)
