"""`rypsok --version` and usage errors answer without the service stack (REQ-OPS-001)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rypsok import __version__

# Runs the command line in a child and reports which heavy modules it loaded.
_PROBE = """
import json, sys
from rypsok.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit_:
    code = exit_.code
heavy = ("rypsok.commands", "rypsok.core.services", "rypsok.core.config", "mcp", "pydantic")
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def _probe(*argv: str) -> tuple[dict[str, object], str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    report: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return report, done.stdout + done.stderr


@pytest.mark.req("REQ-OPS-001")
def test_version_answers_without_loading_the_service_stack() -> None:
    """REQ-OPS-001: --version prints the version, exits 0, and imports no service module."""
    report, output = _probe("--version")
    assert report == {"code": 0, "loaded": []}
    assert f"rypsok {__version__}" in output


@pytest.mark.req("REQ-OPS-001")
def test_usage_error_exits_2_without_loading_the_service_stack() -> None:
    """REQ-OPS-001: an unknown command is a usage error (exit 2) before any service import."""
    report, output = _probe("serve", "--transport", "carrier-pigeon")
    assert report == {"code": 2, "loaded": []}
    assert "invalid choice" in output
