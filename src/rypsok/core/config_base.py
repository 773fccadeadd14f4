"""The configuration's building blocks: its error, secrets, and the strict section base.

Shared by `rypsok.core.config` (the sections and the loader) and
`rypsok.core.config_network` (the sections of the network-facing features);
`rypsok.core.config` re-exports every name here.
"""

# Annotations are evaluated where written (no `from __future__ import annotations`):
# pydantic would otherwise evaluate each string annotation at class creation, a
# third of this module's import time (issue 14 item 3, cold start).

import os
import pathlib
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key."""


class Secret:
    """A resolved secret. Never shown by repr or str (REQ-SEC-020)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# TOML arrays arrive as lists; the sections are strict about every other type.
StrList = Annotated[tuple[str, ...], Field(strict=False)]
IntList = Annotated[tuple[int, ...], Field(strict=False)]


class Section(BaseModel):
    """A TOML table: unknown keys refused, strict types, frozen once loaded.

    `defer_build`: a section's validator is built when it is first used on its
    own; loading a file validates every section through `Config`'s validator,
    so most never build one (issue 14 item 3, cold start).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


class SecretRef(Section):
    """`{ env = "NAME" }` or `{ file = "path" }`: where the secret lives, not the secret."""

    env: str | None = None
    file: str | None = None

    def model_post_init(self, context: Any, /) -> None:
        if (self.env is None) == (self.file is None):
            raise ValueError('give exactly one of { env = "NAME" } or { file = "path" }')

    def resolve(self) -> Secret | None:
        """The secret, or None when the variable is unset or the file is missing."""
        if self.env is not None:
            value = os.environ.get(self.env)
            return Secret(value) if value else None
        try:
            value = pathlib.Path(str(self.file)).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return Secret(value) if value else None


def bounded(default: int, bounds: tuple[int, int], doc: str) -> Any:
    return Field(default=default, ge=bounds[0], le=bounds[1], description=doc)


def inline_credential_problem(url: str) -> str | None:
    """Why a configured URL holds a credential written inline (REQ-CFG-004), or None.

    The credential check of queries and fetched URLs judges it (`?api_key=…`,
    `?token=<generated>`, a provider's key format), so a secret pasted into a URL
    key is refused as one written as a value would be. Imported when a URL is
    configured: without one, `check` does not pay for compiling the rules.
    """
    from rypsok.core.privacy import find_credentials  # noqa: PLC0415

    findings = find_credentials(url)
    if not findings:
        return None
    return (
        f"holds what looks like a {findings[0].kind.value} at character {findings[0].start}: "
        "secrets are given by reference only ({ env = ... } or { file = ... }), never inline"
    )
