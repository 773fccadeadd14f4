"""Issue 14 item 6: the outside benchmark still runs (a smoke run, no timing thresholds)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from tests.support import child_env

REPO = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.req("REQ-PERF-004")
def test_bench_e2e_quick_measures_every_call_over_stdio(tmp_path: pathlib.Path) -> None:
    """REQ-PERF-004: `python -m bench e2e --quick` drives rypsok over stdio to the end.

    Every call must answer ok with 10 results, reach all five real engines on the
    fake provider, and so yield an overhead figure; the figures themselves are not
    judged here (timing thresholds stay out of tests).
    """
    out = tmp_path / "e2e.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "e2e", "--quick", "--json", str(out)],
        cwd=REPO,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(out.read_text(encoding="utf-8"))["e2e"]
    assert figures["outcomes"] == {"ok": figures["calls"]}
    assert figures["attributed"] == figures["calls"]
    assert figures["results_returned_min"] == 10
    assert figures["overhead_ms"]["n"] == figures["calls"]
