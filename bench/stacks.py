"""`python -m bench.stacks FILE [N]`: a py-spy raw (collapsed) profile summed per frame.

Prints the total samples, then the N frames (default 40) with the most
inclusive samples (the frame anywhere on the stack) and the most self
samples (the frame on top), each as a share of all samples. Frames are
`function (file)` with the line number dropped, so one function counts once.
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


def main(argv: list[str]) -> int:
    with open(argv[0], encoding="utf-8") as raw:
        lines = raw.readlines()
    sys.stdout.write(summarise(lines, int(argv[1]) if len(argv) > 1 else 40) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
