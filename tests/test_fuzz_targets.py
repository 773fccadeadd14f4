"""The fuzz targets cover every parser of REQ-SEC-023 and start from the fixtures."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest

from fuzz import known_crashes, make_corpus, targets
from fuzz import run as fuzz_run
from rypsok.core.engines.registry import known_ids
from tests.properties import test_fuzz_regressions as regressions

ROOT = pathlib.Path(__file__).resolve().parents[1]
# REQ-SEC-023's list, by the target that fuzzes each parser.
REQUIRED = {
    "text_cleaner", "content_cleaner", "charset_decoding", "html_pipeline",
    "url_normalization", "credential_check", "config_parsing", "egress_url", "egress_rule",
    "robots", "header_values",
}  # fmt: skip


@pytest.mark.req("REQ-SEC-023")
def test_every_parser_of_the_requirement_and_every_driver_has_a_target() -> None:
    """REQ-SEC-023: one target per parser that reads external bytes, one per driver."""
    drivers = {f"driver_{engine_id}" for engine_id in known_ids()}
    assert set(targets.TARGETS) == REQUIRED | drivers


@pytest.mark.req("REQ-SEC-023")
def test_every_corpus_is_committed_and_made_from_the_fixtures() -> None:
    """REQ-SEC-023: each target has a non-empty seed corpus equal to what the fixtures give."""
    for target in targets.TARGETS:
        folder = ROOT / "fuzz" / "corpus" / target
        committed = {path.name: path.read_bytes() for path in folder.glob("*")}
        assert committed, target
        assert committed == make_corpus.corpus_files(target), (
            f"{target}: run `python -m fuzz.make_corpus` after changing the fixtures"
        )


@pytest.mark.req("REQ-SEC-023", "REQ-TEST-013")
@pytest.mark.timeout(120)
def test_every_seed_holds_its_targets_contract() -> None:
    """REQ-SEC-023: the seeds themselves pass the contract, so a fuzz run starts from green."""
    for target, run in targets.TARGETS.items():
        for seed in sorted((ROOT / "fuzz" / "corpus" / target).glob("*")):
            run(seed.read_bytes())


def test_a_broken_contract_is_reported_as_a_crash() -> None:
    """REQ-SEC-023: a target lets an undeclared error through: it swallows only the
    module's declared failure, so a fuzzer sees the crash."""
    with pytest.raises(RuntimeError, match="breaks the contract"):
        targets.check_driver("wikipedia", _NotAResponse())  # type: ignore[arg-type]


class _NotAResponse:
    """Stands for a driver bug: parse raises something that is not an EngineFailure."""

    status = 200
    headers: dict[str, str] = {}  # noqa: RUF012

    @property
    def body(self) -> bytes:
        raise RuntimeError("parse read a body that breaks the contract")


@pytest.mark.req("REQ-SEC-023")
@pytest.mark.timeout(120)
def test_without_atheris_the_run_says_so_and_runs_hypothesis(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-023: where atheris cannot be imported, `fuzz.run` says so plainly and runs the
    Hypothesis targets instead: never a silent pass."""
    hidden = tmp_path / "atheris"
    hidden.mkdir()
    (hidden / "__init__.py").write_text("raise ImportError('no wheel for this platform')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--seconds", "1", "egress_rule"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=110, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "atheris is NOT installed" in run.stdout
    assert "fuzz: egress_rule: ok (hypothesis" in run.stdout
    assert "fuzz: 1 targets run, no crash" in run.stdout.splitlines()


@pytest.mark.req("REQ-SEC-023")
@pytest.mark.timeout(120)
def test_a_crashing_target_fails_the_run(tmp_path: pathlib.Path) -> None:
    """REQ-SEC-023: a crash makes the run fail and names the target."""
    planted = tmp_path / "fuzz"
    planted.mkdir()
    source = (ROOT / "fuzz" / "targets.py").read_text(encoding="utf-8")
    (planted / "targets.py").write_text(
        source + "\n\ndef _boom(data: bytes) -> None:\n    raise RuntimeError('planted')\n\n"
        "TARGETS = {'egress_rule': _boom}\n"
    )
    for name in ("__init__.py", "run.py", "known_crashes.py"):
        (planted / name).write_text((ROOT / "fuzz" / name).read_text(encoding="utf-8"))
    (planted / "corpus").symlink_to(ROOT / "fuzz" / "corpus")
    run = subprocess.run(
        [sys.executable, "-m", "fuzz.run", "--seconds", "1", "--engine", "hypothesis"],
        cwd=tmp_path, capture_output=True, text=True, timeout=110, check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])},
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "fuzz: egress_rule: CRASH" in run.stdout
    assert "1 crashed: egress_rule" in run.stdout


def planted_crash(data: bytes) -> None:
    """A stand-in for an open crash: OverflowError out of a function a KnownCrash names."""
    raise OverflowError("planted")


PLANTED = known_crashes.KnownCrash(
    "text_cleaner", OverflowError, "tests/test_fuzz_targets.py", "planted_crash",
    "tests/test_fuzz_targets.py::test_a_known_open_crash_is_let_through_only_where_it_is_listed",
)  # fmt: skip


@pytest.mark.req("REQ-SEC-023")
def test_a_known_open_crash_is_let_through_only_where_it_is_listed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-023: `make fuzz` goes on past a listed crash (exception and function both
    match); any other error of the same target still stops it. No crash is open now
    (FZ-1 and FZ-2 are fixed), so one is planted."""
    monkeypatch.setattr(known_crashes, "KNOWN", (PLANTED,))
    known_crashes.tolerating("text_cleaner", planted_crash)(b"x")

    def other_bug(data: bytes) -> None:
        raise OverflowError("the same type from elsewhere")

    with pytest.raises(OverflowError):
        known_crashes.tolerating("text_cleaner", other_bug)(b"x")
    with pytest.raises(OverflowError):
        known_crashes.tolerating("charset_decoding", planted_crash)(b"x")


REGRESSIONS_FILE = "tests/properties/test_fuzz_regressions.py"
# An open crash as it would be listed: FZ-1 before its fix, replayed by the regression test.
PLANTED_OPEN = known_crashes.KnownCrash(
    "header_values", OverflowError, "rypsok/core/headers.py", "_http_date",
    f"{REGRESSIONS_FILE}::test_a_crash_the_fuzzer_found_stays_fixed",
)  # fmt: skip


def _not_kept_open(crash: known_crashes.KnownCrash) -> list[str]:
    """Why a tolerated crash is not kept visible by a strict-xfail regression test, if so."""
    path, _, name = crash.test.partition("::")
    problems = []
    if path != REGRESSIONS_FILE or not callable(getattr(regressions, name, None)):
        problems.append(f"{crash.test}: no such regression test")
    cases = [case for case in regressions._cases() if case.values[0] == crash.target]  # type: ignore[attr-defined]
    if not cases:
        problems.append(f"{crash.target}: no crashing input under fuzz/regressions")
    for case in cases:
        marks = case.marks  # type: ignore[attr-defined]
        if not any(m.name == "xfail" and m.kwargs.get("strict") is True for m in marks):
            problems.append(f"{case.id}: replayed without a strict xfail")  # type: ignore[attr-defined]
    return problems


@pytest.mark.req("REQ-SEC-023")
def test_every_known_crash_is_kept_open_by_a_strict_xfail_test(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-023: a tolerated crash is never silent: its crashing input is replayed by the
    regression test under a strict xfail, so the fix must remove both. The list and the
    regression test's open crashes agree; the check is shown on a planted open crash (none
    is open now), both when it holds and when the xfail or the test is missing."""
    assert {crash.target for crash in known_crashes.KNOWN} == set(regressions.OPEN)
    assert [p for crash in known_crashes.KNOWN for p in _not_kept_open(crash)] == []
    monkeypatch.setattr(regressions, "OPEN", {"header_values": "FZ-1, planted"})
    assert _not_kept_open(PLANTED_OPEN) == []
    monkeypatch.setattr(regressions, "OPEN", {})
    (problem,) = _not_kept_open(PLANTED_OPEN)
    assert problem.startswith("header_values-") and "without a strict xfail" in problem
    renamed = dataclasses.replace(PLANTED_OPEN, test=f"{REGRESSIONS_FILE}::test_gone")
    assert f"{REGRESSIONS_FILE}::test_gone: no such regression test" in _not_kept_open(renamed)
    elsewhere = dataclasses.replace(PLANTED_OPEN, target="robots")
    assert "robots: no crashing input under fuzz/regressions" in _not_kept_open(elsewhere)


@pytest.mark.req("REQ-SEC-023", "REQ-TEST-019")
@pytest.mark.timeout(120)
def test_the_strict_run_of_the_release_checks_fails_while_a_crash_is_open(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """REQ-SEC-023: a crash is a No-Go for the release until it is fixed, even in a run that
    did not meet it again; with none open the strict run passes."""
    argv = ["--strict", "--seconds", "1", "--engine", "hypothesis", "egress_rule"]
    assert fuzz_run.main(argv) == 0
    monkeypatch.setattr(known_crashes, "KNOWN", (PLANTED,))
    assert fuzz_run.main(argv) == 1
    assert "1 known crashes still open" in capsys.readouterr().out
