"""Drive the faultline binary from Python and read what it wrote.

The plugin does no diagnosis of its own: it starts ``faultline exec`` or
``faultline run`` and reads the run directory's ``report.json``
(docs/CONTRACT.md section 4). Keyword arguments are the command line's flags
(``nproc=3`` is ``--nproc 3``, ``hang_timeout=10`` is ``--hang-timeout 10``,
``no_instrument=True`` is ``--no-instrument``, a list repeats the flag), so a
flag the binary gains works here without a plugin release, and one it does not
know is its own usage error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

__all__ = [
    "Faultline",
    "FaultlineError",
    "FaultlineUsageError",
    "FaultlineHarnessError",
    "Record",
    "Run",
    "find_binary",
    "is_scenario",
]

# Exit statuses of the binary (CONTRACT.md "Exit statuses").
EXIT_USAGE = 2
EXIT_HARNESS = 3

# Programs that are a launcher of their own: exec observes them with
# `--launcher external` (ranks found by RANK in their environment) unless the
# caller says otherwise.
_LAUNCHER_PROGRAMS = {"torchrun", "srun", "mpirun", "mpiexec"}
_LAUNCHER_MODULES = {"torch.distributed.run", "torch.distributed.launch"}


class FaultlineError(Exception):
    """faultline could not give a report."""

    def __init__(self, message: str, *, returncode: Optional[int] = None, output: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.output = output


class FaultlineUsageError(FaultlineError):
    """The binary refused the arguments or the scenario file (exit 2; no report)."""


class FaultlineHarnessError(FaultlineError):
    """The harness itself failed (exit 3); ``run`` holds the report it still wrote."""

    def __init__(self, message: str, run: "Run", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.run = run


def find_binary(explicit: Union[str, os.PathLike, None] = None) -> str:
    """The faultline binary: `explicit`, else $FAULTLINE, else `faultline` on PATH."""
    for candidate, origin in ((explicit, "the binary given"), (os.environ.get("FAULTLINE"), "$FAULTLINE")):
        if candidate:
            path = Path(candidate)
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
            raise FaultlineError(f"{origin} is {str(candidate)!r}, which is not an executable file")
    found = shutil.which("faultline")
    if found:
        return found
    raise FaultlineError(
        "the faultline binary was not found: set $FAULTLINE to its path, put it on PATH, "
        "or pass --faultline-binary to pytest"
    )


class Record:
    """A JSON object of report.json, its keys as attributes (``run.root_cause.rank``).

    Nested objects are Records, arrays of objects lists of Records; ``record["key"]``
    and ``record.raw`` give the plain values. Unknown keys raise AttributeError
    naming the keys there are.
    """

    __slots__ = ("_data", "_path")

    def __init__(self, data: Mapping[str, Any], path: str = "report") -> None:
        object.__setattr__(self, "_data", dict(data))
        object.__setattr__(self, "_path", path)

    @property
    def raw(self) -> dict:
        return self._data

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return _wrap(data[name], f"{self._path}.{name}")
        raise AttributeError(f"{self._path} has no field {name!r} (it has: {', '.join(sorted(data)) or 'none'})")

    def __getitem__(self, key: str) -> Any:
        return _wrap(self._data[key], f"{self._path}.{key}")

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        return _wrap(self._data[key], f"{self._path}.{key}") if key in self._data else default

    def keys(self):
        return self._data.keys()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a report is read-only")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return self._data == other._data
        return self._data == other

    def __repr__(self) -> str:
        return f"Record({self._path}: {json.dumps(self._data)[:200]})"


def _wrap(value: Any, path: str) -> Any:
    if isinstance(value, dict):
        return Record(value, path)
    if isinstance(value, list):
        return [_wrap(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


class Run(Record):
    """One finished run: report.json as attributes, plus where it lies and how faultline exited."""

    __slots__ = ("dir", "returncode", "output")

    def __init__(self, run_dir: Path, returncode: int, output: str) -> None:
        report = run_dir / "report.json"
        try:
            data = json.loads(report.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise FaultlineError(
                f"faultline exited {returncode} and wrote no {report}\n{output}", returncode=returncode, output=output
            ) from None
        except json.JSONDecodeError as e:
            raise FaultlineError(f"{report}:{e.lineno}:{e.colno}: not JSON: {e.msg}", returncode=returncode) from None
        super().__init__(data, "report")
        object.__setattr__(self, "dir", run_dir)
        object.__setattr__(self, "returncode", returncode)
        object.__setattr__(self, "output", output)

    @property
    def failed(self) -> bool:
        """faultline's own judgement: the exit status says the run (or a scenario) failed."""
        return self.returncode != 0

    def rank(self, r: int) -> Record:
        """ranks[] entry of rank `r`."""
        for entry in self.ranks:
            if entry.rank == r:
                return entry
        raise KeyError(f"no rank {r} in {self.dir / 'report.json'} (ranks: {[e.rank for e in self.ranks]})")

    def findings_of(self, kind: str) -> list:
        return [f for f in self.findings if f.kind == kind]

    def failed_expectations(self) -> list:
        return [e for e in self.get("expectations", []) if not e.ok]

    def __repr__(self) -> str:
        rc = self._data.get("root_cause") or {}
        return f"Run({self.dir}, verdict={self._data.get('verdict')!r}, root_cause={rc.get('summary')!r})"


def flag_args(flags: Mapping[str, Any]) -> list:
    """Keyword arguments as command-line flags: ``hang_timeout=10`` -> ``--hang-timeout 10``.

    True is a bare flag, False and None are left out, a list or tuple repeats
    the flag once per item.
    """
    args: list = []
    for name, value in flags.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [flag, str(item)]
        else:
            args += [flag, str(value)]
    return args


def is_launcher_command(command: Sequence[str]) -> bool:
    """Whether `command` starts a launcher of its own (torchrun, python -m torch.distributed.run, srun)."""
    if not command:
        return False
    if Path(command[0]).name in _LAUNCHER_PROGRAMS:
        return True
    for i, arg in enumerate(command[:-1]):
        if arg == "-m" and command[i + 1] in _LAUNCHER_MODULES:
            return Path(command[0]).name.startswith("python")
    return False


class Faultline:
    """Runs the faultline binary; each run gets its own directory under `base_dir`."""

    def __init__(self, base_dir: Union[str, os.PathLike], binary: Union[str, os.PathLike, None] = None) -> None:
        self.binary = find_binary(binary)
        self.base_dir = Path(base_dir)
        self._runs = 0

    def _next_dir(self, what: str) -> Path:
        self._runs += 1
        return self.base_dir / f"{what}-{self._runs}"

    def _invoke(self, args: list, out: Path, cwd, env, timeout) -> Run:
        out.parent.mkdir(parents=True, exist_ok=True)
        full_env = None
        if env is not None:
            full_env = dict(os.environ)
            full_env.update({k: str(v) for k, v in env.items()})
        proc = subprocess.run(
            [self.binary, *args],
            cwd=cwd,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            timeout=timeout,
        )
        if proc.returncode == EXIT_USAGE:
            raise FaultlineUsageError(
                f"faultline {args[0]} refused its input (exit 2):\n{proc.stdout.strip()}",
                returncode=proc.returncode,
                output=proc.stdout,
            )
        run = Run(out, proc.returncode, proc.stdout)
        if proc.returncode == EXIT_HARNESS:
            why = run.get("harness_error") or proc.stdout.strip()
            raise FaultlineHarnessError(f"the faultline harness failed (exit 3): {why}", run, returncode=3,
                                        output=proc.stdout)
        return run

    def exec(
        self,
        command: Sequence[Union[str, os.PathLike]],
        *,
        out: Union[str, os.PathLike, None] = None,
        cwd: Union[str, os.PathLike, None] = None,
        env: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        **flags: Any,
    ) -> Run:
        """``faultline exec [FLAGS] -- COMMAND``; returns the run whatever its verdict.

        `launcher` defaults to ``external`` when the command is a launcher of its
        own (torchrun, ``python -m torch.distributed.run``, srun) and no `nproc`
        is given, else to faultline's builtin launcher. `timeout` bounds the
        whole call in seconds (subprocess.TimeoutExpired); prefer `deadline`,
        which faultline enforces and reports.
        """
        command = [os.fspath(c) for c in command]
        if not command:
            raise ValueError("faultline.exec needs a command")
        if "launcher" not in flags and "nproc" not in flags and is_launcher_command(command):
            flags["launcher"] = "external"
        run_dir = Path(out) if out is not None else self._next_dir("exec")
        args = ["exec", *flag_args(flags), "-o", str(run_dir), "--", *command]
        return self._invoke(args, run_dir, cwd, env, timeout)

    def run(
        self,
        scenario: Union[str, os.PathLike],
        *,
        stack: Optional[str] = None,
        out: Union[str, os.PathLike, None] = None,
        cwd: Union[str, os.PathLike, None] = None,
        env: Optional[Mapping[str, Any]] = None,
        timeout: Optional[float] = None,
        **flags: Any,
    ) -> Run:
        """``faultline run SCENARIO [--stack STACK] [FLAGS]``: the scenario judged on one stack."""
        run_dir = Path(out) if out is not None else self._next_dir(Path(scenario).stem)
        args = ["run", os.fspath(scenario), *flag_args({"stack": stack, **flags}), "-o", str(run_dir)]
        return self._invoke(args, run_dir, cwd, env, timeout)

    def stacks(self) -> list:
        """``faultline stacks --json``: the stacks this machine can drive."""
        proc = subprocess.run([self.binary, "stacks", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        if proc.returncode not in (0, 1):
            raise FaultlineError(f"faultline stacks exited {proc.returncode}: {proc.stderr.strip()}",
                                 returncode=proc.returncode, output=proc.stderr)
        return [_wrap(s, f"stacks[{i}]") for i, s in enumerate(json.loads(proc.stdout))]


def is_scenario(text: str) -> bool:
    """Whether a TOML document is a faultline scenario: it has a [stack] table.

    A file that does not parse but has a ``[stack]`` header line is one too, so
    that ``faultline run`` says where it is wrong instead of the file being
    passed over.
    """
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - older interpreters
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return isinstance(tomllib.loads(text).get("stack"), dict)
    except tomllib.TOMLDecodeError:
        return re.search(r"^\s*\[stack\]\s*(#.*)?$", text, re.MULTILINE) is not None


def iter_expectation_lines(run: Run) -> Iterable[str]:
    for e in run.get("expectations", []):
        mark = "ok  " if e.ok else e.get("status", "fail").ljust(4)
        reason = f"  ({e.reason})" if e.get("reason") else ""
        yield f"{mark} {e.what}: expected {json.dumps(e.raw['expected'])}, got {json.dumps(e.raw['actual'])}{reason}"
