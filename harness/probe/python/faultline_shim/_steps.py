"""Training steps, inferred: a step begins at the first DDP forward (with
autograd on, in training mode) after the previous step ended, and ends when
an optimizer's step() returns. Gradient accumulation is one step; a second
optimizer stepping in the same iteration does not end another. A trainer
without DDP gets no step events (nothing marks its steps).

The harness uses them for the timeline, for "every rank finished step N"
(a shutdown hang) and for per-step busy time (a straggler).
"""
import functools

from . import _data, _state

_open = False
_step = 0


def on_ddp_forward(ddp):
    global _open
    if _open or not ddp.training:
        return
    import torch

    if not torch.is_grad_enabled():
        return
    rec = _state.recorder
    if rec is not None:
        _open = True
        rec.emit("step_begin", step=_step, epoch=_data.current_epoch())


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
            except Exception:  # noqa: BLE001
                pass
        return out

    wrapper.__faultline_wrapped__ = step
    return wrapper


def patch(module):
    """torch.optim.optimizer: every optimizer class gets its step() wrapped
    when its first instance is made, where torch wraps it for the profiler."""
    Optimizer = module.Optimizer
    # torch 1.x calls it _hook_for_profile, 2.x _patch_step_function.
    name = "_hook_for_profile" if hasattr(Optimizer, "_hook_for_profile") else "_patch_step_function"
    orig = getattr(Optimizer, name)
    if hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)
    def _hook_for_profile(self):
        orig(self)
        try:
            # The class that defines the step() this instance calls.
            owner = next((k for k in type(self).__mro__ if "step" in k.__dict__), None)
            step = owner.__dict__["step"] if owner is not None else None
            if callable(step) and not hasattr(step, "__faultline_wrapped__"):
                owner.step = _wrap_step(step)
        except Exception:  # noqa: BLE001
            pass

    _hook_for_profile.__faultline_wrapped__ = orig
    setattr(Optimizer, name, _hook_for_profile)
