"""The event loop `rypsok serve` runs on, chosen by `RYPSOK_EVENT_LOOP`.

`auto` (the default) is uvloop where it is installed, else asyncio's own loop;
`asyncio` and `uvloop` ask for one. uvloop serves about 15 % more calls per
second over HTTP at one engine (docs/performance.md §23.1), and the answers'
bytes are the same on both loops (tests/mcp/test_event_loop.py). It is not
built for Windows, where `auto` is asyncio's Proactor loop.

The value is read once, by `check` and `serve` before anything is built, so a
misspelt one is refused like a configuration key: exit 1 and one
`configuration_refused` line naming the variable.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from typing import TYPE_CHECKING

from rypsok.core.config_base import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

EVENT_LOOP_ENV = "RYPSOK_EVENT_LOOP"
AUTO, ASYNCIO, UVLOOP = "auto", "asyncio", "uvloop"
CHOICES = (AUTO, ASYNCIO, UVLOOP)


def uvloop_installed() -> bool:
    # find_spec, not an import: `check` on asyncio never pays uvloop's import.
    return importlib.util.find_spec(UVLOOP) is not None


def chosen_loop(environ: Mapping[str, str] | None = None) -> str:
    """`asyncio` or `uvloop`, as the environment asks; ConfigError naming the variable."""
    asked = (os.environ if environ is None else environ).get(EVENT_LOOP_ENV) or AUTO
    if asked not in CHOICES:
        choices = ", ".join(CHOICES)
        raise ConfigError(f"{EVENT_LOOP_ENV}={asked!r} is not one of {choices}")
    if asked == AUTO:
        return UVLOOP if uvloop_installed() else ASYNCIO
    if asked == UVLOOP and not uvloop_installed():
        raise ConfigError(f"{EVENT_LOOP_ENV}=uvloop but uvloop is not installed")
    return asked


def backend_options(loop: str) -> dict[str, object]:
    """The options for `anyio.run` that start `loop` (anyio imports uvloop itself)."""
    return {"use_uvloop": True} if loop == UVLOOP else {}


def running_loop() -> str:
    """The loop this coroutine runs on, by its class: what ran, not what was asked."""
    module = type(asyncio.get_running_loop()).__module__
    return UVLOOP if module.split(".")[0] == UVLOOP else ASYNCIO
