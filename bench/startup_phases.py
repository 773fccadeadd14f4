"""`python -m bench.startup_phases CONFIG`: where `rypsok serve` spends its start, in phases.

Run as a child of `bench.coldstart`. It repeats the steps of `rypsok serve`
up to the point where the server reads its first message, timing each, and
prints them as one JSON object of CLOCK_MONOTONIC times (shared with the
parent, which knows when it spawned the process).
"""

from __future__ import annotations

import time

STARTED = time.monotonic()

import json  # noqa: E402
import sys  # noqa: E402


def main() -> int:
    marks: dict[str, float] = {"main": STARTED}
    import rypsok.cli  # noqa: PLC0415, F401 (timed: what `rypsok serve` imports first)

    marks["import rypsok.cli"] = time.monotonic()
    import anyio  # noqa: PLC0415

    from rypsok.core import logs  # noqa: PLC0415
    from rypsok.core.services import Services, load_configuration  # noqa: PLC0415
    from rypsok.mcp.stdio import serve_stdio  # noqa: PLC0415

    marks["import serve modules"] = time.monotonic()
    logs.configure()
    config = load_configuration(sys.argv[1])
    marks["load configuration"] = time.monotonic()

    async def build() -> None:
        marks["event loop"] = time.monotonic()
        services = Services(config)
        marks["Services(config)"] = time.monotonic()
        from rypsok.mcp.server import build_server  # noqa: PLC0415

        build_server(services)
        marks["build_server"] = time.monotonic()
        await services.aclose()

    anyio.run(build)
    del serve_stdio
    sys.stdout.write(json.dumps(marks) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
