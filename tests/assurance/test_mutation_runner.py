"""A mutation run that stops early says why: the step of mutmut and the test (REQ-TEST-019).

mutmut maps tests to functions in a first "stats" run of the selected tests, then
runs them once with no mutant active; if either fails it stops, and every mutant
stays "not checked". The runner then reports the module NOT RUN; these tests
show that the report names the step that failed and the failing test, from
mutmut's saved output (`--check RESULTS --log LOG`), instead of leaving the
cause in a log nobody reads.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from mutation import run as mutation

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNCHECKED = (
    "    rypsok.core.boundary.text.x_clean_text__mutmut_1: not checked\n"
    "    rypsok.core.boundary.text.x_clean_text__mutmut_2: not checked\n"
)
SLOW_TEST = "tests/core/boundary/test_text.py::test_hostile_64_kib_input_is_cleaned_in_linear_time"
# What mutmut 3.8 prints when its stats run fails: pytest's own output, then its line.
STATS_RUN_FAILED = f"""\
⠋ Generating mutants
    done in 812ms (1 files mutated, 0 ignored, 0 unmodified)
⠋ Running stats
........F
=================================== FAILURES ===================================
Failed: Timeout (>60.0s) from pytest-timeout.
=========================== short test summary info ============================
FAILED {SLOW_TEST} - Failed: Timeout (>60.0s) from pytest-timeout.
!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!
1 failed, 8 passed in 75.12s (0:01:15)
failed to collect stats. runner returned 1
"""


def _check(tmp_path: pathlib.Path, log: str | None) -> subprocess.CompletedProcess[str]:
    results, listed = tmp_path / "results.txt", tmp_path / "exclusions.txt"
    results.write_text(UNCHECKED, encoding="utf-8")
    listed.write_text("", encoding="utf-8")
    command = [sys.executable, "-m", "mutation.run", "--check", str(results)]
    command += ["--exclusions", str(listed)]
    if log is not None:
        (tmp_path / "mutmut.log").write_text(log, encoding="utf-8")
        command += ["--log", str(tmp_path / "mutmut.log")]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.req("REQ-TEST-019")
def test_a_failed_stats_run_is_reported_with_its_failing_test(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: the NOT RUN line names mutmut's stats run and the test that failed it."""
    run = _check(tmp_path, STATS_RUN_FAILED)
    assert run.returncode == 1, run.stdout
    line = next(line for line in run.stdout.splitlines() if "NOT RUN" in line)
    assert "2 of 2 mutants not checked: its stats run (the tests under trampolines) failed" in line
    assert f"failing: {SLOW_TEST} (Failed: Timeout (>60.0s) from pytest-timeout.)" in line


@pytest.mark.req("REQ-TEST-019")
def test_a_failed_clean_run_is_told_apart_from_the_stats_run(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: a failure of the clean run (no mutant active) names that step instead."""
    log = "⠋ Running clean tests\nE\nERROR tests/x.py::test_y - OSError: busy\n"
    log += "Failed to run clean test\n"
    run = _check(tmp_path, log)
    assert run.returncode == 1
    assert "its clean run of the tests (no mutant active) failed; failing: tests/x.py::test_y" in (
        run.stdout
    )
    assert "stats run" not in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_a_run_ended_by_pytest_timeout_threads_says_so(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: when pytest-timeout ends the whole process (no summary is printed), the
    report says that a test hit its bound, with mutmut's exit status."""
    cause = mutation.stop_cause("⠋ Running stats\n...\n+++++ Timeout +++++\n~~ Stack ~~\n", 1)
    assert cause.startswith("mutmut exited with status 1")
    assert "a test hit pytest-timeout's bound, which ended the process" in cause


@pytest.mark.req("REQ-TEST-019")
def test_a_killed_mutmut_and_a_silent_one_are_named(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: a mutmut ended by a signal says which; with nothing to go on the report
    keeps the plain reading (no test was mapped to the mutants)."""
    assert mutation.stop_cause("⠋ Running stats\n", -9) == "mutmut was ended by signal 9"
    run = _check(tmp_path, None)
    assert "not checked: mutmut mapped no test to them (log in" in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_mutation_runs_lift_the_gate_bound_per_test() -> None:
    """REQ-TEST-019: the pytest of a mutation run overrides the gate's 60 s bound per test
    (the trampolines slow every call), leaves out the tests marked with a time bound, and
    keeps a module's own deselected ids."""
    arguments = mutation._pytest_arguments(mutation.MODULES["boundary.text"])
    assert arguments[arguments.index("-o") + 1] == "timeout=600"
    assert arguments[arguments.index("-m") + 1] == "not timeout"
    assert arguments[arguments.index("--deselect") + 1] == SLOW_TEST


@pytest.mark.req("REQ-TEST-019")
def test_a_listing_whose_mutant_is_gone_is_named_for_removal(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: an exclusion of the module run that names a mutant the run did not make
    (its function changed, so mutmut renumbered) is reported, before its number is reused;
    listings of other modules are left alone."""
    results, listed = tmp_path / "results.txt", tmp_path / "exclusions.txt"
    results.write_text("    rypsok.core.fetch.returned.x_remember__mutmut_1: killed\n")
    gone = "rypsok.core.fetch.returned.x_remember__mutmut_4"
    other = "rypsok.core.fetch.robots.x__agent__mutmut_18"
    listed.write_text(f"{gone}  # equivalent once\n{other}  # equivalent\n", encoding="utf-8")
    command = [sys.executable, "-m", "mutation.run", "--check", str(results)]
    run = subprocess.run(
        [*command, "--exclusions", str(listed)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout
    assert f"LISTED {gone}, but no such mutant: drop it" in run.stdout
    assert other not in run.stdout
    in_scope = mutation.stale_exclusions(
        {"rypsok.core.fetch.pipeline.x_check_strict__mutmut_1": "killed"},
        {"rypsok.core.fetch.pipeline.x_init__mutmut_9": "r", "rypsok.core.fetch.pipeline."
         "x_check_strict__mutmut_7": "r"},
        only=("*_check_strict*",),
    )  # fmt: skip
    assert in_scope == ["rypsok.core.fetch.pipeline.x_check_strict__mutmut_7"]
