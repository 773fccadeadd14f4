"""The CI workflow files and the release checks (REQ-SEC-020, REQ-TEST-019, REQ-RUST-002)."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys
from types import ModuleType

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release-check.yml"
RELEASE_CHECK = ROOT / "tools" / "release_check.py"
RELEASE_JOBS = {"reproducibility", "image", "fuzz", "mutation", "live", "audit"}
_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*(\S+)", re.MULTILINE)
_PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")


def unpinned(text: str) -> list[str]:
    """Every `uses:` of a workflow that is not owner/repo@<40-hex commit>."""
    return [ref for ref in _USES.findall(text) if not _PINNED.fullmatch(ref)]


def _release() -> dict[str, object]:
    document: dict[str, object] = yaml.safe_load(RELEASE.read_text(encoding="utf-8"))
    return document


@pytest.mark.req("REQ-SEC-020")
def test_every_action_is_pinned_to_a_full_commit() -> None:
    """REQ-SEC-020: each `uses:` of every workflow names a 40-hex commit, not a tag."""
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert _USES.findall(text), path
        assert unpinned(text) == [], path


@pytest.mark.req("REQ-SEC-020")
def test_the_pin_check_catches_tags_branches_and_short_hashes() -> None:
    """REQ-SEC-020: the check is not a rubber stamp."""
    planted = (
        "steps:\n  - uses: actions/checkout@v5\n  - uses: actions/setup-python@main\n"
        "  - uses: actions/cache@0400d5f\n"
        "  - uses: actions/checkout@08c6903cd8c0fde910a37f88322edcfb5dd907a8 # v5.0.0\n"
    )
    assert unpinned(planted) == [
        "actions/checkout@v5",
        "actions/setup-python@main",
        "actions/cache@0400d5f",
    ]


@pytest.mark.req("REQ-TEST-019", "REQ-RUST-002")
def test_release_workflow_runs_every_release_job() -> None:
    """REQ-TEST-019: manual dispatch only; the five release jobs in parallel; the test matrix
    of REQ-RUST-002; a verdict that fails on any job that failed or was skipped."""
    workflow = _release()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert isinstance(triggers, dict) and set(triggers) == {"workflow_dispatch"}
    jobs = workflow["jobs"]
    assert isinstance(jobs, dict)
    assert set(jobs["release"]["strategy"]["matrix"]["job"]) == RELEASE_JOBS
    assert jobs["release"]["steps"][-1]["env"]["JOB"] == "${{ matrix.job }}"
    assert '--only "$JOB"' in jobs["release"]["steps"][-1]["run"]
    platforms = {
        entry["platform"]: entry["os"] for entry in jobs["tests"]["strategy"]["matrix"]["include"]
    }
    assert set(platforms) == {"linux-x86_64", "linux-aarch64", "macos-arm64", "windows-x86_64"}
    verdict = jobs["verdict"]
    assert verdict["if"] == "always()" and set(verdict["needs"]) == {"tests", "release"}
    assert "= success" in verdict["steps"][0]["run"]


def _release_check(logs: pathlib.Path, *jobs: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(RELEASE_CHECK), "--logs", str(logs)]
    command += ["--only", *(job.split("=")[0] for job in jobs)]
    for job in jobs:
        command += ["--job", job]
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.req("REQ-TEST-019")
def test_release_check_fails_when_a_job_is_skipped(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: no job may be ignored: one that reports SKIPPED fails the run even when
    it exits 0 (as the audit does offline), as does one that fails; one line per job."""
    py = sys.executable
    run = _release_check(
        tmp_path,
        f"ok={py} -c \"print('all good')\"",
        f"offline={py} -c \"print('audit: SKIPPED: no advisory database')\"",
        f'broken={py} -c "raise SystemExit(3)"',
    )
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stdout
    assert any(line.startswith("release-check: ok: PASS") for line in lines)
    assert any(line.startswith("release-check: offline: SKIPPED") for line in lines)
    assert any(line.startswith("release-check: broken: FAIL (exit 3)") for line in lines)
    assert lines[-1].startswith("release-check: NO-GO: offline, broken did not pass")
    assert (tmp_path / "offline.log").read_text().startswith("audit: SKIPPED")


@pytest.mark.req("REQ-TEST-019")
def test_release_check_passes_only_when_every_job_passed(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-019: GO when every job ran and passed."""
    run = _release_check(tmp_path, f"one={sys.executable} -c pass", f"two={sys.executable} -c pass")
    assert run.returncode == 0, run.stdout
    assert run.stdout.splitlines()[-1] == "release-check: GO: every job passed"


def _release_check_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_check", RELEASE_CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


STUB_DIST = """import os, pathlib, sys
pathlib.Path(sys.argv[0]).with_name("called").write_text(
    " ".join(sys.argv[1:]) + "|" + os.environ["SOURCE_DATE_EPOCH"] + "|" + os.getcwd()
)
raise SystemExit(int(os.environ.get("STUB_DIST_EXIT", "0")))
"""


@pytest.mark.req("REQ-TEST-019")
def test_the_reproducibility_job_is_the_release_build_checked_at_the_commit_time(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """REQ-TEST-019: the job runs tools/dist.py --check-reproducible (the build `make dist`
    ships) in the exported tree with SOURCE_DATE_EPOCH at the commit's time, and fails when
    that check fails."""
    release_check = _release_check_module()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "dist.py").write_text(STUB_DIST, encoding="utf-8")
    commit_time = subprocess.run(
        ["git", "log", "-1", "--format=%ct"],  # noqa: S607
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert release_check.reproducibility(source=tmp_path) == 0
    called = (tmp_path / "tools" / "called").read_text(encoding="utf-8")
    assert called == f"--check-reproducible|{commit_time}|{tmp_path}"
    assert "wheel and sdist byte-identical" in capsys.readouterr().out
    monkeypatch.setenv("STUB_DIST_EXIT", "1")
    assert release_check.reproducibility(source=tmp_path) == 1
    assert "wheel and sdist NOT reproducible" in capsys.readouterr().out


@pytest.mark.req("REQ-TEST-019")
def test_the_image_job_says_why_it_is_skipped_and_that_is_a_no_go(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REQ-TEST-019: the image job runs the image's reproducibility check where the commit has
    one and the machine can build it; otherwise it reports SKIPPED with the reason, and the
    release check counts SKIPPED as NO-GO."""
    release_check = _release_check_module()
    (tmp_path / "Makefile").write_text("image:\n\ttrue\n", encoding="utf-8")
    assert release_check.image_command(tmp_path) is None
    assert release_check.image_reproducibility(tmp_path) == 0
    assert "image: SKIPPED: this commit has no image reproducibility check" in (
        capsys.readouterr().out
    )
    (tmp_path / "Makefile").write_text("image:\n\ttrue\nimage-repro:\n\ttrue\n")
    assert release_check.image_command(tmp_path) == ["make", "image-repro"]
    assert release_check.image_command() == ["make", "image-repro"]  # this tree has the target
    # The job itself, against the stand-in target: it builds only as root with the tools.
    assert release_check.image_reproducibility(tmp_path) == 0
    out = capsys.readouterr().out
    can_build = os.geteuid() == 0 and shutil.which("mmdebstrap") and shutil.which("umoci")
    if can_build:
        assert "image: byte-identical (make image-repro)" in out, out
    else:
        assert "image: SKIPPED: the image build needs" in out, out
    (tmp_path / "Makefile").write_text("image:\n\ttrue\n")
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "image.py").write_text("# --check-reproducible builds twice\n")
    assert release_check.image_command(tmp_path)[-1] == "--check-reproducible"
