"""GET /metrics: the process's counters in the Prometheus text format (REQ-OBS-008, DR-011).

Read at scrape time from `Services.metrics`, the circuits and the listener's
counters, so nothing is counted twice. Every label value comes from a fixed
vocabulary or the configuration: tool names, error kinds, refusal reasons,
engine ids, failure classes, circuit states, cache events, shared-state
operations, listener reasons. No label carries a query, URL, key, header or
any other caller-supplied text; caller names only when the operator turns
`[http] metrics_caller_labels` on, and then at most CALLERS_COUNTED of them.
Only callers whose scope has `metrics` are answered; others get 403.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from starlette.authentication import AuthCredentials
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from rypsok.core.metrics import LATENCY_BUCKETS_MS, Histogram
from rypsok.core.services import Services
from rypsok.mcp.http.wire import ListenerCounters, jsonrpc_error

CIRCUIT_STATES = ("closed", "open", "half_open", "disabled")
_SCOPE_REFUSED = -32013


def _buckets(histogram: Histogram) -> list[tuple[str, float]]:
    bounds = [
        (f"{bound / 1000:g}", float(n))
        for bound, n in zip(LATENCY_BUCKETS_MS, histogram.buckets, strict=True)
    ]
    return [*bounds, ("+Inf", float(histogram.count))]


class RypsokCollector(Collector):
    """The metric families, built from the live counters at each scrape."""

    def __init__(self, services: Services, counters: ListenerCounters) -> None:
        self.services = services
        self.counters = counters

    def collect(self) -> Iterator[Metric]:
        metrics = self.services.metrics
        calls = CounterMetricFamily("rypsok_calls", "Tool calls finished", labels=["tool"])
        for tool, count in sorted(metrics.calls.items()):
            calls.add_metric([tool], count)
        yield calls
        errors = CounterMetricFamily(
            "rypsok_call_errors", "Tool calls that ended in an error", labels=["tool", "kind"]
        )
        for (tool, kind), count in sorted(metrics.call_errors_by_tool.items()):
            errors.add_metric([tool, kind], count)
        yield errors
        refused = CounterMetricFamily(
            "rypsok_refused_calls", "Calls refused before running", labels=["tool", "reason"]
        )
        for (tool, reason), count in sorted(metrics.refused_calls.items()):
            refused.add_metric([tool, reason], count)
        yield refused
        yield from self._latencies()
        yield from self._engines()
        yield from self._shared_state()
        yield self._listener()
        if self.services.config.http.metrics_caller_labels:
            yield from self._callers()

    def _latencies(self) -> Iterator[Metric]:
        metrics = self.services.metrics
        call = HistogramMetricFamily(
            "rypsok_call_duration_seconds", "Tool call latency", labels=["tool"]
        )
        for tool, histogram in sorted(metrics.call_histograms.items()):
            call.add_metric([tool], _buckets(histogram), histogram.total_ms / 1000)
        yield call
        engine = HistogramMetricFamily(
            "rypsok_engine_request_duration_seconds", "Engine request latency", labels=["engine"]
        )
        for engine_id, histogram in sorted(metrics.engine_histograms.items()):
            engine.add_metric([engine_id], _buckets(histogram), histogram.total_ms / 1000)
        yield engine
        waits = HistogramMetricFamily(
            "rypsok_engine_queue_wait_seconds",
            "Time a request waited in its engine's queue for its turn",
            labels=["engine"],
        )
        for engine_id, histogram in sorted(metrics.queue_wait_histograms.items()):
            waits.add_metric([engine_id], _buckets(histogram), histogram.total_ms / 1000)
        yield waits

    def _engines(self) -> Iterator[Metric]:
        metrics = self.services.metrics
        failures = CounterMetricFamily(
            "rypsok_engine_errors",
            "Engine requests that failed, by class",
            labels=["engine", "class"],
        )
        for (engine_id, failure), count in sorted(metrics.engine_errors.items()):
            failures.add_metric([engine_id, failure], count)
        yield failures
        circuits = GaugeMetricFamily(
            "rypsok_engine_circuit_state", "1 for each engine's current circuit state",
            labels=["engine", "state"],
        )  # fmt: skip
        for engine_id, current in sorted(self.services.circuit_states().items()):
            for state in CIRCUIT_STATES:
                circuits.add_metric([engine_id, state], 1.0 if state == current else 0.0)
        yield circuits
        transitions = CounterMetricFamily(
            "rypsok_engine_circuit_transitions",
            "Circuit transitions, by engine and the state entered",
            labels=["engine", "state"],
        )
        for (engine_id, state), count in sorted(metrics.circuit_transitions.items()):
            transitions.add_metric([engine_id, state], count)
        yield transitions

    def _shared_state(self) -> Iterator[Metric]:
        metrics = self.services.metrics
        cache = CounterMetricFamily(
            "rypsok_cache_events",
            "Answer cache lookups (hit, miss) and answers stored, by engine",
            labels=["engine", "event"],
        )
        for (engine_id, event), count in sorted(metrics.cache_events.items()):
            cache.add_metric([engine_id, event], count)
        yield cache
        fallbacks = CounterMetricFamily(
            "rypsok_shared_state_fallbacks",
            "Redis operations that fell back to this instance's own state",
            labels=["operation"],
        )
        for operation, count in sorted(metrics.shared_state_fallbacks.items()):
            fallbacks.add_metric([operation], count)
        yield fallbacks

    def _callers(self) -> Iterator[Metric]:
        """Per-caller series: only when the operator turns them on (docs/rfc-011-metrics.md)."""
        metrics = self.services.metrics
        calls = CounterMetricFamily(
            "rypsok_caller_calls", "Tool calls finished, by caller", labels=["caller", "tool"]
        )
        for (caller, tool), count in sorted(metrics.calls_by_caller.items()):
            calls.add_metric([caller, tool], count)
        yield calls
        refused = CounterMetricFamily(
            "rypsok_caller_refused_calls",
            "Calls refused before running, by caller",
            labels=["caller", "tool", "reason"],
        )
        for (caller, tool, reason), count in sorted(metrics.refused_by_caller.items()):
            refused.add_metric([caller, tool, reason], count)
        yield refused

    def _listener(self) -> Metric:
        family = CounterMetricFamily(
            "rypsok_listener_events", "What the HTTP listener refused or ended", labels=["reason"]
        )
        for item in dataclasses.fields(self.counters):
            family.add_metric([item.name], getattr(self.counters, item.name))
        return family


class MetricsEndpoint:
    """`GET metrics_path` for an authenticated caller whose scope has `metrics`."""

    def __init__(
        self, app: ASGIApp, path: str, services: Services, counters: ListenerCounters
    ) -> None:
        self.app = app
        self.path = path
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(RypsokCollector(services, counters))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        auth = scope.get("auth")
        granted = auth.scopes if isinstance(auth, AuthCredentials) else []
        if "metrics" not in granted:
            message = "This caller's scope does not admit the metrics: it needs the scope metrics."
            challenge = 'Bearer realm="rypsok", error="insufficient_scope", scope="metrics"'
            headers = {"www-authenticate": challenge, "cache-control": "no-store"}
            await jsonrpc_error(_SCOPE_REFUSED, message, 403, headers)(scope, receive, send)
            return
        if scope["method"] != "GET":
            await Response(status_code=405, headers={"allow": "GET"})(scope, receive, send)
            return
        body = generate_latest(self.registry)
        await Response(body, headers={"content-type": CONTENT_TYPE_LATEST})(scope, receive, send)
