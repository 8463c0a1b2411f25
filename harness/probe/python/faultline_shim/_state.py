"""What every part of the shim shares: the rank's recorder, once active."""
import os
import re

# Set by activate(); None while the process is not a rank (the shim then
# records nothing, and every wrapper is a plain pass-through).
recorder = None
# How many other processes were this rank before this one in this run: their
# `start` events in the rank's events file, counted when it becomes a rank.
earlier_processes = 0

SHIM_DIR = os.path.dirname(os.path.abspath(__file__))

# Library code (docs/DIAGNOSIS.md section 8, the same policy as the harness's
# harness/diagnose/library_paths.cc): torch and the packages `pip install torch`
# installs with it, the interpreter's standard library, this shim, and the
# prefixes of FAULTLINE_LIBRARY_PATHS. Everything else is the user's, a
# package of the user's own in site-packages too.
_TORCH_PACKAGES = frozenset((
    "torch", "functorch", "torchgen", "caffe2", "triton", "nvidia",
    "filelock", "typing_extensions", "sympy", "mpmath", "networkx", "jinja2", "markupsafe", "fsspec",
    "setuptools", "pkg_resources", "_distutils_hack",
    # the training frameworks faultline runs as stacks
    "lightning", "pytorch_lightning", "lightning_fabric", "lightning_utilities", "torchmetrics",
    "accelerate", "deepspeed", "huggingface_hub", "safetensors", "ray",
))
_VERSIONED = re.compile(r"^python\d+\.\d+$")
_EXTRA = tuple(p.rstrip("/") for p in os.environ.get("FAULTLINE_LIBRARY_PATHS", "").split(":") if p)


def _under(path, prefix):
    return path == prefix or path.startswith(prefix + "/")


def is_library_file(path):
    if not path or path.startswith("<"):
        return True
    if _under(path, SHIM_DIR) or any(_under(path, p) for p in _EXTRA):
        return True
    parts = [c for c in path.split("/") if c]
    if "faultline_shim" in parts:
        return True
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return parts[i + 1].split(".")[0] in _TORCH_PACKAGES
    for i in range(len(parts) - 1):
        if parts[i] in ("lib", "lib64") and _VERSIONED.match(parts[i + 1]):
            return True  # the standard library (site-packages was handled above)
    return False
