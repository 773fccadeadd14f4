"""Regenerate the generated parts of docs/ (`make docs`).

docs/configuration.md and docs/limits.md hold generated tables between two
markers; tests fail when a table differs from the code it is generated from.
"""

from __future__ import annotations

import pathlib
import re

from rypsok.core.config_reference import reference_table
from rypsok.core.engines.registry import engine_models
from rypsok.core.limits_table import limits_table

BLOCK = re.compile(r"(<!-- BEGIN generated -->\n).*?(<!-- END generated -->)", re.DOTALL)
PAGES = {
    # Each engine's own typed settings are listed after the common keys.
    pathlib.Path("docs/configuration.md"): lambda: reference_table(engine_models()),
    pathlib.Path("docs/limits.md"): limits_table,
}


def main() -> None:
    for path, render in PAGES.items():
        page = path.read_text(encoding="utf-8")
        begin, end = "<!-- BEGIN generated -->\n", "<!-- END generated -->"
        fresh = BLOCK.sub(begin + render().replace("\\", "\\\\") + "\n" + end, page)
        path.write_text(fresh, encoding="utf-8")


if __name__ == "__main__":
    main()
