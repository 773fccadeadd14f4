"""Answers read in one pass (`json_model`) are read as the two steps read them.

The drivers below validate an answer from its bytes in one pass and fall back
to `json.loads` and `validate` when that pass refuses it. Each is parsed twice
here: as shipped, and with the one pass refusing every body, which leaves the
two steps that decided every answer before. Both must give the same hits or
the same failure class, for every recorded answer and for answers mutated
from them (values replaced by arbitrary JSON, keys dropped, bytes changed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from rypsok.core.engines import (
    brave,
    common,
    marginalia,
    mediawiki,
    mojeek,
    searxng,
    wikidata,
    wikipedia,
)
from rypsok.core.engines.base import (
    Driver,
    EngineFailure,
    EngineResponse,
    EngineSettings,
    FailureClass,
    RawHit,
)
from tests.core.engines.driver_support import JSON
from tests.fakes.provider_server import fixture_path

# engine -> (driver, the answer model it reads in one pass)
_DRIVERS: dict[str, tuple[Driver, type[BaseModel]]] = {
    "wikipedia": (wikipedia.Wikipedia(), wikipedia._Answer),
    "wikidata": (wikidata.Wikidata(), wikidata._Answer),
    "brave": (brave.Brave(EngineSettings(api_key="k")), brave._Answer),
    "mojeek": (mojeek.Mojeek(EngineSettings(api_key="k")), mojeek._Envelope),
    "marginalia": (marginalia.Marginalia(EngineSettings(api_key="k")), marginalia._Answer),
    "searxng": (
        searxng.SearXNG(EngineSettings(endpoint="http://127.0.0.1:1/search")),
        searxng._Answer,
    ),
}
# Every module that calls `json_model` by the name it imported.
_CALLERS = (common, mediawiki, brave)


def _fixtures(engine: str) -> list[bytes]:
    directory = fixture_path(engine, "ok.json").parent
    return [path.read_bytes() for path in sorted(Path(directory).iterdir())]


_BODIES = {engine: _fixtures(engine) for engine in _DRIVERS}

Outcome = tuple[str, object]


def _outcome(driver: Driver, response: EngineResponse) -> Outcome:
    try:
        hits: list[RawHit] = driver.parse(response)
    except EngineFailure as failure:
        return "failure", (failure.failure_class, failure.retry_after_ms)
    return "hits", hits


def _refused(model: type[BaseModel], response: EngineResponse) -> None:
    common._raise_unless_json(response)  # the label is still checked first


@contextmanager
def _two_steps_only() -> Iterator[None]:
    with ExitStack() as stack:
        for module in _CALLERS:
            stack.enter_context(mock.patch.object(module, "json_model", _refused))
        yield


def _both(engine: str, body: bytes) -> tuple[Outcome, Outcome]:
    driver, _ = _DRIVERS[engine]
    response = EngineResponse(200, {"content-type": JSON}, body)
    one_pass = _outcome(driver, response)
    with _two_steps_only():
        two_steps = _outcome(driver, response)
    return one_pass, two_steps


@pytest.mark.req("REQ-ENG-006", "REQ-ENG-012")
@pytest.mark.parametrize(
    ("engine", "body"),
    [(engine, body) for engine, bodies in _BODIES.items() for body in bodies],
)
def test_every_recorded_answer_reads_the_same_in_one_pass(engine: str, body: bytes) -> None:
    """REQ-ENG-006, REQ-ENG-012: the same raw hits, or the same failure class, either way."""
    one_pass, two_steps = _both(engine, body)
    assert one_pass == two_steps


@pytest.mark.req("REQ-ENG-012")
@pytest.mark.parametrize("engine", sorted(_DRIVERS))
def test_the_one_pass_is_taken_for_an_ordinary_answer(engine: str) -> None:
    """REQ-ENG-012: a recorded `ok` answer is read in one pass, not by the fallback."""
    _, model = _DRIVERS[engine]
    response = EngineResponse(
        200, {"content-type": JSON}, fixture_path(engine, "ok.json").read_bytes()
    )
    assert common.json_model(model, response) is not None


@pytest.mark.req("REQ-ENG-006", "REQ-ENG-012")
@pytest.mark.parametrize(
    "prefix_or_encoding",
    [b"\xef\xbb\xbf", "utf-16", "utf-32"],
)
def test_bodies_the_one_pass_refuses_are_still_read_by_the_two_steps(
    prefix_or_encoding: bytes | str,
) -> None:
    """REQ-ENG-006, REQ-ENG-012: a BOM or UTF-16/32, which json.loads reads, still gives hits."""
    ok = fixture_path("wikipedia", "ok.json").read_bytes()
    if isinstance(prefix_or_encoding, bytes):
        body = prefix_or_encoding + ok
    else:
        body = ok.decode("utf-8").encode(prefix_or_encoding)
    response = EngineResponse(200, {"content-type": JSON}, body)
    assert common.json_model(wikipedia._Answer, response) is None
    one_pass, two_steps = _both("wikipedia", body)
    assert one_pass == two_steps == _both("wikipedia", ok)[0]
    assert one_pass[0] == "hits" and one_pass[1]


@pytest.mark.req("REQ-ENG-006")
def test_a_mediawiki_error_next_to_results_is_still_the_error() -> None:
    """REQ-ENG-006: an `error` object wins over hits in one pass too (even a null one)."""
    ok = json.loads(fixture_path("wikipedia", "ok.json").read_bytes())
    for error, failure_class in (
        ({"code": "ratelimited"}, FailureClass.RATE_LIMITED),
        ({"code": "badvalue"}, FailureClass.REQUEST_FAILURE),
        (None, FailureClass.PARSE_FAILURE),
    ):
        body = json.dumps({**ok, "error": error}).encode()
        one_pass, two_steps = _both("wikipedia", body)
        assert one_pass == two_steps == ("failure", (failure_class, None))


# --- answers mutated from the recorded ones -----------------------------------------------

_TRICKY_TEXT = st.lists(
    st.sampled_from(["a", " ", "<b>", "&amp;", "é", "\u200b", "\U0001f600", '"', "\\", "\x00"]),
    max_size=6,
).map("".join)
_JSON_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        _TRICKY_TEXT,
        st.sampled_from(
            [
                "search",
                "news",
                "OK",
                "ERROR: Daily Limit Reached",
                "Q42",
                "en",
                "https://x.example/",
            ]
        ),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.sampled_from(
                [
                    "title",
                    "url",
                    "snippet",
                    "description",
                    "type",
                    "results",
                    "web",
                    "error",
                    "code",
                    "id",
                    "label",
                ]
            ),
            children,
            max_size=3,
        ),
    ),
    max_leaves=8,
)


def _paths(document: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    yield prefix
    if isinstance(document, dict):
        for key, value in document.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            yield from _paths(value, (*prefix, index))


def _replaced(document: Any, path: tuple[Any, ...], value: Any, drop: bool) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(document, dict):
        copy = dict(document)
        if drop and not rest:
            del copy[head]
        else:
            copy[head] = _replaced(document[head], rest, value, drop)
        return copy
    copy_list = list(document)
    if drop and not rest:
        del copy_list[head]
    else:
        copy_list[head] = _replaced(document[head], rest, value, drop)
    return copy_list


@st.composite
def _mutated_answers(draw: st.DrawFn) -> tuple[str, bytes]:
    engine = draw(st.sampled_from(sorted(_DRIVERS)))
    body = draw(st.sampled_from(_BODIES[engine]))
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if document is not None and draw(st.booleans()):
        path = draw(st.sampled_from(list(_paths(document))))
        value = draw(_JSON_VALUES)
        drop = bool(path) and draw(st.booleans())
        document = _replaced(document, path, value, drop)
        body = json.dumps(document, ensure_ascii=draw(st.booleans())).encode()
    if draw(st.integers(0, 3)) == 0:  # a byte edit: truncation, a stray byte, a BOM
        at = draw(st.integers(0, len(body)))
        inserted = draw(
            st.sampled_from([b"", b"\xff", b"\x00", b"\\", b'"', b",", b"\xef\xbb\xbf"])
        )
        cut = draw(st.integers(0, 2))
        body = body[:at] + inserted + body[at + cut :]
    return engine, body


@pytest.mark.req("REQ-ENG-006", "REQ-ENG-012")
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutated_answers())
def test_mutated_answers_read_the_same_in_one_pass(answer: tuple[str, bytes]) -> None:
    """REQ-ENG-006, REQ-ENG-012: whatever the answer holds, one pass and two steps agree."""
    engine, body = answer
    one_pass, two_steps = _both(engine, body)
    assert one_pass == two_steps
