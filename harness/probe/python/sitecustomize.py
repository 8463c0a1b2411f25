"""faultline's Python shim, entered at interpreter start-up.

The harness puts this directory first on PYTHONPATH, so Python's `site`
imports this file as `sitecustomize`. It first runs the sitecustomize that
would have been imported without us (the next one on sys.path, e.g. Debian's
/usr/lib/python3.11/sitecustomize.py) and makes it *the* `sitecustomize`
module, then arms the shim (faultline_shim). The shim itself never raises: an
error of the chained sitecustomize is re-raised last, so `site` reports it
exactly as it would have without us.
"""
import os as _os
import sys as _sys


def _chain_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    here = _os.path.realpath(_os.path.dirname(_os.path.abspath(__file__)))
    rest = [p for p in _sys.path if _os.path.realpath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    # What the import system does before running a module: from here on
    # `import sitecustomize` anywhere is the chained module, not this file.
    _sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_chained_error = None
try:
    _chain_next_sitecustomize()
except Exception as _e:  # noqa: BLE001  reported by `site`, below, as without the shim
    _chained_error = _e

try:
    import faultline_shim as _faultline_shim

    _faultline_shim.boot()
except Exception:  # noqa: BLE001  the shim must never change the program's behaviour
    pass

if _chained_error is not None:
    raise _chained_error
