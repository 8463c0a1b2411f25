"""Where a collective was called from (issue 18): the `site`, `callers` and
`rank_cond` fields of collective_begin.

site: the innermost frame outside torch, the standard library and the shim
("/app/train.py:42"); callers: the next such frames outward, innermost
first (at most 3), so a collective hidden inside a helper still shows the
user's line that called the helper. rank_cond: the innermost of those
frames' lines that runs only on some ranks, with the condition that
decides it ("/app/train.py:40: if rank == 0"): an `if`/`while`/conditional
expression around it, or an earlier `if <rank test>: return` guard in the
same block. With two ranks there is no majority; this is what tells which
side took a rank-conditional path.

Cost: one walk up the Python stack per call (a dict lookup per frame, by
file name), then one dict lookup of the walked (file, line) tuple; the
fields and the rank condition are computed once per distinct call path, the
condition by parsing each user file once with `ast`.
"""
import ast
import json
import linecache
import re
import sys

from . import _instrument, _state

_MAX_FRAMES = 4   # the site and 3 callers
_MAX_DEPTH = 64   # frames walked at most

_library = {}     # file name -> bool
_fields = {}      # ((file, line), ...) -> the JSON fields
_trees = {}       # file name -> ast.Module or None
_conds = {}       # (file, line) -> "file:line: if TEST" or ""

# Names that make a test depend on which rank runs it: rank, local_rank,
# self.rank, args.global_rank, get_rank(), os.environ["RANK"],
# is_main_process(), is_master, is_rank_zero, trainer.is_global_zero,
# accelerator.process_index, is_world_process_zero(), ...
RANK_TEST = re.compile(
    r"\w*rank\b|\brank_zero\w*|\bis_(main|master|primary)\w*|(main|master)_process\b|\bglobal_zero\b"
    r"|\bprocess_index\b|\bprocess_zero\b",
    re.IGNORECASE,
)


def _is_library(path):
    lib = _library.get(path)
    if lib is None:
        lib = _library[path] = _state.is_library_file(path) and not path.startswith(("<stdin>", "<string>"))
    return lib


def fields(depth=2):
    """',"site":...,"callers":[...],"rank_cond":...' for the caller `depth`
    frames up (the wrapper's caller), or "" when no frame is the user's."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return ""
    path = []
    walked = 0
    while f is not None and len(path) < _MAX_FRAMES and walked < _MAX_DEPTH:
        name = f.f_code.co_filename
        if not _is_library(name):
            path.append((name, f.f_lineno))
        f = f.f_back
        walked += 1
    if not path:
        return ""
    key = tuple(path)
    out = _fields.get(key)
    if out is None:
        out = _fields[key] = _format(path)
    return out


def site(depth=2):
    """"file:line" of the innermost user frame `depth` frames up and outward,
    or None: where a metric was handed to a logger (_metrics)."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    walked = 0
    while f is not None and walked < _MAX_DEPTH:
        if not _is_library(f.f_code.co_filename):
            return "%s:%d" % (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
        walked += 1
    return None


def _format(path):
    site = "%s:%d" % path[0]
    out = ',"site":' + json.dumps(site)
    if len(path) > 1:
        out += ',"callers":' + json.dumps(["%s:%d" % p for p in path[1:]])
    for name, line in path:
        cond = rank_condition(name, line)
        if cond:
            out += ',"rank_cond":' + json.dumps(cond)
            break
    return out


def _tree(name):
    if name not in _trees:
        try:
            _trees[name] = ast.parse("".join(linecache.getlines(name)) or "\n", name)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            _trees[name] = None
    return _trees[name]


def _text(node):
    try:
        s = ast.unparse(node)
    except Exception as e:  # noqa: BLE001
        _instrument.pass_through(e)
        return ""
    return s if len(s) <= 120 else s[:117] + "..."


def _rank_test(node):
    return bool(RANK_TEST.search(_text(node)))


def _spans(node, line):
    return getattr(node, "lineno", 0) <= line <= (getattr(node, "end_lineno", None) or getattr(node, "lineno", 0))


def _in(stmts, line):
    return bool(stmts) and stmts[0].lineno <= line <= (stmts[-1].end_lineno or stmts[-1].lineno)


_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def rank_condition(name, line):
    """The rank test that decides whether `line` of file `name` runs, as
    "name:L: if TEST" (or "while TEST", "if TEST: return" for a guard that
    leaves the block early); "" when none or the source cannot be read."""
    key = (name, line)
    cond = _conds.get(key)
    if cond is None:
        cond = _conds[key] = _find(name, line)
    return cond


def _find(name, line):
    tree = _tree(name)
    if tree is None:
        return ""
    found = ""
    node = tree
    while True:
        nxt = None
        for field in ("body", "orelse", "finalbody", "handlers"):
            stmts = getattr(node, field, None)
            if not isinstance(stmts, list) or not _in(stmts, line):
                continue
            for i, st in enumerate(stmts):
                if _spans(st, line):
                    # An earlier `if <rank test>: return` in this block lets only some ranks here.
                    for prev in stmts[:i]:
                        if isinstance(prev, ast.If) and prev.body and isinstance(prev.body[-1], _EXITS) \
                                and _rank_test(prev.test):
                            found = "%s:%d: if %s: %s" % (name, prev.lineno, _text(prev.test),
                                                          type(prev.body[-1]).__name__.lower())
                    if isinstance(node, (ast.If, ast.While)) and field in ("body", "orelse") and _rank_test(node.test):
                        found = "%s:%d: %s %s" % (name, node.lineno, "while" if isinstance(node, ast.While) else "if",
                                                  _text(node.test))
                    nxt = st
                    break
            if nxt is not None:
                break
        if nxt is None:
            break
        node = nxt
    if not found:
        # A conditional expression on the line itself: `dist.barrier() if rank == 0 else None`.
        for sub in ast.walk(node):
            if isinstance(sub, ast.IfExp) and _spans(sub, line) and _rank_test(sub.test):
                found = "%s:%d: if %s" % (name, sub.lineno, _text(sub.test))
                break
    return found
