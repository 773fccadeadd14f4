"""Crashes found and not fixed yet, so that fuzzing can go on past them.

libFuzzer stops at the first crash: a target whose known crash is minutes
away would otherwise stop fuzzing there, every run, until the fix lands. Each
entry names the exception and the project function it comes from, and the
strict-xfail test that keeps it visible (tests/properties/test_fuzz_regressions.py).
`make fuzz` reports every hit of a known crash and goes on; the release checks
run with `--strict`, where a known crash is still a crash (REQ-SEC-023: a crash
is a No-Go for the release). The fix removes the entry and the xfail mark.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KnownCrash:
    target: str
    exception: type[BaseException]
    module_file: str  # path suffix of the project module the exception passes through
    function: str  # the project function it escapes from
    test: str  # the regression test that keeps it open

    def matches(self, exc: BaseException) -> bool:
        frames = traceback.extract_tb(exc.__traceback__)
        return isinstance(exc, self.exception) and any(
            frame.filename.endswith(self.module_file) and frame.name == self.function
            for frame in frames
        )


KNOWN: tuple[KnownCrash, ...] = ()  # FZ-1 and FZ-2 are fixed (docs/assurance.md)


def tolerating(target: str, run: Callable[[bytes], None]) -> Callable[[bytes], None]:
    """`run`, where the known crashes of `target` are reported once and let through."""
    known = [crash for crash in KNOWN if crash.target == target]
    if not known:
        return run
    reported: set[str] = set()

    def guarded(data: bytes) -> None:
        try:
            run(data)
        except BaseException as exc:
            crash = next((c for c in known if c.matches(exc)), None)
            if crash is None:
                raise
            if crash.test not in reported:
                reported.add(crash.test)
                sys.stderr.write(f"fuzz-known-crash: {crash.test}\n")
                sys.stderr.flush()

    return guarded
