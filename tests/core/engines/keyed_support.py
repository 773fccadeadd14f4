"""Checks every keyed engine shares: inactive without its key, the key in one declared place."""

from __future__ import annotations

import json
from typing import Any

from rypsok.core.engines.base import Driver, EngineRequest, EngineSettings, SearchParams

KEY = "k3y-" + "Z9y8X7w6V5u4T3s2"  # synthetic


def assert_keyed(cls: type[Driver]) -> EngineRequest:
    """Inactive without a key; with one, the request carries it; returns that request."""
    assert cls.requires_key
    assert not cls().active
    driver = cls(EngineSettings(api_key=KEY))
    assert driver.active
    return driver.build_request(SearchParams(query="q"))


def body(request: EngineRequest) -> dict[str, Any]:
    """The JSON body of a POST request."""
    assert request.method == "POST"
    assert dict(request.headers)["Content-Type"] == "application/json"
    document: dict[str, Any] = json.loads(request.body)
    return document
