"""Which loop `[runtime] event_loop` asks for (rypsok.core.event_loop), without a process."""

from __future__ import annotations

import anyio
import pytest

from rypsok.core import event_loop
from rypsok.core.config import ConfigError
from rypsok.core.event_loop import backend_options, chosen_loop
from tests.support import config_from


@pytest.mark.req("REQ-CFG-005", "REQ-CFG-001")
@pytest.mark.parametrize("installed", [True, False])
def test_auto_and_unset_are_uvloop_only_where_it_is_installed(
    monkeypatch: pytest.MonkeyPatch, installed: bool
) -> None:
    """REQ-CFG-005, REQ-CFG-001: the file key, unset or auto, is uvloop where installed."""
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: installed)
    expected = "uvloop" if installed else "asyncio"
    tables: list[dict[str, dict[str, str]]] = [
        {},
        {"runtime": {}},
        {"runtime": {"event_loop": "auto"}},
    ]
    for data in tables:
        assert chosen_loop(config_from(data).runtime.event_loop) == expected
    assert chosen_loop(config_from({"runtime": {"event_loop": "asyncio"}}).runtime.event_loop) == (
        "asyncio"
    )


@pytest.mark.req("REQ-CFG-005")
def test_uvloop_asked_where_it_is_missing_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-CFG-005: asking for a loop that is not installed is refused, naming the key."""
    monkeypatch.setattr(event_loop, "uvloop_installed", lambda: False)
    with pytest.raises(
        ConfigError, match=r"^runtime\.event_loop = 'uvloop' but uvloop is not installed$"
    ):
        chosen_loop("uvloop")


@pytest.mark.req("REQ-CFG-005")
@pytest.mark.parametrize("value", ["UVLOOP", " asyncio", "trio", "uvlop", ""])
def test_any_other_value_is_refused_naming_the_key_and_the_choices(value: str) -> None:
    """REQ-CFG-005: values are exact; the schema names the key and what it accepts."""
    with pytest.raises(ConfigError) as refused:
        config_from({"runtime": {"event_loop": value}})
    assert str(refused.value) == (
        "key 'runtime.event_loop': must be one of 'auto', 'asyncio' or 'uvloop'"
    )
    with pytest.raises(ConfigError) as direct:
        chosen_loop(value)
    assert (
        str(direct.value) == f"runtime.event_loop = {value!r} is not one of auto, asyncio, uvloop"
    )


def test_backend_options_start_the_loop_that_running_loop_names() -> None:
    """anyio's options for each loop start it, and `running_loop` tells them apart."""

    async def name() -> str:
        return event_loop.running_loop()

    assert backend_options("asyncio") == {}
    assert anyio.run(name, backend_options=backend_options("asyncio")) == "asyncio"
    pytest.importorskip("uvloop")
    assert anyio.run(name, backend_options=backend_options("uvloop")) == "uvloop"
