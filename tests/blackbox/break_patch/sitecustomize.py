"""A user's sitecustomize (chained by the shim's) that makes one of the shim's
patches fail, the way a torch release that changes a function would: right
after torch.distributed.distributed_c10d has run, all_reduce becomes a
callable whose signature inspect cannot read. The trainer still works (the
object calls the real all_reduce); the shim cannot wrap it and must say so."""
import importlib.machinery
import sys


class _Opaque:
    __signature__ = "not a signature"  # inspect.signature raises TypeError

    def __init__(self, fn):
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)


class _Finder:
    def find_spec(self, name, path=None, target=None):
        if name != "torch.distributed.distributed_c10d":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.all_reduce = _Opaque(module.all_reduce)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _Finder())
