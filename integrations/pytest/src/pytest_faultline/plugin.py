"""The pytest plugin: a `faultline` fixture, and scenario files as test items.

    def test_rank_crash_is_diagnosed(faultline):
        run = faultline.exec(["torchrun", "--nproc_per_node=2", "train.py"], hang_timeout=10)
        assert run.root_cause.rank == 1 and run.teardown.clean

    pytest scenarios/                      # every scenario file is an item, judged by faultline
    pytest scenarios/ --faultline-stack torchrun@2.13 --faultline-stack builtin@1.13
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from pytest_faultline import Faultline, FaultlineError, Run, is_scenario, iter_expectation_lines


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("faultline", "faultline fault-injection runs")
    group.addoption("--faultline-binary", metavar="PATH", default=None,
                    help="the faultline binary (default: $FAULTLINE, else faultline on PATH)")
    group.addoption("--faultline-stack", metavar="STACK[@MAJOR.MINOR]", action="append", default=[],
                    help="run each scenario file on this stack instead of its own (repeatable: one item per stack)")
    group.addoption("--faultline-strict", action="store_true", default=False,
                    help="a scenario that does not apply to the stack (unsupported) fails instead of skipping")


def _binary(config: pytest.Config) -> Optional[str]:
    return config.getoption("faultline_binary")


@pytest.fixture
def faultline(request: pytest.FixtureRequest, tmp_path: Path) -> Faultline:
    """Runs the faultline binary; each call's run directory lies under the test's tmp_path."""
    try:
        return Faultline(tmp_path / "faultline", binary=_binary(request.config))
    except FaultlineError as e:
        missing = str(e)
    pytest.fail(missing, pytrace=False)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> Optional[pytest.Collector]:
    if file_path.suffix != ".toml":
        return None
    try:
        text = file_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not is_scenario(text):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


class ScenarioFile(pytest.File):
    """A scenario .toml: one item per --faultline-stack (one item on the scenario's own stack without)."""

    def collect(self) -> Iterator["ScenarioItem"]:
        stacks: List[Optional[str]] = list(self.config.getoption("faultline_stack")) or [None]
        for stack in stacks:
            name = self.path.stem if stack is None else f"{self.path.stem}[{stack}]"
            yield ScenarioItem.from_parent(self, name=name, stack=stack)


class ScenarioFailed(Exception):
    def __init__(self, run: Run) -> None:
        super().__init__(run)
        self.run = run


class ScenarioItem(pytest.Item):
    def __init__(self, *, stack: Optional[str], **kw) -> None:
        super().__init__(**kw)
        self.stack = stack
        self.run_result: Optional[Run] = None

    def runtest(self) -> None:
        base = self.config._tmp_path_factory.mktemp(self.path.stem)  # type: ignore[attr-defined]
        try:
            run = Faultline(base, binary=_binary(self.config)).run(self.path, stack=self.stack, out=base / "run")
        except FaultlineError as e:
            refused = str(e)
        else:
            refused = None
        if refused is not None:
            pytest.fail(refused, pytrace=False)
        self.run_result = run
        self.user_properties.append(("faultline_run_dir", str(run.dir)))
        if run.verdict == "unsupported" and not self.config.getoption("faultline_strict"):
            pytest.skip(f"unsupported on {run.stack.launcher}: {run.get('unsupported_reason', 'no reason given')}")
        if run.failed or run.verdict == "unsupported":
            raise ScenarioFailed(run)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioFailed):
            run = excinfo.value.run
            lines = [f"scenario {self.path.name} on {run.stack.launcher}: verdict {run.verdict}"]
            rc = run.get("root_cause")
            lines.append(f"root cause: {rc.summary if rc is not None else 'none'}")
            for key in ("unsupported_reason", "bad_input", "diagnose_error", "harness_error"):
                if key in run:
                    lines.append(f"{key}: {run[key]}")
            lines += list(iter_expectation_lines(run))
            lines.append(f"run directory: {run.dir}")
            return "\n".join(lines)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        on = self.stack or "its own stack"
        return self.path, None, f"faultline scenario {self.path.name} on {on}"
