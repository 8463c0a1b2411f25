"""Ray Train's workers: the training function runs in a thread of a Ray
actor, and whatever it raises is caught by Ray Train itself
(ray/train/v2/_internal/execution/worker_group/thread_runner.py: the
thread's target catches BaseException and hands it to
construct_user_exception_with_traceback, which wraps it for the controller).
It never reaches an excepthook, so the shim records it on the way, as it
does for torch.multiprocessing.spawn's children (_spawn.py).

When the training function returns, the rank's work is done: the shim says
so (`work_end`), after what the rank's DataLoader drew (`samples`, said at
exit elsewhere: Ray's ray.kill runs no atexit). Ray Train then ends the
worker actors itself (ray.kill: the process exits 1), and that exit is no
failure (docs/BLACKBOX.md). A SystemExit with a failing status is recorded
too: Ray Train catches it, and the process never exits with its status.

The actor becomes a rank when Ray Train's init_process_group(rank=R) names
it (_late_rank.py), or at the latest when the training function starts:
Ray Train's backend has set RANK in os.environ by then (a training function
that makes its own process group, as faultline's ray_script.py runs a plain
script, may fail before it gets there: an argparse error, an import). The
patch is in place before that, and records only in a process that is a rank.
"""
import functools
import os

from . import _errors, _instrument, _parse_rank, _state


def _patch_thread_runner(module):
    orig = module.construct_user_exception_with_traceback
    if hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)
    def construct_user_exception_with_traceback(e, *args, **kwargs):
        if _state.recorder is not None and isinstance(e, BaseException):
            try:
                # error_file: no torchelastic agent reads one here. A
                # SystemExit too: Ray Train catches it, the process never
                # exits with its status (sys.exit(3) in a training function).
                _errors.record(type(e), e, e.__traceback__, error_file=False, system_exit=True)
            except Exception as err:  # noqa: BLE001
                _instrument.broke("ray.train_fn", err)
        return orig(e, *args, **kwargs)

    construct_user_exception_with_traceback.__faultline_wrapped__ = orig
    module.construct_user_exception_with_traceback = construct_user_exception_with_traceback


def _patch_run(module, activate):
    cls = module.ThreadRunner
    orig = cls.run
    if hasattr(orig, "__faultline_wrapped__"):
        return

    @functools.wraps(orig)
    def run(self, target, *args, **kwargs):
        @functools.wraps(target)  # Ray names the thread after it
        def target_then_work_end():
            if _state.recorder is None:
                # As Ray Train's backend set them.
                rank = _parse_rank(os.environ.get("RANK"))
                if rank is not None:
                    try:
                        activate(rank, _parse_rank(os.environ.get("WORLD_SIZE")))
                    except Exception as err:  # noqa: BLE001
                        _instrument.broke("ray.rank", err)
            result = target()
            if _state.recorder is not None:
                try:
                    # Ray ends the worker with ray.kill, which runs no atexit:
                    # what its loaders drew, said at exit elsewhere, is said now.
                    from . import _data

                    _data.flush_pending()
                    _state.recorder.emit("work_end")
                except Exception as err:  # noqa: BLE001
                    _instrument.broke("ray.work_end", err)
            return result

        return orig(self, target_then_work_end if callable(target) else target, *args, **kwargs)

    run.__faultline_wrapped__ = orig
    cls.run = run


def patch(module, activate):
    """ray.train.v2._internal.execution.worker_group.thread_runner;
    `activate(rank, world_size)` makes this process a rank."""
    _instrument.attempt("ray.train_fn", _patch_thread_runner, module)
    _instrument.attempt("ray.work_end", _patch_run, module, activate)
