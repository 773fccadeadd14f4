"""The CI gate itself: layer contracts, the print ban, the checks `make test` runs."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(sys.executable).parent
PROTOCOL_PACKAGES = ("mcp", "mcp_types", "starlette", "uvicorn", "sse_starlette")


def imported_modules(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.req("REQ-ARCH-005")
def test_core_imports_no_protocol_or_transport_library() -> None:
    """REQ-ARCH-005: no module of rypsok.core imports an MCP SDK or transport library."""
    offenders = []
    for path in (ROOT / "src" / "rypsok" / "core").rglob("*.py"):
        for name in imported_modules(path):
            if name.split(".")[0] in PROTOCOL_PACKAGES:
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert not offenders, offenders


@pytest.mark.req("REQ-ARCH-005", "REQ-MAIN-002", "REQ-TEST-012")
def test_import_linter_contracts_hold() -> None:
    """REQ-ARCH-005, REQ-MAIN-002: the layer contracts that `make test` enforces are kept."""
    run = subprocess.run(
        [str(BIN / "lint-imports"), "--no-cache"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:]
    assert "3 kept, 0 broken" in run.stdout


@pytest.mark.req("REQ-TEST-012")
def test_print_in_project_code_fails_the_lint(tmp_path: pathlib.Path) -> None:
    """REQ-TEST-012: the lint forbids printing to standard output in project code."""
    offender = tmp_path / "offender.py"
    offender.write_text('print("hello")\n', encoding="utf-8")
    run = subprocess.run(
        [str(BIN / "ruff"), "check", "--config", str(ROOT / "pyproject.toml"), str(offender)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 1 and "T201" in run.stdout


@pytest.mark.req("REQ-TEST-012", "REQ-SEC-020")
def test_make_test_runs_every_check_of_the_gate() -> None:
    """REQ-TEST-012, REQ-SEC-020: formatting, lints, types, layers, tests, licenses, audit."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^test: (.*)$", makefile, re.MULTILINE)
    assert target is not None
    assert target.group(1).split() == ["lint", "typecheck", "layers", "unit", "licenses", "audit"]
    for command in ("ruff format --check", "ruff check", "mypy", "lint-imports", "pytest",
                    "pip-licenses", "tools/audit.py"):  # fmt: skip
        assert command in makefile, command
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make test" in ci


def license_check(extra_path: pathlib.Path | None) -> subprocess.CompletedProcess[str]:
    """The Makefile's license rule, run as `make licenses` runs it."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    rule = re.search(r'pip-licenses (--partial-match --fail-on "[^"]+")', makefile)
    assert rule is not None
    env = {"PATH": str(BIN)}
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    command = f"{BIN / 'pip-licenses'} {rule.group(1)}"
    return subprocess.run(  # noqa: S602 (the rule is read verbatim from our own Makefile)
        command, shell=True, capture_output=True, text=True, timeout=120, check=False, env=env
    )


@pytest.mark.req("REQ-SEC-020")
@pytest.mark.parametrize("license_name", ["GPL-3.0-only", "AGPL-3.0-or-later", "LGPL-2.1"])
def test_license_check_fails_on_a_gpl_dependency(tmp_path: pathlib.Path, license_name: str) -> None:
    """REQ-SEC-020: a GPL, AGPL or LGPL dependency fails the license check; ours pass."""
    dist = tmp_path / "copyleft_probe-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: copyleft-probe\nVersion: 1.0\nLicense: {license_name}\n",
        encoding="utf-8",
    )
    assert license_check(tmp_path).returncode != 0
    assert license_check(None).returncode == 0
