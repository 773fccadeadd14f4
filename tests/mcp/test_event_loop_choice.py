"""Which loop RYPSOK_EVENT_LOOP asks for (rypsok.core.event_loop), without a process."""

from __future__ import annotations

import anyio
import pytest

from rypsok.core import event_loop
from rypsok.core.config import ConfigError
from rypsok.core.event_loop import EVENT_LOOP_ENV, backend_options, chosen_loop


@pytest.mark.req("REQ-CFG-005")
@pytest.mark.parametrize("installed", [True, False])
def test_auto_and_unset_are_uvloop_only_where_it_is_installed(
    monkeypatch: pytest.MonkeyPatch, installed: bool
) -> None:
    """REQ-CFG-005: auto (or unset, or empty) is uvloop where installed, else asyncio."""
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: installed)
    expected = "uvloop" if installed else "asyncio"
    for environ in ({}, {EVENT_LOOP_ENV: ""}, {EVENT_LOOP_ENV: "auto"}):
        assert chosen_loop(environ) == expected
    assert chosen_loop({EVENT_LOOP_ENV: "asyncio"}) == "asyncio"


@pytest.mark.req("REQ-CFG-005")
def test_uvloop_asked_where_it_is_missing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CFG-005: asking for a loop that is not installed is refused, naming the variable."""
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: False)
    with pytest.raises(
        ConfigError, match=r"^RYPSOK_EVENT_LOOP=uvloop but uvloop is not installed$"
    ):
        chosen_loop({EVENT_LOOP_ENV: "uvloop"})


@pytest.mark.req("REQ-CFG-005")
@pytest.mark.parametrize("value", ["UVLOOP", " asyncio", "trio", "uvlop"])
def test_any_other_value_is_refused_naming_the_variable_and_the_choices(value: str) -> None:
    """REQ-CFG-005: values are exact; anything else names the variable and what it accepts."""
    with pytest.raises(ConfigError) as refused:
        chosen_loop({EVENT_LOOP_ENV: value})
    assert str(refused.value) == f"RYPSOK_EVENT_LOOP={value!r} is not one of auto, asyncio, uvloop"


def test_backend_options_start_the_loop_that_running_loop_names() -> None:
    """anyio's options for each loop start it, and `running_loop` tells them apart."""

    async def name() -> str:
        return event_loop.running_loop()

    assert backend_options("asyncio") == {}
    assert anyio.run(name, backend_options=backend_options("asyncio")) == "asyncio"
    pytest.importorskip("uvloop")
    assert anyio.run(name, backend_options=backend_options("uvloop")) == "uvloop"
