"""The pytest plugin end to end: inner pytest sessions (pytester) that drive the
real faultline binary ($FAULTLINE) on real trainers, torchrun among them.

Run by ctest entry `pytest_plugin` (tests/integrations/pytest/run.sh), which
installs the plugin with pip from the checkout first, so these tests also
prove that it installs and that pytest loads it by its entry point.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

SOURCE = Path(os.environ.get("FAULTLINE_SOURCE_DIR", Path(__file__).resolve().parents[3]))
TORCH_BIN = Path(os.environ.get("FL_TORCH_BIN", "/opt/faultline/torch-2.13/bin"))
PYTHON = str(TORCH_BIN / "python")
TORCHRUN = str(TORCH_BIN / "torchrun")
TRAINERS = SOURCE / "scenarios" / "python"


@pytest.fixture(autouse=True)
def _binary():
    if not os.environ.get("FAULTLINE"):
        pytest.fail("set $FAULTLINE to the faultline binary (ctest does)")


def test_plugin_is_loaded_by_its_entry_point(pytester):
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(["*--faultline-binary*", "*--faultline-stack*", "*--faultline-strict*"])


def test_exec_under_torchrun_names_the_rank_and_the_line(pytester):
    pytester.makepyfile(f"""
        def test_rank_crash_is_diagnosed(faultline):
            run = faultline.exec([{TORCHRUN!r}, "--nproc_per_node=2", {str(TRAINERS / "name_error.py")!r},
                                  "--fault-rank", "1"], hang_timeout=10, deadline=120)
            assert run.root_cause.rank == 1 and run.teardown.clean
            assert run.root_cause.exception_type == "NameError"
            assert run.root_cause.location.file.endswith("name_error.py")
            assert run.stack.launcher == "external"  # torchrun is a launcher: observed, not launched
            assert run.rank(1).role == "root_cause"
            assert run.failed and run.verdict == "diagnosed"
            assert (run.dir / "report.json").is_file()
    """)
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=1)


def test_keyword_arguments_are_the_command_lines_flags(pytester):
    # nproc=2 is --nproc 2 (builtin launcher); fault= is --fault, a list repeats it.
    pytester.makepyfile(f"""
        def test_scripted_fault(faultline):
            run = faultline.exec([{PYTHON!r}, {str(TRAINERS / "plain_ddp.py")!r}, "--steps", "6"],
                                 nproc=2, hang_timeout=10, deadline=120, fault=["sigkill:rank=1:step=3"])
            assert run.stack.launcher == "builtin"
            assert run.root_cause.kind == "signal" and run.root_cause.signal == "SIGKILL"
            assert run.root_cause.rank == 1
            assert run.trigger.kind == "rank_failure"

        def test_clean(faultline):
            run = faultline.exec([{PYTHON!r}, {str(TRAINERS / "plain_ddp.py")!r}, "--steps", "3"], nproc=2)
            assert not run.failed and run.verdict == "clean" and run.root_cause is None
            assert [r.role for r in run.ranks] == ["clean", "clean"]
    """)
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(passed=2)


def test_an_unknown_flag_is_the_binarys_usage_error(pytester):
    pytester.makepyfile("""
        import pytest
        from pytest_faultline import FaultlineUsageError

        def test_bad(faultline):
            with pytest.raises(FaultlineUsageError, match="no_such_flag|no-such-flag"):
                faultline.exec(["true"], no_such_flag=3)
    """)
    pytester.runpytest_subprocess("-q").assert_outcomes(passed=1)


def test_a_missing_binary_says_where_it_looked(pytester, monkeypatch):
    monkeypatch.setenv("FAULTLINE", "/nonexistent/faultline")
    pytester.makepyfile("""
        def test_x(faultline):
            pass
    """)
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*$FAULTLINE is '/nonexistent/faultline', which is not an executable file*"])
    assert result.ret != 0


def _scenario(pytester, name, body):
    path = pytester.path / f"{name}.toml"
    path.write_text(body)
    return path


SCENARIO = """
name = "{name}"
description = "plugin test: rank 1 of an unmodified DDP trainer raises at step 2"
tags = ["plugin-test"]

[stack]
launcher = "builtin"
trainer = "command"
command = ["{python}", "{trainer}"]
args = ["--steps", "4"]
stacks = {stacks}
world_size = 2

[fault]
kind = "exception"
rank = 1
step = 2

[limits]
hang_timeout_s = 10
deadline_s = 120

[expect]
"root_cause.kind" = "python_exception"
"root_cause.rank" = {rank}
"teardown.clean" = true
"""


def test_scenario_files_are_items_judged_by_faultline(pytester):
    common = dict(python=PYTHON, trainer=TRAINERS / "plain_ddp.py")
    _scenario(pytester, "holds", SCENARIO.format(name="holds", stacks='["builtin"]', rank=1, **common))
    _scenario(pytester, "wrong", SCENARIO.format(name="wrong", stacks='["builtin"]', rank=0, **common))
    _scenario(pytester, "elsewhere", SCENARIO.format(name="elsewhere", stacks='["spawn"]', rank=1, **common))
    (pytester.path / "pyproject.toml").write_text('[project]\nname = "not-a-scenario"\n')
    result = pytester.runpytest_subprocess("-v", "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*holds*PASSED*",
        "*fail*root_cause.rank: expected 0, got 1*",
        "*run directory: *",
        "*SKIPPED*unsupported on*",
    ])


def test_one_item_per_stack(pytester):
    common = dict(python=PYTHON, trainer=TRAINERS / "plain_ddp.py")
    _scenario(pytester, "both", SCENARIO.format(name="both", stacks='["builtin", "torchrun"]', rank=1, **common))
    result = pytester.runpytest_subprocess("-v", "--faultline-stack", "builtin@2.13",
                                           "--faultline-stack", "torchrun@2.13")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*both?builtin@2.13?*PASSED*", "*both?torchrun@2.13?*PASSED*"])


def test_a_scenario_file_that_does_not_parse_fails_with_file_and_line(pytester):
    _scenario(pytester, "broken", 'name = "broken"\n[stack]\nlauncher = "builtin"\nworld_size = "two"\n')
    result = pytester.runpytest_subprocess("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*broken.toml:4:*world_size*"])
    result.stdout.no_fnmatch_line("*During handling*")
