"""The registry: engine ids to driver classes, written in code (REQ-ENG-004).

Configuration can only select and parameterise registered engines; an id with
no driver stops start-up (the configuration check uses `known_ids`).

Each engine has one row in `ENGINES`: its configuration entry (REQ-MAIN-004,
docs/engines/README.md "Adding an engine"). The row says where the driver
class is, whether the engine runs without being named, what it needs before
it can run (a key, the operator's contact, an endpoint) and the model of its
`[engines.<id>]` table (`rypsok.core.engines.options`). That is all the
configuration check, `engine_status`, `rypsok check`'s states and the
start-up log need of an engine that does not run, so a process imports the
driver modules of the engines that can run, and no others (issue 14 item 3:
the 24 driver modules were a fifth of rypsok's own start-up imports).
`tests/core/engines/test_registry_rows.py` holds every row against its
driver class, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from rypsok.core.config import Config, EngineConfig
from rypsok.core.engines.base import Driver, EngineSettings
from rypsok.core.engines.options import DuckDuckGoConfig, ExaConfig, PubMedConfig, TavilyConfig

# What an enabled engine may lack, in the order its inactive state names it.
Need = Literal["key", "contact", "endpoint"]
NEED_ORDER: Final[tuple[Need, ...]] = ("key", "contact", "endpoint")
EngineState = Literal[
    "active", "disabled", "inactive_no_key", "inactive_no_contact", "inactive_no_endpoint"
]
_INACTIVE: Final[Mapping[Need, EngineState]] = {
    "key": "inactive_no_key",
    "contact": "inactive_no_contact",
    "endpoint": "inactive_no_endpoint",
}


@dataclass(frozen=True, slots=True)
class Registered:
    """One engine's configuration entry. Its driver is `rypsok.core.engines.<id>.<driver>`."""

    id: str
    driver: str  # the class name in the module named by the id
    default_enabled: bool = True  # False: runs only when its table says `enabled = true`
    scraping: bool = False  # REQ-ENG-013: refused without `[scraping] enabled`
    needs: tuple[Need, ...] = ()  # inactive until each is given
    options: type[EngineConfig] = EngineConfig  # the `[engines.<id>]` model

    @property
    def module(self) -> str:
        return f"{__package__}.{self.id}"


# Default preference order, most preferred first; within a category only the
# engines serving it count (docs/engines/README.md gives the per-category order).
# The keyed engines and SearXNG are inactive until the operator gives a key or
# an endpoint; `search.preference` puts them first where the operator wants.
ENGINES: Final[tuple[Registered, ...]] = (
    Registered("wikipedia", "Wikipedia"),
    Registered("wikidata", "Wikidata"),
    Registered("gdelt", "Gdelt"),
    Registered("stackexchange", "StackExchange"),
    Registered("github", "GitHub"),
    Registered("hackernews", "HackerNews"),
    Registered("npm", "Npm"),
    Registered("crates", "Crates", needs=("contact",)),
    Registered("arxiv", "ArXiv"),
    Registered("europepmc", "EuropePmc"),
    Registered("crossref", "Crossref"),
    Registered("dblp", "Dblp"),
    Registered("pubmed", "PubMed", default_enabled=False, options=PubMedConfig),
    Registered("openalex", "OpenAlex", needs=("key",)),
    Registered("brave", "Brave", needs=("key",)),
    Registered("mojeek", "Mojeek", needs=("key",)),
    Registered("kagi", "Kagi", needs=("key",)),
    Registered("marginalia", "Marginalia", needs=("key",)),
    Registered("you", "You", needs=("key",)),
    Registered("tavily", "Tavily", needs=("key",), options=TavilyConfig),
    Registered("exa", "Exa", needs=("key",), options=ExaConfig),
    Registered("searxng", "SearXNG", needs=("endpoint",)),
    # Scraping engines: never by default, refused without [scraping] enabled.
    Registered(
        "duckduckgo", "DuckDuckGo", default_enabled=False, scraping=True, options=DuckDuckGoConfig
    ),
    Registered("bing", "Bing", default_enabled=False, scraping=True),
)
_ROWS: Final[Mapping[str, Registered]] = {row.id: row for row in ENGINES}
# Driver classes imported so far. Filled at most once per id: a racing second
# import gets the same class from `sys.modules` under the import system's lock.
_CLASSES: dict[str, type[Driver]] = {}


def driver_class(engine_id: str) -> type[Driver]:
    """The driver class of a registered engine, its module imported at the first ask."""
    cls = _CLASSES.get(engine_id)
    if cls is None:
        row = _ROWS[engine_id]
        # `__import__`, not importlib.import_module: only the import statement's path is
        # timed by `python -X importtime`, and the cold-start record must show drivers.
        module = __import__(row.module, fromlist=(row.driver,))
        found: type[Driver] = getattr(module, row.driver)
        cls = _CLASSES.setdefault(engine_id, found)
    return cls


def driver_classes() -> Mapping[str, type[Driver]]:
    """Every driver class, in the default order: imports every driver module."""
    return {row.id: driver_class(row.id) for row in ENGINES}


def __getattr__(name: str) -> tuple[type[Driver], ...]:
    """`DRIVER_CLASSES`, every driver class in the default order, imported when first read."""
    if name == "DRIVER_CLASSES":
        return tuple(driver_classes().values())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def known_ids() -> frozenset[str]:
    return frozenset(_ROWS)


def row(engine_id: str) -> Registered:
    return _ROWS[engine_id]


def engine_models() -> Mapping[str, type[EngineConfig]]:
    """Each engine's `[engines.<id>]` model, with its own typed settings (issue 11 item 3)."""
    return {row.id: row.options for row in ENGINES}


def _settings(engine: EngineConfig, contact: str | None) -> EngineSettings:
    key = engine.api_key.resolve() if engine.api_key is not None else None
    return EngineSettings(
        endpoint=engine.endpoint,
        api_key=key.reveal() if key is not None else None,
        options=engine,
        contact=contact,
    )


def _enabled(entry: Registered, engine: EngineConfig) -> bool:
    """An engine outside the default set runs only when its table says `enabled = true`."""
    if "enabled" in engine.model_fields_set:
        return engine.enabled
    return entry.default_enabled and not entry.scraping


def _missing(entry: Registered, engine: EngineConfig, contact: str | None) -> Need | None:
    """The first thing an enabled engine lacks to run, or None: `Driver.active`'s reading."""
    given: dict[Need, bool] = {
        "key": engine.api_key is not None and engine.api_key.resolve() is not None,
        "contact": bool(contact),
        "endpoint": bool(engine.endpoint),
    }
    return next((need for need in NEED_ORDER if need in entry.needs and not given[need]), None)


def scraping_refusals(config: Config) -> list[str]:
    """REQ-ENG-013: each enabled scraping engine, refused while `[scraping] enabled` is off."""
    if config.scraping.enabled:
        return []
    return [
        f"key 'engines.{engine_id}.enabled': engine '{engine_id}' reads a human-facing page "
        "of its provider (a scraping engine); it runs only with [scraping] enabled = true, "
        "and the operator then bears the provider's terms"
        for engine_id, engine in config.engines.items()
        if _ROWS[engine_id].scraping and _enabled(_ROWS[engine_id], engine)
    ]


def _ordered_ids(config: Config) -> Iterator[str]:
    preferred = list(config.search.preference)
    yield from preferred
    yield from (entry.id for entry in ENGINES if entry.id not in preferred)


@dataclass(frozen=True, slots=True)
class Listed:
    """A registered engine as this configuration sets it up; a driver only when it can run."""

    id: str
    state: EngineState
    driver: Driver | None


def listed_engines(config: Config, *, build: bool = True) -> list[Listed]:
    """Every registered engine in preference order with its state (REQ-OPS-003).

    With `build`, the engines that can run get their driver, which imports
    their driver modules; the others are judged from their rows alone.
    """
    listed = []
    contact = config.operator.contact
    for engine_id in _ordered_ids(config):
        engine = config.engines.get(engine_id, EngineConfig())
        entry = _ROWS[engine_id]
        missing = _missing(entry, engine, contact)
        state: EngineState
        if not _enabled(entry, engine):
            state = "disabled"
        elif missing is not None:
            state = _INACTIVE[missing]
        else:
            state = "active"
        driver = None
        if build and state == "active":
            driver = driver_class(engine_id)(_settings(engine, contact))
        listed.append(Listed(engine_id, state, driver))
    return listed


def configured_engines(config: Config) -> list[tuple[Driver, bool]]:
    """Every registered engine's driver in preference order, with whether it is enabled.

    Imports every driver module: for tools that look at every engine (`make
    live`, the benchmarks), not for serving.
    """
    engines: list[tuple[Driver, bool]] = []
    for engine_id in _ordered_ids(config):
        engine = config.engines.get(engine_id, EngineConfig())
        cls = driver_class(engine_id)
        engines.append(
            (cls(_settings(engine, config.operator.contact)), _enabled(row(engine_id), engine))
        )
    return engines
