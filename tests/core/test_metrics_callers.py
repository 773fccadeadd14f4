"""Per-caller counts stay bounded: past CALLERS_COUNTED names every caller is `(other)`."""

from __future__ import annotations

import pytest

from rypsok.core.metrics import CALLERS_COUNTED, OTHER_CALLERS, Metrics


@pytest.mark.req("REQ-OBS-008")
def test_callers_past_the_bound_share_one_series() -> None:
    """REQ-OBS-008: an issuer minting subjects cannot grow the per-caller series without bound."""
    metrics = Metrics()
    for n in range(CALLERS_COUNTED + 50):
        metrics.call_finished("web_search", 1.0, None, f"subject-{n}")
    metrics.refused("web_fetch", "scheme", "subject-0")  # a counted name keeps its series
    metrics.refused("web_fetch", "scheme", "late-comer")
    callers = {caller for caller, _ in metrics.calls_by_caller}
    assert len(callers) == CALLERS_COUNTED + 1
    assert metrics.calls_by_caller[(OTHER_CALLERS, "web_search")] == 50
    assert metrics.refused_by_caller == {
        ("subject-0", "web_fetch", "scheme"): 1,
        (OTHER_CALLERS, "web_fetch", "scheme"): 1,
    }
    assert sum(metrics.calls.values()) == CALLERS_COUNTED + 50
