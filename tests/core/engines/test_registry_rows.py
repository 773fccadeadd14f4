"""The registry's rows against the driver classes, and what serving imports (issue 14 item 3).

A process imports the driver modules of the engines that can run only; the
others are judged from their rows in `registry.ENGINES`. These tests hold
every row against its driver class, every state read from the rows against
the driver's own reading, and engine_status against the list every driver
would give.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from rypsok.core.engines import registry
from rypsok.core.engines.base import Driver
from rypsok.core.services import Services, engine_states
from tests.support import call_tool, config_from

KEY_ENV = "RYPSOK_TEST_ROWS_KEY"


@pytest.mark.req("REQ-ENG-004", "REQ-MAIN-004")
def test_each_row_names_its_driver_and_agrees_with_the_class() -> None:
    """REQ-ENG-004, REQ-MAIN-004: a row's flags and model are the driver class's own."""
    for row in registry.ENGINES:
        cls = registry.driver_class(row.id)
        assert cls.__module__ == row.module == f"rypsok.core.engines.{row.id}"
        assert cls.id == row.id
        assert cls.default_enabled == row.default_enabled, row.id
        assert cls.scraping == row.scraping, row.id
        assert cls.requires_key == ("key" in row.needs), row.id
        assert cls.requires_contact == ("contact" in row.needs), row.id
        assert cls.options_model is row.options, row.id
    assert [cls.id for cls in registry.DRIVER_CLASSES] == [row.id for row in registry.ENGINES]
    assert registry.known_ids() == set(registry.driver_classes())
    with pytest.raises(AttributeError, match="NO_SUCH_NAME"):
        registry.NO_SUCH_NAME  # noqa: B018 (the module's __getattr__ must refuse other names)


def _driver_state(driver: Driver, enabled: bool) -> str:
    """What the states were before the rows: read from an instance of every driver."""
    if not enabled:
        return "disabled"
    if driver.active:
        return "active"
    if driver.requires_key and driver.settings.api_key is None:
        return "inactive_no_key"
    if driver.requires_contact and not driver.settings.contact:
        return "inactive_no_contact"
    return "inactive_no_endpoint"


def _tables() -> list[dict[str, Any]]:
    """Each combination of `enabled`, a key that resolves or not, and an endpoint."""
    enabled: list[dict[str, Any]] = [{}, {"enabled": True}, {"enabled": False}]
    keys: list[dict[str, Any]] = [
        {},
        {"api_key": {"env": KEY_ENV}},
        {"api_key": {"env": KEY_ENV + "_UNSET"}},
    ]
    endpoints: list[dict[str, Any]] = [{}, {"endpoint": "https://search.example.org/api"}]
    return [{**a, **b, **c} for a, b, c in itertools.product(enabled, keys, endpoints)]


@pytest.mark.req("REQ-OPS-003", "REQ-CFG-004")
@pytest.mark.parametrize("contact", [None, "ops@example.org"])
def test_states_read_from_the_rows_equal_the_drivers_own(
    contact: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-OPS-003: for every engine and every table, the state the rows give (no driver
    imported) is the one an instance of its driver gives: disabled, active, or why not."""
    monkeypatch.setenv(KEY_ENV, "k" * 40)
    monkeypatch.delenv(KEY_ENV + "_UNSET", raising=False)
    operator = {"operator": {"contact": contact}} if contact else {}
    seen: set[str] = set()
    for table in _tables():
        config = config_from(
            {"scraping": {"enabled": True}, **operator,
             "engines": {row.id: table for row in registry.ENGINES}}
        )  # fmt: skip
        expected = [(d.id, _driver_state(d, on)) for d, on in registry.configured_engines(config)]
        assert engine_states(config) == expected, table
        seen |= {state for _, state in expected}
    assert seen >= {"active", "disabled", "inactive_no_key", "inactive_no_endpoint"}


@pytest.mark.req("REQ-STATUS-001", "REQ-ENG-004")
@pytest.mark.parametrize(
    "data",
    [
        {},
        {
            "search": {"preference": ["brave", "arxiv"]},
            "engines": {"brave": {"api_key": {"env": KEY_ENV}}},
        },
        {"operator": {"contact": "ops@example.org"}, "engines": {"wikipedia": {"enabled": False}}},
    ],
)
async def test_engine_status_lists_every_engine_as_every_driver_would(
    data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """REQ-STATUS-001: through an MCP session, engine_status lists every registered engine
    in preference order; those that can run are closed, every other one disabled."""
    monkeypatch.setenv(KEY_ENV, "k" * 40)
    config = config_from(data)
    services = Services(config)
    payload, _ = await call_tool(services, "engine_status", {})
    await services.aclose()
    expected = [
        (d.id, "closed" if on and d.active else "disabled")
        for d, on in registry.configured_engines(config)
    ]
    assert [(e["id"], e["state"]) for e in payload["engines"]] == expected
    assert all(e["median_latency_ms"] is None for e in payload["engines"])


_SERVE_AND_LIST = textwrap.dedent(
    """
    import json, sys
    import anyio
    from rypsok.core.engines import registry
    from rypsok.core.services import Services
    from tests.support import call_tool, config_from

    async def main() -> None:
        off = {row.id: {"enabled": False} for row in registry.ENGINES}
        config = config_from({"engines": {**off, "wikipedia": {}, "github": {}}})
        services = Services(config)
        payload, _ = await call_tool(services, "engine_status", {})
        await services.aclose()
        drivers = sorted(r.id for r in registry.ENGINES if r.module in sys.modules)
        print(json.dumps({"drivers": drivers, "engines": payload["engines"]}))

    anyio.run(main)
    """
)


@pytest.mark.req("REQ-ENG-004", "REQ-STATUS-001")
def test_a_process_imports_the_drivers_of_the_engines_that_run_only() -> None:
    """REQ-ENG-004: in a fresh interpreter, services with two engines enabled import those
    two driver modules and no other, and engine_status still lists all of them."""
    done = subprocess.run(
        [sys.executable, "-c", _SERVE_AND_LIST], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout.splitlines()[-1])
    assert shown["drivers"] == ["github", "wikipedia"]
    states = {e["id"]: e["state"] for e in shown["engines"]}
    assert list(states) == [row.id for row in registry.ENGINES]
    assert {k for k, v in states.items() if v != "disabled"} == {"github", "wikipedia"}
