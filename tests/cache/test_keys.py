"""The names and seals of Redis keys (issue 12): pure functions, no Redis needed."""

from __future__ import annotations

import dataclasses

import pytest

from rypsok.core.cache.keys import KeyLayout, Sealer, hits_from_bytes, hits_to_bytes
from rypsok.core.engines.base import Category, RawHit, SafeSearch, SearchParams, TimeRange

SECRET = b"synthetic-hmac-key-for-tests-0123456789"
PARAMS = SearchParams(query="quantum entanglement", category=Category.SCIENCE)


@pytest.mark.req("REQ-CACHE-003", "REQ-CACHE-004")
def test_every_parameter_caller_and_engine_changes_the_entry_name() -> None:
    """REQ-CACHE-003, REQ-CACHE-004: an entry is valid only for what it was produced for."""
    layout = KeyLayout("rypsok:", SECRET)
    base = layout.entry("caller:a", "arxiv", "https://export.arxiv.org/api/query", PARAMS)
    variants = [
        layout.entry("caller:b", "arxiv", "https://export.arxiv.org/api/query", PARAMS),
        layout.entry("caller:a", "crossref", "https://export.arxiv.org/api/query", PARAMS),
        layout.entry("caller:a", "arxiv", "http://127.0.0.1:1/api/query", PARAMS),
        KeyLayout("other:", SECRET).entry("caller:a", "arxiv",
                                          "https://export.arxiv.org/api/query", PARAMS),
        KeyLayout("rypsok:", SECRET[::-1]).entry("caller:a", "arxiv",
                                                 "https://export.arxiv.org/api/query", PARAMS),
    ]  # fmt: skip
    changes = {
        "query": "quantum entanglement ",
        "category": Category.GENERAL,
        "language": "de",
        "time_range": TimeRange.WEEK,
        "results": 5,
        "region": "DE",
        "safe_search": SafeSearch.STRICT,
        "contact": "ops@example.org",
    }
    assert set(changes) == {f.name for f in dataclasses.fields(SearchParams)}
    for name, value in changes.items():
        changed = dataclasses.replace(PARAMS, **{name: value})
        variants.append(layout.entry("caller:a", "arxiv", "https://export.arxiv.org/api/query",
                                     changed))  # fmt: skip
    assert len({base, *variants}) == len(variants) + 1
    assert base.startswith("rypsok:c:") and len(base) == len("rypsok:c:") + 64
    assert "quantum" not in base and "arxiv" not in base


@pytest.mark.req("REQ-CACHE-006")
def test_a_sealed_value_opens_only_under_its_own_name_and_key() -> None:
    """REQ-CACHE-006: a value moved to another key, or sealed under another secret, is a miss."""
    hits = (RawHit(rank=1, url="https://example.org/a", title="T", snippet="S", date=None),)
    sealer = Sealer(SECRET)
    sealed = sealer.seal("rypsok:c:one", hits_to_bytes(hits))
    assert b"example.org" not in sealed
    opened = sealer.open("rypsok:c:one", sealed)
    assert opened is not None and hits_from_bytes(opened) == hits
    assert sealer.open("rypsok:c:two", sealed) is None
    assert Sealer(SECRET[::-1]).open("rypsok:c:one", sealed) is None
    assert sealer.open("rypsok:c:one", b"short") is None
    assert hits_from_bytes(b"not json") is None and hits_from_bytes(b"[[1]]") is None
