"""The engine abstraction: what every driver declares, builds and parses.

A driver is one module holding one class. Its steps are pure: `build_request`
turns search parameters into an `EngineRequest`, `parse` turns the provider's
`EngineResponse` into `RawHit`s or raises `EngineFailure`. The queue and the
egress client do all I/O, so a driver never touches the network and a change
of a provider's format touches its driver only (REQ-ENG-005, REQ-ARCH-002).

Failure classes (REQ-ENG-006), exactly one per failed request:

    timeout          no complete answer within the engine timeout or deadline
    rate_limited     429 or a provider-specific throttle signal
    blocked          CAPTCHA or anti-bot page
    parse_failure    an answer that is not in the provider's format
    auth_failure     the provider refused our credentials
    request_failure  anything else: connection refused, 5xx, policy refusal

An `EngineFailure` carries its class and a Retry-After, never provider text.

Most engines answer one request. Two kinds need more, and `exchange` runs
them: a provider whose search is two calls (PubMed: the ids, then their
summaries) and a scraping driver that meets a redirect on its provider's own
host. Their `parse` returns a `FollowUp` naming the next request; `exchange`
sends it within the same turn and deadline, at most MAX_REQUESTS_PER_SEARCH
requests in all, so a chain can never grow with the provider's answers.
Scraping drivers (`scraping = True`) are parsed off the event loop, at most
LIM-C5 at a time (REQ-ENG-015).

An engine's turn (its LIM-C2 slot and a LIM-C1 slot) counts a request in
flight. A driver that sets `releases_turn_on_answer` gives the turn back as
soon as its one answer is read, before parsing; every other driver keeps it
until its parse ends (docs/performance.md §16.5).
"""

from __future__ import annotations

import abc
import enum
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Final, Literal, NamedTuple, TypeVar

import anyio
from pydantic import BaseModel

from rypsok.core import headers, limits
from rypsok.core.config import EngineConfig

# One search asks one engine at most this many requests: PubMed's two calls,
# or a scraping driver's request and one redirect on its provider's host.
MAX_REQUESTS_PER_SEARCH: Final = 2

_Options = TypeVar("_Options", bound=BaseModel)


class FailureClass(enum.StrEnum):
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    BLOCKED = "blocked"
    PARSE_FAILURE = "parse_failure"
    AUTH_FAILURE = "auth_failure"
    REQUEST_FAILURE = "request_failure"


class Category(enum.StrEnum):
    GENERAL = "general"
    NEWS = "news"
    SCIENCE = "science"
    CODE = "code"


class TimeRange(enum.StrEnum):
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    YEAR = "year"


class SafeSearch(enum.StrEnum):
    OFF = "off"
    MODERATE = "moderate"
    STRICT = "strict"


class EngineFailure(Exception):
    """A failed engine request, classified. Carries no provider text."""

    def __init__(self, failure_class: FailureClass, *, retry_after_ms: int | None = None) -> None:
        super().__init__(failure_class.value)
        self.failure_class = failure_class
        self.retry_after_ms = retry_after_ms


@dataclass(frozen=True, slots=True)
class Admission:
    """Provider obligations recorded in docs/engines/<id>.md (REQ-ENG-010, REQ-CMP-001)."""

    min_interval_ms: int  # LIM-C9 as spacing between request starts; 0 means none recorded
    max_concurrency: int = limits.REQUESTS_PER_ENGINE_IN_FLIGHT  # LIM-C2
    cacheable: bool = True
    attribution_required: bool = False
    max_body_bytes: int = 2 * 1024 * 1024  # REQ-SEC-010: driver-declared bound


@dataclass(frozen=True, slots=True)
class SearchParams:
    """What a driver may use to build its request. Validated before it gets here."""

    query: str
    category: Category = Category.GENERAL
    language: str | None = None  # None: no selection asked for
    time_range: TimeRange | None = None
    results: int = limits.RESULTS_PER_ENGINE  # LIM-S3
    region: str | None = None
    safe_search: SafeSearch = SafeSearch.MODERATE
    contact: str | None = None  # operator contact, for providers with a polite pool


@dataclass(frozen=True, slots=True)
class EngineRequest:
    """One request. `url` is the endpoint without query; params are encoded by egress.

    A POST carries `body` (its Content-Type in `headers`); providers whose
    API is a JSON POST (Kagi, Tavily, Exa) need it.
    """

    url: str
    # Params carry the query and headers may carry a key: neither shows in a repr
    # (REQ-PRIV-004, REQ-SEC-020).
    params: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    # Header names whose values are credentials: egress sends them to the
    # configured origin only (REQ-SEC-017) and never logs them.
    credential_headers: frozenset[str] = frozenset()
    method: Literal["GET", "POST"] = "GET"
    # The body may carry the query or the key: never in a repr either.
    body: bytes = field(default=b"", repr=False)


@dataclass(frozen=True, slots=True)
class EngineResponse:
    """A complete, size-bounded response. Header names are lower-case."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class RawHit(NamedTuple):
    """One result as the provider gave it: raw text, the pipeline cleans it (REQ-ENG-012).

    Immutable, as a tuple: a frozen dataclass sets each field through
    `object.__setattr__`, about three times the cost of building the tuple, and
    every hit of every answer is one (issue 14, performance §22.2).
    """

    rank: int  # 1-based, in the provider's order
    url: str
    title: str
    snippet: str = ""
    date: str | None = None  # ISO 8601 date (YYYY-MM-DD) when the provider gives one


class PausingHits(list[RawHit]):
    """Hits that come with the provider's request to wait before the next request.

    Some providers attach a pause to a successful answer (Stack Exchange's
    `backoff`); a driver returns its hits in this list so the queue can honour
    the pause without treating the answer as a failure.
    """

    def __init__(self, hits: list[RawHit], *, pause_ms: int) -> None:
        super().__init__(hits)
        self.pause_ms = pause_ms


class FollowUp(list[RawHit]):
    """No hits yet: this answer names the next request of the same search.

    `exchange` sends `request` in the same turn and deadline and parses its
    answer with the same `parse`; a driver tells the answers apart by their
    content, so `parse` stays pure.
    """

    def __init__(self, request: EngineRequest) -> None:
        super().__init__()
        self.request = request


Send = Callable[[EngineRequest], Awaitable[EngineResponse]]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """The operator's settings for one engine, already validated by the configuration."""

    endpoint: str | None = None  # replaces the driver's default endpoint when set
    api_key: str | None = field(default=None, repr=False)  # resolved secret (REQ-SEC-020)
    # The driver's own typed settings (its `options_model`), validated at
    # start-up with the rest of the configuration; None: the model's defaults.
    options: BaseModel | None = None
    contact: str | None = None  # `[operator] contact`, for drivers whose provider requires it


class Driver(abc.ABC):
    """One search engine. Subclasses set the class attributes and the two pure steps."""

    id: ClassVar[str]
    categories: ClassVar[frozenset[Category]]
    # Languages the provider can select results by (ISO 639-1). An engine asked
    # for a language outside this set is skipped with a notice (REQ-SEARCH-004).
    # Each one changes the request the driver builds, except `default_language`.
    languages: ClassVar[frozenset[str]] = frozenset()
    # The language the request selects when none is asked for: the one language
    # of a monolingual index (honoured with no parameter), or the edition the
    # driver falls back to. None: no language is implied.
    default_language: ClassVar[str | None] = None
    # Time ranges the provider can filter by (REQ-SEARCH-005). Each one changes
    # the request, except those in `unfiltered_time_ranges`: ranges that reach
    # past everything the provider searches, honoured with no parameter.
    time_ranges: ClassVar[frozenset[TimeRange]] = frozenset()
    unfiltered_time_ranges: ClassVar[frozenset[TimeRange]] = frozenset()
    max_query_chars: ClassVar[int] = limits.QUERY_MAX_CHARS
    admission: ClassVar[Admission]
    # The record's figures when the operator gives the engine its own key and
    # the provider then allows more (NCBI: 10 instead of 3 requests a second).
    keyed_admission: ClassVar[Admission | None] = None
    default_endpoint: ClassVar[str]
    requires_key: ClassVar[bool] = False
    # The provider's terms require the operator's contact (crates.io): inactive without it.
    requires_contact: ClassVar[bool] = False
    # False: queried only when the operator enables it by name (not zero-configuration).
    default_enabled: ClassVar[bool] = True
    # Reads a human-facing page (REQ-ENG-013): refused without `[scraping] enabled`,
    # never enabled by default, parsed off the event loop.
    scraping: ClassVar[bool] = False
    # True: the exchange is one request and its parse never returns `PausingHits`
    # or `FollowUp`, so the engine's turn goes back once the answer is read and
    # the next request need not wait for this parse. False, the safe default:
    # the turn is held until the parse ends, so a pause or throttle the parse
    # reads reaches the queue before the next start, and a follow-up is sent
    # within the turn. Ignored for scraping drivers, whose parse runs in a
    # thread: the loop would reserve the next start before their verdict.
    releases_turn_on_answer: ClassVar[bool] = False
    # The typed settings beyond the common ones, as `[engines.<id>]` keys.
    options_model: ClassVar[type[EngineConfig]] = EngineConfig

    def __init__(
        self, settings: EngineSettings | None = None, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings or EngineSettings()
        # The driver's one impure input: the wall clock, read through `now()` by
        # drivers whose request depends on the date (a time range). Tests inject
        # a fixed clock; no driver reads the time itself (REQ-MAIN-004).
        self._clock = clock

    def now(self) -> float:
        """The current Unix time, from the injected clock."""
        return self._clock()

    @property
    def endpoint(self) -> str:
        return self.settings.endpoint or self.default_endpoint

    def honoured_languages(self) -> frozenset[str]:
        """The languages this instance can select: `languages`, unless its settings narrow it."""
        return self.languages

    @property
    def active(self) -> bool:
        """A keyed engine without its key cannot run (REQ-CFG-004)."""
        if self.requires_contact and not self.settings.contact:
            return False
        return not self.requires_key or self.settings.api_key is not None

    @property
    def current_admission(self) -> Admission:
        """The admission that applies to these settings: keyed figures with a key."""
        if self.keyed_admission is not None and self.settings.api_key is not None:
            return self.keyed_admission
        return self.admission

    def typed_options(self, model: type[_Options]) -> _Options:
        """The operator's settings for this engine as `model`, else the model's defaults."""
        options = self.settings.options
        return options if isinstance(options, model) else model()

    async def exchange(
        self, params: SearchParams, send: Send, *, parse_slots: anyio.CapacityLimiter
    ) -> list[RawHit]:
        """The hits of one search: request, answer, and any follow-up the answer names."""
        request = self.build_request(params)
        for _ in range(MAX_REQUESTS_PER_SEARCH):
            response = await send(request)
            parsed = await self._parse_answer(response, parse_slots)
            if not isinstance(parsed, FollowUp):
                return parsed
            request = parsed.request
        raise EngineFailure(FailureClass.PARSE_FAILURE)  # the chain did not end in hits

    async def _parse_answer(
        self, response: EngineResponse, parse_slots: anyio.CapacityLimiter
    ) -> list[RawHit]:
        if not self.scraping:
            return self.parse(response)
        # A page parse holds the CPU: off the event loop, at most LIM-C5 at a time.
        return await anyio.to_thread.run_sync(self.parse, response, limiter=parse_slots)

    @abc.abstractmethod
    def build_request(self, params: SearchParams) -> EngineRequest:
        """The request for these parameters, against `self.endpoint`."""

    @abc.abstractmethod
    def parse(self, response: EngineResponse) -> list[RawHit]:
        """The hits of a response, or `EngineFailure` with its class."""


def classify_status(status: int) -> FailureClass | None:
    """The common reading of an HTTP status; drivers refine it with provider signals."""
    if 200 <= status < 300:
        return None
    if status == 429:
        return FailureClass.RATE_LIMITED
    if status in (401, 403):
        return FailureClass.AUTH_FAILURE
    if status in (408, 504):
        return FailureClass.TIMEOUT
    return FailureClass.REQUEST_FAILURE


# Drivers read Retry-After through the abstraction; the reading itself is shared
# with the fetch pipeline.
retry_after_ms = headers.retry_after_ms
