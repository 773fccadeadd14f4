"""`python -m bench.stacks FILE [N | --calls C]`: a py-spy raw (collapsed) profile, summed.

With N (default 40): the total samples, then the N frames with the most
inclusive samples (the frame anywhere on the stack) and the most self
samples (the frame on top), each as a share of all samples. Frames are
`function (file)` with the line number dropped, so one function counts once.

With `--calls C`: the busy samples (not waiting in `select` or in an idle
worker's `Condition.wait`) in the groups of docs/performance.md §12.2, each
stack counted in the first group one of its frames matches, as milliseconds
per call (one sample = 1 ms at `--rate 1000`) over C calls.
"""

from __future__ import annotations

import sys
from collections import Counter


def _frame(raw: str) -> str:
    name, _, rest = raw.partition(" (")
    where = rest.rsplit(":", 1)[0] if rest else ""
    for marker in ("site-packages/", "src/", "lib/python3.11/"):
        if marker in where:
            where = where.split(marker, 1)[1]
            break
    return f"{name} ({where})"


def summarise(lines: list[str], top: int) -> str:
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if f]
        total += count
        for frame in set(frames):
            inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
    out = [f"{total} samples"]
    for title, counter in (("inclusive", inclusive), ("self", own)):
        out.append(f"-- {title} --")
        out += [f"{n / total * 100:6.1f}%  {frame}" for frame, n in counter.most_common(top)]
    return "\n".join(out)


_IDLE = ("EpollSelector.select", "Condition.wait")
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("engine requests: egress, httpcore2, h11", ("EgressClient.", "rypsok/core/egress")),
    ("engine parse", ("Driver.parse", ".parse (rypsok/core/engines")),
    (
        "instruction check and cleaning of the hits",
        ("looks_like_instruction", "remove_invisible", "_cleaned", "_MarkupScanner"),
    ),
    ("URL normalisation", ("rypsok/core/search/urls",)),
    (
        "thread hand-off (worker threads, queue, notify)",
        ("run_sync_in_worker_thread", "Condition.notify", "Queue.put", "WorkerThread.run"),
    ),
    ("search pipeline, rest", ("SearchPipeline.",)),
    ("logging", ("rypsok/core/logs", "logging/")),
    ("rypsok Services", ("Services.", "build_server.<locals>.call_tool")),
    ("MCP SDK", ("mcp/", "mcp_types/", "pydantic")),
    ("stdio pipes and the event loop", ("asyncio/", "anyio/")),
)


def grouped(lines: list[str], calls: int) -> str:
    counts: Counter[str] = Counter()
    total = idle = 0
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        frames = [_frame(f) for f in stack.split(";") if f]
        if not frames or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        if frames[-1].startswith(_IDLE):
            idle += count
            continue
        label = next(
            (name for name, keys in _GROUPS if any(k in f for f in frames for k in keys)), "other"
        )
        counts[label] += count
    busy = total - idle
    out = [f"{total} samples, {idle} idle, busy {busy / calls:.1f} ms per call"]
    out += [
        f"{n / calls:6.2f} ms  {n / busy * 100:5.1f}%  {name}" for name, n in counts.most_common()
    ]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as raw:
        lines = raw.readlines()
    if len(argv) > 2 and argv[1] == "--calls":
        sys.stdout.write(grouped(lines, int(argv[2])) + "\n")
    else:
        sys.stdout.write(summarise(lines, int(argv[1]) if len(argv) > 1 else 40) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
