"""Post-import hooks: run a patch right after a module has been executed.

The shim never imports torch itself (a trainer that does not use torch must
not pay for it, and import order must stay the trainer's). Instead a finder
at the front of sys.meta_path notices the few torch modules it cares about,
lets the normal finders locate them, and runs the patch once the module's
code has run, before the importer sees the module: so
`from torch.distributed import all_reduce` already gets the wrapper. The
finder removes itself once every watched module has been patched.
"""
import sys

from . import _instrument

_patches = {}  # module name -> [(label, patch(module))]
_finder = None


def _run(patches, module):
    for label, patch in patches:
        # A patch records each of its parts itself (_instrument.attempt); what
        # escapes it leaves the rest uninstrumented and is recorded under its label.
        try:
            patch(module)
        except Exception as e:  # noqa: BLE001
            _instrument.failed(label, e)


class _PatchingLoader:
    """Wraps a module's loader for the one exec_module call, then gets out of the way."""

    def __init__(self, loader, name):
        self._loader = loader
        self._name = name

    def create_module(self, spec):
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create else None

    def exec_module(self, module):
        # The module keeps its real loader (inspect, pkgutil and resources look at it).
        try:
            module.__spec__.loader = self._loader
        except AttributeError:
            pass
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        _run(_patches.pop(self._name, []), module)
        _maybe_uninstall()

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Finder:
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _patches:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, fullname)
                return spec
        return None


def _maybe_uninstall():
    global _finder
    if not _patches and _finder is not None:
        try:
            sys.meta_path.remove(_finder)
        except ValueError:
            pass
        _finder = None


def when_imported(name, patch, label):
    """Runs patch(module) after `name` is imported, or now if it already is;
    `label` names it in the instrument events when it fails as a whole."""
    global _finder
    module = sys.modules.get(name)
    if module is not None and name not in _patches:
        _run([(label, patch)], module)
        return
    _patches.setdefault(name, []).append((label, patch))
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
