"""The command line: serve, check, --version (REQ-OPS-001).

Exit codes: 0 success, 1 configuration error, 2 usage error. `serve` writes
nothing to standard output but MCP messages; diagnostics are JSON lines on
standard error. What each command does is in `rypsok.commands`, imported only
once the arguments are parsed: `--version` and a usage error answer without
loading the service stack (about half a second of imports; issue 14 item 3).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rypsok import __version__


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rypsok", description="Headless meta-search and page fetching for AI agents (MCP)."
    )
    parser.add_argument("--version", action="version", version=f"rypsok {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser("serve", help="serve MCP (stdio by default)")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    serve.add_argument("--config", metavar="PATH", help="TOML file (else $RYPSOK_CONFIG)")
    check = commands.add_parser("check", help="validate the configuration and exit")
    check.add_argument("--config", metavar="PATH", help="TOML file (else $RYPSOK_CONFIG)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from rypsok import commands  # noqa: PLC0415 (after the arguments: see above)

    return commands.run(
        args.command, config_path=args.config, transport=getattr(args, "transport", "stdio")
    )


if __name__ == "__main__":
    sys.exit(main())
