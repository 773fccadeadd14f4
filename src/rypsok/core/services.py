"""Application services: the one entry every adapter calls.

`Services.call(tool, arguments, caller)` runs one tool call along a straight
line: invocation limit → validation → credential check → work → contract
response. Every refusal is a `ToolError` in the contract's vocabulary; no
exception escapes as anything else (an unexpected one is logged by class and
answered `unavailable`). The MCP adapter only translates `Answer`s.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, assert_never

import anyio

from rypsok import PROJECT_URL, __version__
from rypsok.core import contract, limits, logs
from rypsok.core.cache import SharedState
from rypsok.core.callers import current_caller
from rypsok.core.config import Config, ConfigError, load_config
from rypsok.core.contract import (
    DeniedReason,
    ErrorKind,
    Notice,
    NoticeCode,
    Outcome,
    ToolError,
    ToolSpec,
    UnavailableReason,
)
from rypsok.core.egress.client import EgressClient
from rypsok.core.egress.policy import EgressRules
from rypsok.core.engines import registry
from rypsok.core.engines.base import Category, Driver, EngineFailure, EngineRequest, TimeRange
from rypsok.core.engines.transport import EngineEgress
from rypsok.core.invocation import InvocationLimiter
from rypsok.core.metrics import CountedCache, Metrics
from rypsok.core.privacy import CredentialMode, find_credentials, mask_credentials
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest

if TYPE_CHECKING:
    from rypsok.core.fetch.pipeline import FetchPipeline

log = logging.getLogger("rypsok.call")
query_log = logging.getLogger(logs.QUERIES)
metrics_log = logging.getLogger("rypsok.metrics")


class UnknownTool(Exception):
    """A tool name the contract does not define: a protocol error, not a tool error."""


@dataclass(frozen=True, slots=True)
class Answer:
    payload: dict[str, Any]
    is_error: bool


@dataclass(frozen=True, slots=True)
class CallContext:
    """What an operation knows of its call besides the checked arguments."""

    caller: str  # the identity for limits and in-flight sharing
    given: frozenset[str]  # argument names the caller gave (the rest are defaults)
    notices: list[Notice]
    started: float  # time.monotonic() at the call's start: its deadline counts from it

    def spent_s(self) -> float:
        return time.monotonic() - self.started


# The application services, by the argument type `validate_arguments` builds for each
# tool; `_run` dispatches on the same types (decision 6: one tool per operation).
OPERATIONS: Mapping[type[contract.ToolArguments], str] = {
    contract.WebSearchArguments: contract.WEB_SEARCH,
    contract.WebFetchArguments: contract.WEB_FETCH,
    contract.EngineStatusArguments: contract.ENGINE_STATUS,
}

_CREDENTIAL_NAMES = {
    contract.WEB_SEARCH: ("query", "The query"),
    contract.WEB_FETCH: ("url", "The URL"),
}


def user_agent(contact: str | None) -> str:
    """The one User-Agent of every request (REQ-CMP-004)."""
    tail = f"; {contact}" if contact else ""
    return f"rypsok/{__version__} (+{PROJECT_URL}{tail})"


class Services:
    """Holds the process state (configuration, engines, limits, metrics) for every call."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Callable[[], float] = time.monotonic,
        egress: EgressClient | None = None,
    ) -> None:
        self.config = config
        self.metrics = Metrics()
        self._clock = clock
        self._started = clock()
        # Every registered engine with its state; only those that can run have a driver
        # (and had their modules imported): engine_status lists the others from the rows.
        self.listed = registry.listed_engines(config)
        self.engines: list[tuple[Driver, bool]] = [
            (entry.driver, True) for entry in self.listed if entry.driver is not None
        ]
        self.egress = egress or build_egress(config)
        # Hook (issue 12): the result cache and the state instances share through Redis.
        self.shared = SharedState.build(config, self.metrics)
        # LIM-C5: one limiter for every parse of the process, web_fetch's extractions
        # and the scraping drivers' result pages alike.
        self.parse_slots = anyio.CapacityLimiter(config.fetch.parse_tasks)
        self._fetch_share: int | None = None  # LIM-C10 once divided between callers
        self.search_pipeline = SearchPipeline(
            self.active_engines(),
            EngineEgress(self.egress),
            config,
            self.metrics,
            clock,
            cache=None
            if self.shared.cache is None
            else CountedCache(self.shared.cache, self.metrics),
            queue_factory=self.shared.queue_factory,
            parse_slots=self.parse_slots,
        )
        self._fetch_pipeline: FetchPipeline | None = None
        per_minute = {
            contract.WEB_SEARCH: config.limits.web_search_per_minute,
            contract.WEB_FETCH: config.limits.web_fetch_per_minute,
            contract.ENGINE_STATUS: config.limits.engine_status_per_minute,
        }
        self._limiter = InvocationLimiter(per_minute, clock)
        self._call_limits = self.shared.call_limits(self._limiter, per_minute)
        self._specs = self._build_specs()
        if config.privacy.log_queries:
            # LIM-P3: an explicit operator choice, said loudly once at start.
            logs.enable_query_log()
            logs.event(
                log,
                "query_logging_on",
                logging.WARNING,
                key="privacy.log_queries",
                effect="each web_search query is logged at debug level (credentials masked)",
            )

    # -- what the adapter lists -----------------------------------------------------------

    @property
    def fetch_pipeline(self) -> FetchPipeline:
        """Built at the first web_fetch (or strict-mode search): issue 14 item 3, cold start.

        The fetch stack (lxml, charset detection, extraction, CSS) takes a fifth of
        start-up to import and no search or engine_status call needs it, so the
        process answers `initialize` and its first search without loading it.
        """
        if self._fetch_pipeline is None:
            from rypsok.core.fetch.pipeline import FetchPipeline  # noqa: PLC0415 (lazy, see above)

            pipeline = FetchPipeline(
                self.egress, self.config, self._clock, parse_slots=self.parse_slots
            )
            if self._fetch_share is not None:
                pipeline.slots.divide_between_callers(self._fetch_share)
            self._fetch_pipeline = pipeline
        return self._fetch_pipeline

    def divide_between_callers(self) -> None:
        """HTTP mode: the operator's caps on one caller's LIM-C1, LIM-C3, LIM-C4 (REQ-SEC-019).

        Unset, a caller may hold the whole pool while nobody else waits; the
        slots' fewest-held-first hand-out divides them when callers compete.
        stdio has one caller; the HTTP adapter calls this once, before serving.
        """
        search, fetch = self.config.search, self.config.fetch
        self.search_pipeline.process_slots.per_caller = min(
            search.engines_in_flight,
            search.engines_in_flight_per_caller or search.engines_in_flight,
        )
        self._fetch_share = fetch.fetches_per_caller or fetch.fetches_in_flight
        if self._fetch_pipeline is not None:
            self._fetch_pipeline.slots.divide_between_callers(self._fetch_share)

    def active_engines(self) -> list[Driver]:
        return [driver for driver, enabled in self.engines if enabled and driver.active]

    def categories(self) -> list[str]:
        served = {c.value for d in self.active_engines() for c in d.categories}
        return [c.value for c in Category if c.value in served]

    def _build_specs(self) -> dict[str, ToolSpec]:
        search = self.config.search
        specs = {
            contract.WEB_SEARCH: contract.web_search_spec(
                self.categories(), search.languages, search.default_language
            ),
            contract.WEB_FETCH: contract.web_fetch_spec(
                self.config.fetch.max_chars_default, self.config.fetch.max_chars_ceiling
            ),
        }
        if self.config.tools.engine_status:
            specs[contract.ENGINE_STATUS] = contract.engine_status_spec()
        return specs

    def tools(self) -> list[ToolSpec]:
        """The tool list in its fixed order (REQ-MCP-009)."""
        return [self._specs[name] for name in contract.TOOL_ORDER if name in self._specs]

    def operations(self) -> frozenset[str]:
        """The application services offered; each has a tool (decision 6)."""
        return frozenset(OPERATIONS.values())

    # -- one call -------------------------------------------------------------------------

    async def call(
        self, name: str, arguments: Mapping[str, object] | None, caller: str = "local"
    ) -> Answer:
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownTool(name)
        request_id = uuid.uuid4().hex[:16]
        token = logs.request_id.set(request_id)
        caller_token = current_caller.set(caller)  # the engine queues serve callers in turn
        try:
            response = await self._answer(spec, arguments, caller)
        finally:
            current_caller.reset(caller_token)
            logs.request_id.reset(token)
            logs.flush()  # the call's lines are written before its answer
        return Answer(response.wire(), response.outcome is Outcome.ERROR)

    async def _answer(
        self, spec: ToolSpec, arguments: Mapping[str, object] | None, caller: str
    ) -> contract.Envelope:
        started = time.monotonic()
        notices: list[Notice] = []
        try:
            await self._admit(spec.name, caller)
            checked = contract.validate_arguments(spec, arguments)
            context = CallContext(caller, frozenset(arguments or ()), notices, started)
            response = await self._run(checked, context)
        except ToolError as refusal:
            response = spec.output_model(outcome=Outcome.ERROR, notices=notices, error=refusal.info)
        except Exception as exc:  # any other failure is ours, never the caller's to read
            logs.event(log, "call_failed", logging.ERROR, exc_info=exc)
            response = spec.output_model(
                outcome=Outcome.ERROR,
                error=ToolError(
                    ErrorKind.UNAVAILABLE,
                    "rypsok failed internally; retry later.",
                    reason=UnavailableReason.INTERNAL,
                    retryable=True,
                ).info,
            )
        self._record(spec.name, caller, started, response)
        return response

    async def _run(
        self, arguments: contract.ToolArguments, context: CallContext
    ) -> contract.Envelope:
        match arguments:
            case contract.WebSearchArguments():
                return await self._web_search(arguments, context)
            case contract.WebFetchArguments():
                return await self._web_fetch(arguments, context)
            case contract.EngineStatusArguments():
                return await self._engine_status(arguments, context)
            case _:
                assert_never(arguments)

    def _spare_s(self, tool: str) -> float | None:
        """What a call of `tool` can spend on Redis before its own work needs the rest.

        A search needs LIM-S5 + LIM-S6 of its LIM-S4 (an engine's full timeout and
        the reserve), a fetch LIM-F4 of its LIM-F5 (one hop's full timeout): the
        slack the first audit gave the cache lookup. engine_status has no
        deadline: None leaves LIM-K4 alone. REQ-CACHE-006: no call waits beyond
        its deadline because of Redis.
        """
        search, fetch = self.config.search, self.config.fetch
        if tool == contract.WEB_SEARCH:
            return (search.deadline_ms - search.engine_timeout_ms - search.reserve_ms) / 1000.0
        if tool == contract.WEB_FETCH:
            return (fetch.ceiling_ms - fetch.timeout_ms) / 1000.0
        return None

    async def _admit(self, tool: str, caller: str) -> None:
        retry_ms = await self._call_limits.admit(tool, caller, budget_s=self._spare_s(tool))
        if retry_ms is not None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"Too many {tool} calls this minute; retry after {retry_ms} ms.",
                reason=UnavailableReason.RATE_LIMIT,
                retry_after_ms=retry_ms,
                retryable=True,
            )

    def _record(self, tool: str, caller: str, started: float, response: contract.Envelope) -> None:
        elapsed_ms = (time.monotonic() - started) * 1000.0
        error = response.error
        self.metrics.call_finished(tool, elapsed_ms, error.kind.value if error else None, caller)
        reason = (error.detail.reason or error.kind.value) if error else None
        if error is not None and (
            error.kind in (ErrorKind.INVALID_REQUEST, ErrorKind.DENIED)
            or reason == UnavailableReason.RATE_LIMIT
        ):
            self.metrics.refused(tool, reason or error.kind.value, caller)
        logs.event(
            log,
            "call",
            tool=tool,
            outcome=response.outcome.value,
            error_kind=error.kind.value if error else None,
            reason=reason,
            duration_ms=round(elapsed_ms, 2),
            notices=len(response.notices),
        )

    # -- the credential check (REQ-PRIV-002) -----------------------------------------------

    def _screen(self, tool: str, text: str, notices: list[Notice]) -> str:
        """The text to send on, after the credential check in the operator's mode."""
        mode = CredentialMode(self.config.privacy.credential_check)
        if mode is CredentialMode.OFF:
            return text
        findings = find_credentials(text)
        if not findings:
            return text
        field, label = _CREDENTIAL_NAMES[tool]
        first = findings[0]
        kind = first.kind.value.replace("_", " ")
        if mode is CredentialMode.DENY:
            raise ToolError(
                ErrorKind.DENIED,
                f"{label} contains what looks like a {kind} at character {first.start}; "
                f"remove it from the {field} and call again.",
                reason=DeniedReason.CREDENTIAL,
                parameter=field,
                credential_kind=first.kind.value,
                position=first.start,
            )
        if mode is CredentialMode.MASK:
            notices.append(
                Notice(
                    code=NoticeCode.CREDENTIAL_MASKED,
                    message=f"{len(findings)} credential-like value(s) in the {field} were "
                    f"replaced before sending (first: a {kind} at character {first.start}).",
                )
            )
            return mask_credentials(text, findings)
        notices.append(
            Notice(
                code=NoticeCode.CREDENTIAL_WARNING,
                message=f"The {field} contains what looks like a {kind} at character "
                f"{first.start}; it was sent as given.",
            )
        )
        return text

    def _log_query(self, query: str) -> None:
        """The query at debug level, only by the operator's choice (LIM-P3, REQ-PRIV-004)."""
        if self.config.privacy.log_queries:
            findings = find_credentials(query)  # in warn mode the query went out as given
            shown = mask_credentials(query, findings) if findings else query
            logs.event(query_log, "query", logging.DEBUG, tool=contract.WEB_SEARCH, query=shown)

    # -- the operations -------------------------------------------------------------------

    async def _web_search(
        self, args: contract.WebSearchArguments, call: CallContext
    ) -> contract.WebSearchOutput:
        query = contract.check_text_length("query", args.query, limits.QUERY_MAX_CHARS)
        query = self._screen(contract.WEB_SEARCH, query, call.notices)
        self._log_query(query)
        spent_s = call.spent_s()  # the search and its ceiling both start from this
        request = SearchRequest(
            query=query,
            category=Category(args.category),
            max_results=args.max_results,
            # The operator's default language is a preference passed to engines that
            # take one; only a language the caller asked for skips other engines.
            language=args.language if "language" in call.given else None,
            preferred_language=args.language,
            time_range=TimeRange(args.time_range) if args.time_range else None,
            caller=call.caller,
            spent_s=spent_s,
        )
        ceiling_s = self.config.search.ceiling_ms / 1000.0 - spent_s
        with anyio.move_on_after(ceiling_s):
            response = await self.search_pipeline.search(request, call.notices)
            returned = [r.url for r in response.results or ()]
            if self.config.fetch.strict:  # only strict mode keeps them (REQ-SEC-021)
                self.fetch_pipeline.remember_returned(returned)
            if self.shared.returned_urls is not None:  # hook (issue 12): other instances'
                # Within what is left of LIM-S4: past it the URLs stay this process's only.
                budget_s = self.config.search.deadline_ms / 1000.0 - call.spent_s()
                await self.shared.returned_urls.remember(returned, budget_s=budget_s)
            return response
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "The search hit its time ceiling; retry later.",
            reason=UnavailableReason.DEADLINE,
            retryable=True,
        )

    async def _web_fetch(
        self, args: contract.WebFetchArguments, call: CallContext
    ) -> contract.WebFetchOutput:
        url = contract.check_text_length("url", args.url, limits.URL_MAX_CHARS)
        url = self._screen(contract.WEB_FETCH, url, call.notices)
        await self._check_returned_elsewhere(url, call)
        from rypsok.core.fetch.pipeline import FetchRequest  # noqa: PLC0415 (loaded by now)

        request = FetchRequest(url=url, max_chars=args.max_chars, start_char=args.start_char,
                               spent_s=call.spent_s())  # fmt: skip
        return await self.fetch_pipeline.fetch(request, call.notices)

    async def _check_returned_elsewhere(self, url: str, call: CallContext) -> None:
        """Strict mode: take in `url` when another instance returned it (REQ-SEC-021).

        Asked only for a URL this process does not know, within the fetch's
        slack less what the call already spent. A Redis that does not answer
        in time counts as "not returned": the URL is refused as any unknown
        URL is (the safe side of a control), and the fetch keeps its LIM-F5.
        """
        shared = self.shared.returned_urls  # set in strict mode only
        local = self.fetch_pipeline.returned_urls
        if shared is None or (local is not None and local.contains(url)):
            return
        spare_s = self._spare_s(contract.WEB_FETCH)
        budget_s = None if spare_s is None else spare_s - call.spent_s()
        if await shared.contains(url, budget_s=budget_s):
            self.fetch_pipeline.remember_returned([url])  # hook (issue 12): another instance's

    async def _engine_status(
        self, args: contract.EngineStatusArguments, call: CallContext
    ) -> contract.EngineStatusOutput:
        running = {driver.id: driver for driver, enabled in self.engines if enabled}
        engines = [
            contract.EngineHealth(
                id=entry.id,
                state=self._listed_state(running.get(entry.id)),
                median_latency_ms=self.metrics.median_engine_latency_ms(entry.id),
            )
            for entry in self.listed
        ]
        return contract.EngineStatusOutput(outcome=Outcome.OK, engines=engines)

    def _listed_state(self, driver: Driver | None) -> contract.EngineState:
        """An engine without a driver here is disabled: it is off or lacks what it needs."""
        if driver is None:
            return contract.EngineState.DISABLED
        return self._engine_state(driver, True)

    def _engine_state(self, driver: Driver, enabled: bool) -> contract.EngineState:
        breaker = self.search_pipeline.breakers.get(driver.id)
        if not enabled or not driver.active or breaker is None:
            return contract.EngineState.DISABLED
        return contract.EngineState(breaker.state.value)

    # -- metrics leave the process as log lines (REQ-OBS-008) ---------------------------------

    def circuit_states(self) -> dict[str, str]:
        """Each active engine's circuit state now (closed, open, half_open), for the metrics."""
        return {
            driver.id: self._engine_state(driver, True).value for driver in self.active_engines()
        }

    async def issuer_document(self, url: str) -> bytes | None:
        """A document of an OAuth issuer (its JWKS), GET through the engine egress profile.

        The same policy as an operator-configured engine endpoint: public
        addresses, or a private one only where `[egress] allow` admits it
        (REQ-SEC-011). None when it cannot be had; the caller keeps what it has.
        """
        try:
            response = await EngineEgress(self.egress).engine_get(
                EngineRequest(url=url),
                explicit_endpoint=True,
                max_body_bytes=limits.OAUTH_JWKS_MAX_BYTES,
                connect_timeout_ms=self.config.search.connect_timeout_ms,
                total_timeout_ms=self.config.search.engine_timeout_ms,
            )
        except EngineFailure as exc:
            logs.event(log, "issuer_keys_unavailable", logging.WARNING, reason=str(exc))
            return None
        if response.status != 200:
            logs.event(
                log,
                "issuer_keys_unavailable",
                logging.WARNING,
                reason="status",
                status=response.status,
            )
            return None
        return response.body

    def log_metrics(self, reason: str) -> None:
        """One `metrics` line: counts and medians since start, no query, URL or key."""
        uptime_s = round(self._clock() - self._started, 1)
        logs.event(metrics_log, "metrics", reason=reason, uptime_s=uptime_s,
                   **self.metrics.summary())  # fmt: skip

    async def report_metrics(self) -> None:
        """A `metrics` line every `logging.metrics_interval_s`; with 0 only shutdown logs one."""
        interval_s = self.config.logging.metrics_interval_s
        if interval_s == 0:
            return
        while True:
            await anyio.sleep(interval_s)
            self.log_metrics("interval")

    async def aclose(self) -> None:
        """Release what the process holds (connections, tasks)."""
        await self.egress.aclose()
        await self.shared.aclose()


def build_egress(config: Config) -> EgressClient:
    """The process's egress client; ConfigError naming the keys when it cannot be built."""
    # The egress layer's own words name what is wrong and never echo a value.
    try:
        rules = EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny)
    except ValueError as exc:
        raise ConfigError(f"key 'egress.allow' or 'egress.deny': {exc}") from None
    try:
        return EgressClient(
            user_agent=user_agent(config.operator.contact),
            rules=rules,
            proxy=config.egress.proxy,
            fetch_allow_http=config.fetch.allow_http,
            fetch_extra_ports=config.fetch.ports,
        )
    except ValueError as exc:  # the proxy URL (operator.contact is checked by the schema)
        raise ConfigError(f"key 'egress.proxy': {exc}") from None


def load_configuration(path: str | None) -> Config:
    """The configuration, checked against the registered engines (REQ-ENG-004, CLR-3)."""
    config = load_config(path, registry.engine_models())
    problems = registry.scraping_refusals(config) + admission_problems(config)
    if problems:
        raise ConfigError("; ".join(problems))
    return config


def admission_problems(config: Config) -> list[str]:
    """Engine settings faster than the engine's admission record allows (CLR-3).

    The record's spacing and concurrency are the provider's terms: a value that
    would break them is refused with the record's bound, never lowered quietly.
    """
    problems = []
    for engine_id, own in config.engines.items():
        if own.min_interval_ms is None and own.max_concurrency is None:
            continue  # nothing to hold against the record: its driver need not be imported
        driver_class = registry.driver_class(engine_id)
        keyed = driver_class.keyed_admission if own.api_key is not None else None
        record = keyed or driver_class.admission
        where = f"key 'engines.{engine_id}"
        page = f"docs/engines/{engine_id}.md"
        if own.min_interval_ms is not None and own.min_interval_ms < record.min_interval_ms:
            problems.append(
                f"{where}.min_interval_ms': must be at least {record.min_interval_ms}, the "
                f"spacing of the engine's admission record ({page}); it may only be longer"
            )
        if own.max_concurrency is not None and own.max_concurrency > record.max_concurrency:
            problems.append(
                f"{where}.max_concurrency': must be at most {record.max_concurrency}, the "
                f"concurrency of the engine's admission record ({page}); it may only be lower"
            )
    return problems


def engine_states(config: Config) -> list[tuple[str, str]]:
    """Each engine: active, inactive_no_key, inactive_no_contact, inactive_no_endpoint or
    disabled (REQ-OPS-003), judged from the registry's rows without importing a driver."""
    return [(entry.id, entry.state) for entry in registry.listed_engines(config, build=False)]


def engine_categories(config: Config) -> dict[str, list[str]]:
    """Each registered engine's categories, in the contract's order (for `rypsok check`)."""
    return {
        driver.id: [c.value for c in Category if c in driver.categories]
        for driver, _ in registry.configured_engines(config)
    }
