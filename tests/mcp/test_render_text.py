"""The text form of an answer: the encoder made once writes what the library's encoder writes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.mcp.server import _TEXT

_LIBRARY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))

# Every JSON value a `model_dump(mode="json")` can hold, with the awkward text
# (control characters, quotes, backslashes, non-BMP, lone surrogates) and floats.
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=40,
)


@pytest.mark.req("REQ-MCP-011")
@settings(max_examples=400, deadline=None)
@given(payload=st.dictionaries(st.text(), _VALUES, max_size=6))
def test_the_text_is_the_library_encoders(payload: dict[str, Any]) -> None:
    """REQ-MCP-011: the JSON text of the structured content, byte for byte as before."""
    assert _TEXT(payload) == _LIBRARY.encode(payload)


@pytest.mark.req("REQ-MCP-011")
def test_a_search_answer_is_written_as_before() -> None:
    """REQ-MCP-011: a search-shaped payload with every kind of text the boundary lets through."""
    payload = {
        "outcome": "ok",
        "notices": [{"code": "markup_removed", "message": "Markup was removed from 7 result(s)."}],
        "results": [
            {
                "title": 'Zürich \u2028 "quoted" \\ back \U0001f600 \x7f',
                "url": "https://de.wikipedia.org/wiki/Z%C3%BCrich",
                "snippet": "tab\there, newline\nthere, nul\x00",
                "date": "2026-09-14",
                "engines": ["wikipedia", "brave"],
            }
        ],
        "ratio": math.pi,
        "big": 10**30,
    }
    assert _TEXT(payload) == _LIBRARY.encode(payload)


@pytest.mark.req("REQ-MCP-011")
def test_what_is_not_json_is_refused_as_before() -> None:
    """REQ-MCP-011: a value JSON has no form for fails as the library's encoder fails."""
    with pytest.raises(TypeError):
        _LIBRARY.encode({"value": object()})
    with pytest.raises(TypeError):
        _TEXT({"value": object()})
    with pytest.raises(TypeError):
        _TEXT({("tuple", "key"): 1})
