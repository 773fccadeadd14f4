"""REQ-MCP-008 on the production tool list, as an MCP client receives it.

The budget counts what a host puts in a model's context: each tool's name,
description and input schema, and the server instructions. They are read
here from a real session with the services `serve` builds, for the default
configuration and for the largest one the configuration admits (every
category served, every admitted language as an enumeration value).
"""

from __future__ import annotations

import itertools
import json
import string
from typing import Any

import pytest
from mcp import Client

from rypsok.core import limits
from rypsok.core.config import LANGUAGES_MAX, ConfigError
from rypsok.core.services import Services
from rypsok.mcp.server import build_server
from tests.support import config_from

ALL_CATEGORIES = ["general", "news", "science", "code"]
# More two-letter codes than ISO 639-1 has: the schema may not grow beyond this.
LARGEST_LANGUAGES = ["".join(p) for p in itertools.product(string.ascii_lowercase, repeat=2)][
    :LANGUAGES_MAX
]

CONFIGS: dict[str, dict[str, Any]] = {
    "default": {},
    "largest": {"search": {"languages": LARGEST_LANGUAGES, "default_language": "aa"}},
}


async def listed(data: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The tools (as JSON) and the instructions a client receives from this configuration."""
    async with Client(build_server(Services(config_from(data)))) as client:
        tools = (await client.list_tools()).tools
        instructions = client.instructions or ""
    return [
        t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools
    ], instructions


def budget_size(tools: list[dict[str, Any]], instructions: str) -> int:
    """LIM-I1: compact JSON of names, descriptions and input schemas, plus the instructions."""
    parts = [
        {"name": t["name"], "description": t["description"], "inputSchema": t["inputSchema"]}
        for t in tools
    ]
    return len(json.dumps(parts, separators=(",", ":"), ensure_ascii=False)) + len(instructions)


@pytest.mark.req("REQ-MCP-008")
@pytest.mark.parametrize("name", CONFIGS)
async def test_production_tool_definitions_fit_the_budget(name: str) -> None:
    """REQ-MCP-008: the listed tools and the instructions stay within LIM-I1."""
    tools, instructions = await listed(CONFIGS[name])
    assert [t["name"] for t in tools] == ["web_search", "web_fetch", "engine_status"]
    search = tools[0]["inputSchema"]["properties"]
    assert search["category"]["enum"] == ALL_CATEGORIES  # every category is served
    assert instructions, "the server sends instructions"
    size = budget_size(tools, instructions)
    assert size <= limits.TOOL_DEFINITIONS_MAX_CHARS, size
    if name == "largest":
        assert len(search["language"]["enum"]) == LANGUAGES_MAX


@pytest.mark.req("REQ-MCP-008")
async def test_production_input_schemas_are_flat_and_small() -> None:
    """REQ-MCP-008: at most LIM-I2 parameters per tool, flat primitives and enumerations."""
    tools, _ = await listed(CONFIGS["largest"])
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert len(schema["properties"]) <= limits.PARAMETERS_PER_TOOL
        for prop in schema["properties"].values():
            assert prop["type"] in limits.INPUT_SCHEMA_TYPES
            assert set(prop) <= {"type", "description", "enum", "default", "minimum",
                                 "maximum", "maxLength"}  # fmt: skip
            assert all(isinstance(v, str) for v in prop.get("enum", []))


@pytest.mark.req("REQ-MCP-008", "REQ-CFG-005")
def test_configuration_cannot_grow_the_schema_past_the_bound() -> None:
    """REQ-MCP-008: more languages than the bound, or a repeated one, is refused at start."""
    extra = [*LARGEST_LANGUAGES, "zz"]
    for languages in (extra, ["en", "de", "en"]):
        with pytest.raises(ConfigError, match=r"search\.languages"):
            config_from({"search": {"languages": languages}})
