"""The event loop `rypsok serve` runs on, chosen by `[runtime] event_loop`.

`auto` (the default) is uvloop where it is installed, else asyncio's own loop;
`asyncio` and `uvloop` ask for one. uvloop serves about 15 % more calls per
second over HTTP at one engine (docs/performance.md §23.1), and the answers'
bytes are the same on both loops (tests/mcp/test_event_loop.py). It is not
built for Windows, where `auto` is asyncio's Proactor loop.

The key is a file key like every operational setting (REQ-CFG-001): the schema
refuses a misspelt value, and `uvloop` where it is not installed is refused
here, by `check` and `serve` alike, before anything is built.
"""

from __future__ import annotations

import asyncio
import importlib.util

from rypsok.core.config_base import ConfigError

EVENT_LOOP_KEY = "runtime.event_loop"
AUTO, ASYNCIO, UVLOOP = "auto", "asyncio", "uvloop"
CHOICES = (AUTO, ASYNCIO, UVLOOP)


def uvloop_installed() -> bool:
    # find_spec, not an import: `check` on asyncio never pays uvloop's import.
    return importlib.util.find_spec(UVLOOP) is not None


def chosen_loop(asked: str) -> str:
    """`asyncio` or `uvloop` for the configured value; ConfigError naming the key."""
    if asked not in CHOICES:  # the schema's Literal refuses first; this guards other callers
        choices = ", ".join(CHOICES)
        raise ConfigError(f"{EVENT_LOOP_KEY} = {asked!r} is not one of {choices}")
    if asked == AUTO:
        return UVLOOP if uvloop_installed() else ASYNCIO
    if asked == UVLOOP and not uvloop_installed():
        raise ConfigError(f"{EVENT_LOOP_KEY} = 'uvloop' but uvloop is not installed")
    return asked


def backend_options(loop: str) -> dict[str, object]:
    """The options for `anyio.run` that start `loop` (anyio imports uvloop itself)."""
    return {"use_uvloop": True} if loop == UVLOOP else {}


def running_loop() -> str:
    """The loop this coroutine runs on, by its class: what ran, not what was asked."""
    module = type(asyncio.get_running_loop()).__module__
    return UVLOOP if module.split(".")[0] == UVLOOP else ASYNCIO
