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
from rypsok.core.engines.brave import Brave
from rypsok.core.engines.crossref import Crossref
from rypsok.core.engines.europepmc import EuropePmc
from rypsok.core.engines.gdelt import Gdelt
from rypsok.core.engines.github import GitHub
from rypsok.core.engines.hackernews import HackerNews
from rypsok.core.engines.mojeek import Mojeek
from rypsok.core.engines.searxng import SearXNG
from rypsok.core.engines.stackexchange import StackExchange
from rypsok.core.engines.wikidata import Wikidata
from rypsok.core.engines.wikipedia import Wikipedia

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
    ArXiv,
    EuropePmc,
    Crossref,
    Brave,
    Mojeek,
    SearXNG,
)


def driver_classes() -> Mapping[str, type[Driver]]:
    return {cls.id: cls for cls in DRIVER_CLASSES}


def known_ids() -> frozenset[str]:
    return frozenset(driver_classes())


def _settings(engine: EngineConfig) -> EngineSettings:
    key = engine.api_key.resolve() if engine.api_key is not None else None
    return EngineSettings(
        endpoint=engine.endpoint, api_key=key.reveal() if key is not None else None
    )


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
        driver = classes[engine_id](_settings(engine_config))
        engines.append((driver, engine_config.enabled))
    return engines
