"""The engines' own `[engines.<id>]` settings: the typed part of their configuration entries.

An engine whose table takes keys beyond the common ones (`enabled`,
`endpoint`, `api_key`, `min_interval_ms`, `max_concurrency`) has its model
here rather than in its driver module, so the configuration can be validated
without importing any driver (issue 14 item 3; the registry's docstring says
why). Each driver names its model as `options_model` and reads it with
`typed_options`; the registry's row names the same class, and a test checks
the two agree.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import Field, field_validator

from rypsok.core.config import EngineConfig

# An address NCBI accepts as `email`; pubmed.py also reads the operator contact with it.
EMAIL: Final = re.compile(r"^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+$")
_TOOL: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class DuckDuckGoConfig(EngineConfig):
    """`[engines.duckduckgo]`: the common keys plus which of the two pages to read."""

    variant: Literal["html", "lite"] = Field(
        default="html", description="duckduckgo: the page read, html or the lite fallback"
    )


class ExaConfig(EngineConfig):
    """`[engines.exa]`: the common keys plus Exa's search type."""

    search_type: Literal["auto", "fast", "instant"] = Field(
        default="auto", description="exa: search type (`type` of the request)"
    )


class PubMedConfig(EngineConfig):
    """`[engines.pubmed]`: the common keys plus NCBI's registration parameters."""

    tool: str = Field(default="rypsok", description="pubmed: the `tool` name registered with NCBI")
    email: str | None = Field(
        default=None,
        description="pubmed: the `email` registered with NCBI (default: [operator] contact "
        "when it is an e-mail address)",
    )

    @field_validator("tool")
    @classmethod
    def _tool_is_a_name(cls, value: str) -> str:
        if not _TOOL.match(value):
            raise ValueError("must be 1-64 letters, digits, '.', '_' or '-'")
        return value

    @field_validator("email")
    @classmethod
    def _email_is_an_address(cls, value: str | None) -> str | None:
        if value is not None and not EMAIL.match(value):
            raise ValueError("must be an e-mail address")
        return value


class TavilyConfig(EngineConfig):
    """`[engines.tavily]`: the common keys plus the search depth Tavily bills by."""

    search_depth: Literal["basic", "advanced"] = Field(
        default="basic", description="tavily: search depth (advanced costs two credits)"
    )
