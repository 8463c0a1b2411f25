"""What every part of the shim shares: the rank's recorder, once active."""
import os

# Set by activate(); None while the process is not a rank (the shim then
# records nothing, and every wrapper is a plain pass-through).
recorder = None

SHIM_DIR = os.path.dirname(os.path.abspath(__file__))

# Path fragments of library code: the innermost frame outside them is "the
# user's code". The same list the harness's diagnosis uses, plus the shim.
_LIBRARY_MARKERS = ("/lib/python", "site-packages", "dist-packages", SHIM_DIR)


def is_library_file(path):
    return not path or path.startswith("<") or any(m in path for m in _LIBRARY_MARKERS)
