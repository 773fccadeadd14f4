"""The registry: engine ids to driver classes, written in code (REQ-ENG-004).

Configuration can only select and parameterise registered engines; an id with
no driver stops start-up (the configuration check uses `known_ids`). Adding
an engine is its driver module, its admission record and one line here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from rypsok.core.config import Config, EngineConfig
from rypsok.core.engines.arxiv import ArXiv
from rypsok.core.engines.base import Driver, EngineSettings
from rypsok.core.engines.bing import Bing
from rypsok.core.engines.brave import Brave
from rypsok.core.engines.crates import Crates
from rypsok.core.engines.crossref import Crossref
from rypsok.core.engines.dblp import Dblp
from rypsok.core.engines.duckduckgo import DuckDuckGo
from rypsok.core.engines.europepmc import EuropePmc
from rypsok.core.engines.exa import Exa
from rypsok.core.engines.gdelt import Gdelt
from rypsok.core.engines.github import GitHub
from rypsok.core.engines.hackernews import HackerNews
from rypsok.core.engines.kagi import Kagi
from rypsok.core.engines.marginalia import Marginalia
from rypsok.core.engines.mojeek import Mojeek
from rypsok.core.engines.npm import Npm
from rypsok.core.engines.openalex import OpenAlex
from rypsok.core.engines.pubmed import PubMed
from rypsok.core.engines.searxng import SearXNG
from rypsok.core.engines.stackexchange import StackExchange
from rypsok.core.engines.tavily import Tavily
from rypsok.core.engines.wikidata import Wikidata
from rypsok.core.engines.wikipedia import Wikipedia
from rypsok.core.engines.you import You

# Default preference order, most preferred first; within a category only the
# engines serving it count (docs/engines/README.md gives the per-category order).
# The keyed engines and SearXNG are inactive until the operator gives a key or
# an endpoint; `search.preference` puts them first where the operator wants.
DRIVER_CLASSES: tuple[type[Driver], ...] = (
    Wikipedia,
    Wikidata,
    Gdelt,
    StackExchange,
    GitHub,
    HackerNews,
    Npm,
    Crates,
    ArXiv,
    EuropePmc,
    Crossref,
    Dblp,
    PubMed,
    OpenAlex,
    Brave,
    Mojeek,
    Kagi,
    Marginalia,
    You,
    Tavily,
    Exa,
    SearXNG,
    # Scraping engines: never by default, refused without [scraping] enabled.
    DuckDuckGo,
    Bing,
)


def driver_classes() -> Mapping[str, type[Driver]]:
    return {cls.id: cls for cls in DRIVER_CLASSES}


def known_ids() -> frozenset[str]:
    return frozenset(driver_classes())


def engine_models() -> Mapping[str, type[EngineConfig]]:
    """Each engine's `[engines.<id>]` model, with its own typed settings (issue 11 item 3)."""
    return {cls.id: cls.options_model for cls in DRIVER_CLASSES}


def _settings(engine: EngineConfig, contact: str | None) -> EngineSettings:
    key = engine.api_key.resolve() if engine.api_key is not None else None
    return EngineSettings(
        endpoint=engine.endpoint,
        api_key=key.reveal() if key is not None else None,
        options=engine,
        contact=contact,
    )


def _enabled(cls: type[Driver], engine: EngineConfig) -> bool:
    """An engine outside the default set runs only when its table says `enabled = true`."""
    if "enabled" in engine.model_fields_set:
        return engine.enabled
    return cls.default_enabled and not cls.scraping


def scraping_refusals(config: Config) -> list[str]:
    """REQ-ENG-013: each enabled scraping engine, refused while `[scraping] enabled` is off."""
    if config.scraping.enabled:
        return []
    classes = driver_classes()
    return [
        f"key 'engines.{engine_id}.enabled': engine '{engine_id}' reads a human-facing page "
        "of its provider (a scraping engine); it runs only with [scraping] enabled = true, "
        "and the operator then bears the provider's terms"
        for engine_id, engine in config.engines.items()
        if classes[engine_id].scraping and _enabled(classes[engine_id], engine)
    ]


def _ordered_ids(config: Config) -> Iterator[str]:
    preferred = list(config.search.preference)
    yield from preferred
    yield from (cls.id for cls in DRIVER_CLASSES if cls.id not in preferred)


def configured_engines(config: Config) -> list[tuple[Driver, bool]]:
    """Every registered engine in preference order, with whether it is enabled."""
    classes = driver_classes()
    engines: list[tuple[Driver, bool]] = []
    for engine_id in _ordered_ids(config):
        engine_config = config.engines.get(engine_id, EngineConfig())
        cls = classes[engine_id]
        driver = cls(_settings(engine_config, config.operator.contact))
        engines.append((driver, _enabled(cls, engine_config)))
    return engines
