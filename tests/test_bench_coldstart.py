"""The cold-start benchmark's own counters (issue 14 item 3): what a start spent, from /proc."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import pytest
from bench.coldstart import COUNTERS, process_counters, rypsok_binary

# The child spends at least this much CPU, then sleeps at least this long, then answers.
_CPU_S = 0.2
_SLEEP_S = 0.3
_CHILD = (
    "import sys, time\n"
    f"while time.process_time() < {_CPU_S}: pass\n"
    f"time.sleep({_SLEEP_S})\n"
    "sys.stdout.write('ready\\n'); sys.stdout.flush(); sys.stdin.read()\n"
)


@pytest.mark.req("REQ-PERF-005")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_counters_split_a_start_into_cpu_and_blocked_time() -> None:
    """REQ-PERF-005: the counters tell CPU time from time spent blocked.

    A child that burns 0.2 s of CPU and then sleeps 0.3 s before it answers must
    read as at least that CPU and at least that blocked time, one thread, and
    the page faults and switches of a real process; fields read from the wrong
    place in /proc (or the CPU and the wait swapped) break one of these bounds.
    """
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        wall_ms = (time.monotonic() - started) * 1000
        counters = process_counters(child.pid, wall_ms)
    finally:
        child.communicate(b"")
    assert list(counters) == list(COUNTERS)
    assert counters["cpu ms"] >= _CPU_S * 1000 * 0.95
    assert counters["blocked ms"] >= _SLEEP_S * 1000 * 0.95
    # Blocked time is the rest of the wall time, so only what /proc counted can exceed it
    # (1 us of slack for the float arithmetic of the rest: a full run saw it exceed by 0.4 ns).
    assert counters["cpu ms"] + counters["run-queue wait ms"] <= wall_ms + 0.001
    assert counters["threads"] == 1
    assert counters["minor faults"] > 100  # an interpreter maps and touches pages
    assert counters["voluntary switches"] >= 1  # the sleep and the read give up the CPU


@pytest.mark.req("REQ-PERF-005")
def test_counters_of_a_process_that_is_gone_are_empty() -> None:
    """REQ-PERF-005: a start whose process has ended (or no /proc) yields no counters."""
    beyond_pid_max = 2**22 + 1  # Linux never hands out a pid above 2**22
    assert process_counters(beyond_pid_max, 1.0) == {}


@pytest.mark.req("REQ-PERF-005")
def test_the_started_rypsok_is_an_installed_copy_when_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PERF-005: BENCH_RYPSOK_BIN starts an installed rypsok, as the reference is."""
    monkeypatch.delenv("BENCH_RYPSOK_BIN", raising=False)
    assert rypsok_binary().name == "rypsok"
    assert rypsok_binary().parent == pathlib.Path(sys.executable).parent
    monkeypatch.setenv("BENCH_RYPSOK_BIN", "/opt/clean/bin/rypsok")
    assert str(rypsok_binary()) == "/opt/clean/bin/rypsok"
