"""The console entry point: the allocator's environment first, then the command line.

glibc reads its malloc settings once, when a process starts; Python cannot
change them afterwards without calling into libc, which rypsok does not do.
With its defaults glibc keeps most of what a large fetch freed: it raises its
mmap threshold to the largest block freed, so the next 5 MiB body or 20 MiB
string comes from a heap that then fragments, and each worker thread gets an
arena of its own (docs/performance.md, §14.2). So `rypsok serve` executes
itself again, once, first thing, with `ALLOCATOR` added to its environment:
the same process (pid, file descriptors, arguments), now under the settings
the memory ceiling of REQ-PERF-003 was measured with.

It does not when the environment already names any `MALLOC_` setting or
`GLIBC_TUNABLES`: the operator's choice wins, and the container image and
the documented systemd unit set `ALLOCATOR` themselves, so they never pay the
second start (15-25 ms, measured in §14.2). Nor on another C library or
system, nor for `check` and `--version`, which hold no pages.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing`: this module runs before the exec, so it imports nothing
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

# Fixed thresholds also switch off glibc's dynamic adjustment of both.
ALLOCATOR: Mapping[str, str] = {
    "MALLOC_ARENA_MAX": "2",  # worker threads share two arenas, not 8 per CPU
    # Blocks of 64 KiB and more, the body's read chunks among them, are mapped on their own
    # and unmapped when freed, so chunks of calls in flight cannot fragment the heap.
    "MALLOC_MMAP_THRESHOLD_": "65536",
    "MALLOC_TRIM_THRESHOLD_": "131072",  # free heap tops above 128 KiB go back to the system
}


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return False


def wants_allocator(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether this command should start again under `ALLOCATOR`."""
    if list(argv[1:2]) != ["serve"] or not sys.platform.startswith("linux"):
        return False
    if any(name.startswith("MALLOC_") or name == "GLIBC_TUNABLES" for name in environ):
        return False
    return _glibc()


def main() -> int:
    if wants_allocator(sys.argv, os.environ):
        try:  # noqa: SIM105 (contextlib is an import this module avoids)
            # The same interpreter and arguments: no shell, nothing from outside.
            os.execve(sys.executable, sys.orig_argv, {**os.environ, **ALLOCATOR})  # noqa: S606
        except OSError:
            pass  # serve with glibc's defaults rather than not at all
    from rypsok.cli import main as command_line  # noqa: PLC0415 (after the exec: imported once)

    return command_line()
