"""Typed per-engine settings and the engine states `rypsok check` reports (issue 11 items 2, 3)."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest

from rypsok.core.config import EngineConfig
from rypsok.core.config_reference import reference_table
from rypsok.core.engines.base import EngineSettings
from rypsok.core.engines.registry import DRIVER_CLASSES, engine_models
from rypsok.core.services import engine_categories, engine_states
from tests.support import config_from

ROOT = pathlib.Path(__file__).resolve().parents[3]
KEYED = ("openalex", "kagi", "tavily", "exa", "you", "marginalia")
NEW = ("crates", "npm", "dblp", "pubmed", *KEYED, "duckduckgo", "bing")
RECORD_SECTIONS = ("## Endpoint", "## Rate and concurrency", "## Failure signals")
RECORD_TOPICS = ("attribution", "user-agent", "language", "time range", "safe search", "stor")


@pytest.mark.req("REQ-CFG-001", "REQ-CFG-005")
def test_engine_settings_are_typed_models_and_the_reference_lists_them() -> None:
    """REQ-CFG-001: no `extra` dictionary; each engine's own keys are in docs/configuration.md."""
    assert "extra" not in {f.name for f in dataclasses.fields(EngineSettings)}
    for cls in DRIVER_CLASSES:
        assert issubclass(cls.options_model, EngineConfig)
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    table = reference_table(engine_models())
    assert table in page, "docs/configuration.md is stale: run `make docs`"
    for key in ("engines.pubmed.tool", "engines.pubmed.email", "engines.tavily.search_depth",
                "engines.exa.search_type", "scraping.enabled"):  # fmt: skip
        assert f"| {key} |" in table


@pytest.mark.req("REQ-CFG-004", "REQ-OPS-003", "REQ-ENG-008")
def test_check_states_keyed_engines_inactive_and_new_keyless_ones_by_their_rule() -> None:
    """REQ-CFG-004, REQ-OPS-003: keyed inactive without key; crates needs a contact; pubmed off."""
    states = dict(engine_states(config_from({})))
    assert all(states[engine] == "inactive_no_key" for engine in KEYED)
    assert states["npm"] == states["dblp"] == "active"
    assert states["crates"] == "inactive_no_contact"
    assert states["pubmed"] == "disabled"
    contact = dict(engine_states(config_from({"operator": {"contact": "ops@example.org"}})))
    assert contact["crates"] == "active"
    categories = engine_categories(config_from({}))
    assert categories["kagi"] == ["general", "news"] and categories["crates"] == ["code"]
    assert categories["openalex"] == ["science"]


@pytest.mark.req("REQ-CMP-001", "REQ-TEST-002")
@pytest.mark.parametrize("engine", NEW)
def test_each_new_engine_has_its_admission_record_and_success_fixture(engine: str) -> None:
    """REQ-CMP-001, REQ-TEST-002: docs/engines/<id>.md covers the record's topics; ok.* exists."""
    assert engine in {cls.id for cls in DRIVER_CLASSES}
    record = (ROOT / "docs" / "engines" / f"{engine}.md").read_text(encoding="utf-8")
    assert record.startswith(f"# Admission record: `{engine}`")
    assert all(section in record for section in RECORD_SECTIONS)
    assert all(topic in record.lower() for topic in RECORD_TOPICS), engine
    assert f"[`{engine}`]({engine}.md)" in (ROOT / "docs" / "engines" / "README.md").read_text(
        encoding="utf-8"
    ) or engine in ("duckduckgo", "bing")
    fixtures = ROOT / "tests" / "fixtures" / "engines" / engine
    assert [p.name for p in fixtures.glob("ok.*")], engine
