"""The committed snapshot of the external contract (REQ-MAIN-006, REQ-MCP-006).

    python tools/contract_snapshot.py          # print the current definitions
    python tools/contract_snapshot.py --write  # rewrite the snapshot (`make contract-snapshot`)

The definitions are what a host is given: the tool list as the MCP server
lists it under the default configuration (names, descriptions, input and
output schemas, annotations), the server instructions, the fixed vocabulary
(outcomes, error kinds, notice codes, reasons) and the protocol revisions the
SDK serves. `tests/test_contract_history.py` fails when they differ from
tests/fixtures/contract/snapshot.json. `--write` refuses while a contract term
that was added or removed is not named, in backticks, in the topmost section
of CHANGELOG.md: the changelog entry comes first.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
from typing import Any

import anyio
from mcp import Client
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from rypsok.core import contract
from rypsok.core.config import parse_config
from rypsok.core.engines.registry import known_ids
from rypsok.core.services import Services
from rypsok.mcp.server import build_server

ROOT = pathlib.Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "tests" / "fixtures" / "contract" / "snapshot.json"
CHANGELOG = ROOT / "CHANGELOG.md"
VOCABULARIES = {
    "outcome": contract.Outcome,
    "error_kind": contract.ErrorKind,
    "notice_code": contract.NoticeCode,
    "denied_reason": contract.DeniedReason,
    "unavailable_reason": contract.UnavailableReason,
}


async def _listed_tools() -> list[dict[str, Any]]:
    services = Services(parse_config({"schema_version": 1}, known_ids()))
    try:
        async with Client(build_server(services)) as client:
            listed = await client.list_tools()
    finally:
        await services.aclose()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


def definitions() -> dict[str, Any]:
    """The contract as a host sees it, in a stable JSON-ready form."""
    return {
        "protocol_revisions": {
            "handshake": list(HANDSHAKE_PROTOCOL_VERSIONS),
            "handshake_free": list(MODERN_PROTOCOL_VERSIONS),
        },
        "instructions": contract.INSTRUCTIONS,
        "tools": anyio.run(_listed_tools),
        "vocabulary": {name: [term.value for term in enum] for name, enum in VOCABULARIES.items()},
    }


def _fields(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> list[str]:
    """Dotted paths of every property of an output schema, following $ref and arrays."""
    if "$ref" in schema:
        return _fields(defs[schema["$ref"].rsplit("/", 1)[1]], defs, prefix)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return [path for option in schema[key] for path in _fields(option, defs, prefix)]
    if schema.get("type") == "array":
        return _fields(schema.get("items", {}), defs, prefix)
    paths = []
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        paths += [path, *_fields(sub, defs, path)]
    return paths


def terms(defs: dict[str, Any]) -> set[str]:
    """Every name the contract gives a caller: tools, parameters, response fields, vocabulary."""
    found = set()
    for tool in defs["tools"]:
        name = tool["name"]
        found.add(f"tool {name}")
        found |= {f"parameter {name}.{p}" for p in tool["inputSchema"].get("properties", {})}
        output = tool.get("outputSchema", {})
        found |= {f"field {name}.{f}" for f in _fields(output, output.get("$defs", {}), "")}
    for vocabulary, values in defs["vocabulary"].items():
        found |= {f"{vocabulary} {value}" for value in values}
    return found


def named(term: str) -> str:
    """The word a changelog entry must show in backticks for a term: its last name."""
    return re.split(r"[ .]", term)[-1]


def top_section(changelog: str) -> str:
    sections = re.split(r"^## ", changelog, flags=re.MULTILINE)
    return sections[1] if len(sections) > 1 else ""


def unannounced(old: set[str], new: set[str], changelog_section: str) -> list[str]:
    """Terms added or removed whose name the changelog's top section does not show."""
    return sorted(t for t in old ^ new if f"`{named(t)}`" not in changelog_section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    current = definitions()
    text = json.dumps(current, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if not args.write:
        sys.stdout.write(text)
        return 0
    old = terms(json.loads(SNAPSHOT.read_text(encoding="utf-8"))) if SNAPSHOT.exists() else set()
    missing = unannounced(old, terms(current), top_section(CHANGELOG.read_text(encoding="utf-8")))
    if old and missing:
        sys.stderr.write(
            "contract-snapshot: describe these changes in the top section of CHANGELOG.md "
            "first (name each in backticks):\n" + "".join(f"  {t}\n" for t in missing)
        )
        return 1
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(text, encoding="utf-8")
    sys.stderr.write(f"contract-snapshot: wrote {SNAPSHOT.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
