"""DeepSpeed's engine (deepspeed.runtime.engine.DeepSpeedEngine): what DDP
does, done in Python, so the shim sees it where DDP's is out of sight.

- Its constructor broadcasts rank 0's parameters (_broadcast_model), as
  DDP's does: the seed_mismatch fault strikes and the fingerprints are taken
  around it (_ddp.around_broadcast), and the replicas are hashed at the
  optimizer steps as DDP's are.
- Its forward is the step's start, as a DDP forward is (_ddp.step_forward).
- Its gradient all-reduce (engine.backward() at an accumulation boundary,
  then allreduce_gradients) calls torch.distributed's all_reduce through
  deepspeed.comm, which the dist patches already see: one collective per
  gradient bucket, numbered with the rest.
- Its optimizer is a torch optimizer (a client one, or one DeepSpeed built
  from its config); optim.step ends the step. ZeRO's optimizers wrap one,
  whose step() ends it the same way.
"""
from . import _ddp, _instrument


def _patch_forward(Engine):
    if not hasattr(Engine.forward, "__faultline_wrapped__"):
        Engine.forward = _ddp.step_forward(Engine.forward, "deepspeed.forward")


def _patch_broadcast(Engine):
    orig = Engine._broadcast_model
    if not hasattr(orig, "__faultline_wrapped__"):
        Engine._broadcast_model = _ddp.around_broadcast(orig, "deepspeed.fingerprint",
                                                        lambda self, args, kwargs: self.module)


def patch(module):
    """deepspeed.runtime.engine, right after it ran."""
    Engine = module.DeepSpeedEngine
    _instrument.attempt("deepspeed.forward", _patch_forward, Engine)
    _instrument.attempt("deepspeed.fingerprint", _patch_broadcast, Engine)
