"""The limits table as the project keeps it, rendered from `limits.py` itself.

docs/limits.md carries this table; a test fails when they differ, so the
documented defaults are the ones the code uses.
"""

from __future__ import annotations

import pathlib
import re

from rypsok.core import limits

_LINE = re.compile(r"^([A-Z_0-9]+): Final = .*?#\s*(LIM-[A-Z]\d+)(.*)$")


def limits_rows() -> list[tuple[str, str, str, str]]:
    """(LIM id, constant, value, note) for every constant that names a LIM id."""
    source = pathlib.Path(limits.__file__).read_text(encoding="utf-8")
    rows = []
    for line in source.splitlines():
        match = _LINE.match(line)
        if match:
            name, lim_id, note = match.groups()
            value = getattr(limits, name)
            rows.append((lim_id, name, repr(value), note.strip(" :")))
    return rows


def limits_table() -> str:
    lines = ["| id | constant | value | note |", "|---|---|---|---|"]
    for lim_id, name, value, note in limits_rows():
        lines.append(f"| {lim_id} | `{name}` | {value} | {note} |")
    return "\n".join(lines)
