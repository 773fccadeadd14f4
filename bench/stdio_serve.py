"""`python -m bench.stdio_serve BASE_URL ENGINES`: rypsok's stdio server over bench engines.

The same path as `rypsok serve` (`Services`, `build_server`, `serve_stdio`,
JSON-line logs on stderr) except that the search pipeline queries bench
engines with no provider spacing, so the throughput over stdio measures
rypsok, not the admission records of the real providers.
"""

from __future__ import annotations

import sys

import anyio

from bench.common import bench_config
from bench.drivers import bench_drivers, services_with
from rypsok.core import logs
from rypsok.mcp.stdio import serve_stdio


def main(argv: list[str]) -> int:
    base_url, engines = argv[0], int(argv[1])
    logs.configure()
    services = services_with(bench_drivers(base_url, engines), bench_config())
    anyio.run(serve_stdio, services)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
