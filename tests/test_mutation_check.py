"""`make mutation` fails on a survivor that the exclusion list does not explain (REQ-TEST-019)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from mutation import run as mutation

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = """\
    rypsok.core.egress.ranges.x_judge_address__mutmut_1: killed
    rypsok.core.egress.ranges.x_judge_address__mutmut_2: timeout
    rypsok.core.egress.ranges.x_embedded_ipv4__mutmut_7: survived
    rypsok.core.egress.ranges.x_embedded_ipv4__mutmut_8: no tests
"""
PLANTED = "rypsok.core.egress.ranges.x_embedded_ipv4__mutmut_7"
UNREACHED = "rypsok.core.egress.ranges.x_embedded_ipv4__mutmut_8"


def _check(tmp_path: pathlib.Path, exclusions: str) -> subprocess.CompletedProcess[str]:
    results, listed = tmp_path / "results.txt", tmp_path / "exclusions.txt"
    results.write_text(RESULTS)
    listed.write_text(exclusions)
    command = [sys.executable, "-m", "mutation.run", "--check", str(results)]
    return subprocess.run(
        [*command, "--exclusions", str(listed)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.req("REQ-TEST-019")
def test_an_unlisted_survivor_fails_the_run(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: a planted survivor that is not excluded fails and is named."""
    run = _check(tmp_path, f"{UNREACHED}  # an equivalent mutant\n")
    assert run.returncode == 1, run.stdout
    assert f"SURVIVED {PLANTED} (survived), not excluded" in run.stdout
    assert "2 killed of 4, 1 excluded, score 66.7%, 1 unlisted survivors" in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_survivors_listed_with_a_reason_pass(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: a mutant no test reaches counts as a survivor; listed with reasons, the
    run passes and the score counts only the mutants not excluded."""
    run = _check(tmp_path, f"{PLANTED}  # equivalent: same range\n{UNREACHED}  # dead branch\n")
    assert run.returncode == 0, run.stdout
    assert "2 killed of 4, 2 excluded, score 100.0%" in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_an_exclusion_of_a_killed_mutant_is_named_for_removal(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: a listed mutant that the tests now kill is reported, so that an exclusion
    whose reason no longer holds does not stay in the list unseen."""
    killed = "rypsok.core.egress.ranges.x_judge_address__mutmut_1"
    run = _check(tmp_path, f"{PLANTED}  # equivalent\n{UNREACHED}  # dead\n{killed}  # was equal\n")
    assert run.returncode == 0, run.stdout
    assert f"KILLED {killed}, but listed: drop its exclusion" in run.stdout
    assert f"KILLED {PLANTED}" not in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_an_exclusion_without_a_reason_fails(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: every exclusion carries its reason."""
    run = _check(tmp_path, f"{PLANTED}\n{UNREACHED}  # dead branch\n")
    assert run.returncode == 1
    assert f"exclusions.txt:1: '{PLANTED}' has no reason" in run.stdout


@pytest.mark.req("REQ-TEST-019")
def test_the_committed_list_and_modules_are_well_formed() -> None:
    """REQ-TEST-019: each committed exclusion has a reason; each module and test exists,
    and the security modules of the issue are all covered."""
    _, problems = mutation.load_exclusions()
    assert problems == []
    for module in mutation.MODULES.values():
        assert (ROOT / module.source).is_file(), module.source
        assert all((ROOT / test).exists() for test in module.tests), module.tests
    sources = {module.source for module in mutation.MODULES.values()}
    for required in ("egress/policy.py", "egress/ranges.py", "privacy/values.py",
                     "privacy/extractors.py", "privacy/scan.py", "boundary/text.py",
                     "boundary/invisible.py", "boundary/instructions.py", "fetch/robots.py",
                     "mcp/http/plan.py", "mcp/http/auth.py", "mcp/http/oauth.py",
                     "fetch/pipeline.py", "fetch/returned.py"):  # fmt: skip
        assert any(source.endswith(required) for source in sources), required


@pytest.mark.req("REQ-TEST-019")
def test_mutants_mutmut_did_not_run_fail_as_not_run(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: mutants no test was mapped to are neither kills nor survivors to list:
    the module is reported NOT RUN and the run fails."""
    results, listed = tmp_path / "results.txt", tmp_path / "exclusions.txt"
    results.write_text(f"    {PLANTED}: not checked\n    {UNREACHED}: killed\n")
    listed.write_text("")
    command = [sys.executable, "-m", "mutation.run", "--check", str(results)]
    run = subprocess.run(
        [*command, "--exclusions", str(listed)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 1
    assert "NOT RUN: 1 of 2 mutants not checked" in run.stdout
