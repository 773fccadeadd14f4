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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from rypsok import PROJECT_URL, __version__
from rypsok.core import contract, limits, logs
from rypsok.core.cache import SharedState
from rypsok.core.config import Config, load_config
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
from rypsok.core.engines.base import Category, Driver, TimeRange
from rypsok.core.fetch.pipeline import FetchPipeline, FetchRequest
from rypsok.core.invocation import InvocationLimiter
from rypsok.core.metrics import Metrics
from rypsok.core.privacy import CredentialMode, find_credentials, mask_credentials
from rypsok.core.search.aggregate import SearchPipeline, SearchRequest

log = logging.getLogger("rypsok.call")


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


Operation = Callable[[dict[str, Any], CallContext], Awaitable[contract._Envelope]]

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
        self.engines: list[tuple[Driver, bool]] = registry.configured_engines(config)
        self.egress = egress or EgressClient(
            user_agent=user_agent(config.operator.contact),
            rules=EgressRules.from_strings(allow=config.egress.allow, deny=config.egress.deny),
            proxy=config.egress.proxy,
            fetch_allow_http=config.fetch.allow_http,
            fetch_extra_ports=config.fetch.ports,
        )
        # Hook (issue 12): the result cache and the state instances share through Redis.
        self.shared = SharedState.build(config, self.metrics)
        self.search_pipeline = SearchPipeline(
            self.active_engines(),
            self.egress,
            config,
            self.metrics,
            clock,
            cache=self.shared.cache,
            queue_factory=self.shared.queue_factory,
        )
        self.fetch_pipeline = FetchPipeline(self.egress, config, clock)
        per_minute = {
            contract.WEB_SEARCH: config.limits.web_search_per_minute,
            contract.WEB_FETCH: config.limits.web_fetch_per_minute,
            contract.ENGINE_STATUS: config.limits.engine_status_per_minute,
        }
        self._limiter = InvocationLimiter(per_minute, clock)
        self._call_limits = self.shared.call_limits(self._limiter, per_minute)
        self._specs = self._build_specs()
        self._operations: dict[str, Operation] = {
            contract.WEB_SEARCH: self._web_search,
            contract.WEB_FETCH: self._web_fetch,
            contract.ENGINE_STATUS: self._engine_status,
        }

    # -- what the adapter lists -----------------------------------------------------------

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
        return frozenset(self._operations)

    # -- one call -------------------------------------------------------------------------

    async def call(
        self, name: str, arguments: Mapping[str, object] | None, caller: str = "local"
    ) -> Answer:
        spec = self._specs.get(name)
        if spec is None:
            raise UnknownTool(name)
        request_id = uuid.uuid4().hex[:16]
        token = logs.request_id.set(request_id)
        try:
            response = await self._answer(spec, arguments, caller)
        finally:
            logs.request_id.reset(token)
        return Answer(response.wire(), response.outcome is Outcome.ERROR)

    async def _answer(
        self, spec: ToolSpec, arguments: Mapping[str, object] | None, caller: str
    ) -> contract._Envelope:
        started = time.monotonic()
        notices: list[Notice] = []
        try:
            await self._admit(spec.name, caller)
            checked = contract.validate_arguments(spec, arguments)
            context = CallContext(caller, frozenset(arguments or ()), notices)
            response = await self._operations[spec.name](checked, context)
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
        self._record(spec.name, started, response)
        return response

    async def _admit(self, tool: str, caller: str) -> None:
        retry_ms = await self._call_limits.admit(tool, caller)
        if retry_ms is not None:
            raise ToolError(
                ErrorKind.UNAVAILABLE,
                f"Too many {tool} calls this minute; retry after {retry_ms} ms.",
                reason=UnavailableReason.RATE_LIMIT,
                retry_after_ms=retry_ms,
                retryable=True,
            )

    def _record(self, tool: str, started: float, response: contract._Envelope) -> None:
        elapsed_ms = (time.monotonic() - started) * 1000.0
        error = response.error
        self.metrics.call_finished(tool, elapsed_ms, error.kind.value if error else None)
        reason = (error.detail.reason or error.kind.value) if error else None
        if error is not None and (
            error.kind in (ErrorKind.INVALID_REQUEST, ErrorKind.DENIED)
            or reason == UnavailableReason.RATE_LIMIT
        ):
            self.metrics.refused(tool, reason or error.kind.value)
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

    # -- the operations -------------------------------------------------------------------

    async def _web_search(
        self, args: dict[str, Any], call: CallContext
    ) -> contract.WebSearchOutput:
        query = contract.check_text_length("query", args["query"], limits.QUERY_MAX_CHARS)
        query = self._screen(contract.WEB_SEARCH, query, call.notices)
        request = SearchRequest(
            query=query,
            category=Category(args["category"]),
            max_results=args["max_results"],
            # The operator's default language is a preference passed to engines that
            # take one; only a language the caller asked for skips other engines.
            language=args["language"] if "language" in call.given else None,
            preferred_language=args["language"],
            time_range=TimeRange(args["time_range"]) if args["time_range"] else None,
            caller=call.caller,
        )
        ceiling_s = self.config.search.ceiling_ms / 1000.0
        with anyio.move_on_after(ceiling_s):
            response = await self.search_pipeline.search(request, call.notices)
            returned = [r.url for r in response.results or ()]
            self.fetch_pipeline.remember_returned(returned)
            if self.shared.returned_urls is not None:  # hook (issue 12): other instances'
                await self.shared.returned_urls.remember(returned)
            return response
        raise ToolError(
            ErrorKind.UNAVAILABLE,
            "The search hit its time ceiling; retry later.",
            reason=UnavailableReason.DEADLINE,
            retryable=True,
        )

    async def _web_fetch(self, args: dict[str, Any], call: CallContext) -> contract.WebFetchOutput:
        url = contract.check_text_length("url", args["url"], limits.URL_MAX_CHARS)
        url = self._screen(contract.WEB_FETCH, url, call.notices)
        shared = self.shared.returned_urls  # set in strict mode only
        if shared is not None and await shared.contains(url):
            self.fetch_pipeline.remember_returned([url])  # hook (issue 12): another instance's
        request = FetchRequest(url=url, max_chars=args["max_chars"], start_char=args["start_char"])
        return await self.fetch_pipeline.fetch(request, call.notices)

    async def _engine_status(
        self, args: dict[str, Any], call: CallContext
    ) -> contract.EngineStatusOutput:
        engines = [
            contract.EngineHealth(
                id=driver.id,
                state=self._engine_state(driver, enabled),
                median_latency_ms=self.metrics.median_engine_latency_ms(driver.id),
            )
            for driver, enabled in self.engines
        ]
        return contract.EngineStatusOutput(outcome=Outcome.OK, engines=engines)

    def _engine_state(self, driver: Driver, enabled: bool) -> contract.EngineState:
        breaker = self.search_pipeline.breakers.get(driver.id)
        if not enabled or not driver.active or breaker is None:
            return contract.EngineState.DISABLED
        return contract.EngineState(breaker.state.value)

    async def aclose(self) -> None:
        """Release what the process holds (connections, tasks)."""
        await self.egress.aclose()
        await self.shared.aclose()


def load_configuration(path: str | None) -> Config:
    """The configuration, checked against the registered engines (REQ-ENG-004)."""
    return load_config(path, registry.known_ids())


def engine_states(config: Config) -> list[tuple[str, str]]:
    """Each engine: active, inactive_no_key, inactive_no_endpoint or disabled (REQ-OPS-003)."""
    states = []
    for driver, enabled in registry.configured_engines(config):
        if not enabled:
            state = "disabled"
        elif driver.active:
            state = "active"
        else:
            state = "inactive_no_key" if driver.requires_key else "inactive_no_endpoint"
        states.append((driver.id, state))
    return states
