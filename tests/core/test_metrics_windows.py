"""The latency windows and histograms each observation lands in (core/metrics.py)."""

from __future__ import annotations

import statistics

import pytest

from rypsok.core import limits
from rypsok.core.metrics import Metrics


@pytest.mark.req("REQ-STATUS-001")
def test_the_engine_median_is_of_the_last_window_and_the_histogram_of_all() -> None:
    """REQ-STATUS-001: median of the last LIM-S11 requests; every request stays counted."""
    metrics = Metrics()
    slow = limits.LATENCY_WINDOW // 2 + 1  # a majority of slow ones, then pushed out
    for _ in range(slow):
        metrics.engine_finished("wikipedia", 900.0, None)
    for _ in range(limits.LATENCY_WINDOW):
        metrics.engine_finished("wikipedia", 10.0, None)
    metrics.engine_finished("arxiv", 50.0, "timeout")
    assert metrics.median_engine_latency_ms("wikipedia") == 10
    assert len(metrics.engine_latency_ms["wikipedia"]) == limits.LATENCY_WINDOW
    histogram = metrics.engine_histograms["wikipedia"]
    assert histogram.count == slow + limits.LATENCY_WINDOW
    assert histogram.total_ms == 900.0 * slow + 10.0 * limits.LATENCY_WINDOW
    assert metrics.engine_histograms["arxiv"].count == 1
    assert metrics.engine_errors[("arxiv", "timeout")] == 1


@pytest.mark.req("REQ-OBS-008")
def test_call_windows_keep_the_last_thousand_and_histograms_every_call() -> None:
    """REQ-OBS-008: the summary's call median is of the last 1,000 calls of each tool."""
    metrics = Metrics()
    for i in range(1_005):
        metrics.call_finished("web_search", float(i), None)
    metrics.call_finished("web_fetch", 3.0, "invalid_request")
    metrics.queue_waited("arxiv", 2.0)
    metrics.queue_waited("arxiv", 4.0)
    window = metrics.call_latency_ms["web_search"]
    assert len(window) == 1_000 and window[0] == 5.0
    assert metrics.summary()["call_median_ms"]["web_search"] == round(statistics.median(window))
    assert round(statistics.median(window)) == 504  # 5..1004, not 0..1004
    assert metrics.call_histograms["web_search"].count == 1_005
    assert metrics.call_histograms["web_fetch"].count == 1
    assert metrics.queue_wait_histograms["arxiv"].count == 2
    assert metrics.queue_wait_histograms["arxiv"].total_ms == 6.0
