"""An abandoned extraction stops after the parse too: hidden text, noise and rendering.

The pipeline sets the extraction's cancel flag when the call gives up
(LIM-F5); the parse checks it per slice, and the stages after it check it
every `CANCEL_CHECK_INTERVAL` elements or rules. Promptness is counted in
work (elements opened, rules parsed), not in time, so the tests hold on a
loaded machine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from rypsok.core import limits
from rypsok.core.fetch import css_visibility, parse
from rypsok.core.fetch.css_visibility import engine
from rypsok.core.fetch.extract import extract_html, markdown, noise
from rypsok.core.fetch.parse import (
    CANCEL_CHECK_INTERVAL,
    ParseCancelled,
    cancellable,
    parse_bounded,
)

BASE = "https://site.example/page.html"
PARAGRAPHS = 20 * CANCEL_CHECK_INTERVAL


def paragraphs_page(head: str = "") -> str:
    body = "<p>A paragraph of the article, with a comma, and some words.</p>" * PARAGRAPHS
    return f"<html><head><title>T</title>{head}</head><body><main>{body}</main></body></html>"


def counting(target: Callable[..., Any], counts: list[int]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        counts.append(1)
        return target(*args, **kwargs)

    return wrapper


def parsed(html: str) -> Any:
    return parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH)


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012")
def test_a_flag_set_after_the_parse_stops_the_extraction_within_an_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PAGE-008: cancelled once parsing is done, the noise walk stops within one interval."""
    flag = threading.Event()

    def parse_then_cancel(html: str, **bounds: int) -> parse.ParsedTree:
        tree = parse_bounded(html, **bounds)
        flag.set()  # the call gives up while the page is being extracted
        return tree

    opened: list[int] = []
    monkeypatch.setattr("rypsok.core.fetch.extract.parse_bounded", parse_then_cancel)
    monkeypatch.setattr(noise, "_open", counting(noise._open, opened))
    with cancellable(flag), pytest.raises(ParseCancelled):
        extract_html(paragraphs_page(), base_url=BASE)
    assert 0 < len(opened) <= CANCEL_CHECK_INTERVAL  # of 20 intervals' worth of elements


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012")
def test_the_markdown_walk_stops_within_an_interval_once_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PAGE-008: rendering checks the flag too, so a large page stops mid-render."""
    tree = parsed(paragraphs_page())
    analysis = noise.analyse(tree.root)
    entered: list[int] = []
    monkeypatch.setattr(markdown.Markdown, "_enter", counting(markdown.Markdown._enter, entered))
    flag = threading.Event()
    flag.set()
    renderer = markdown.Markdown(analysis, BASE, 10 * PARAGRAPHS * 100)
    with cancellable(flag), pytest.raises(ParseCancelled):
        renderer.render([tree.root])
    assert 0 < len(entered) <= CANCEL_CHECK_INTERVAL


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012", "REQ-CTX-005")
def test_the_hidden_text_engine_stops_before_reading_rules_once_cancelled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PAGE-008: with the flag set, drop_hidden parses no rule and matches no selector;
    without it, the same page is checked in full (so the counters can see work)."""
    sheet = "".join(f".c{n}{{display:none}}" for n in range(1_500))
    html = paragraphs_page(f"<style>{sheet}</style>").replace(
        "<main>", "<main>" + "".join(f"<p class='c{n}'>secret</p>" for n in range(1_500)), 1
    )
    rules: list[int] = []
    monkeypatch.setattr(engine, "_parse_chunk", counting(engine._parse_chunk, rules))
    flag = threading.Event()
    flag.set()
    with cancellable(flag), pytest.raises(ParseCancelled):
        css_visibility.drop_hidden(parsed(html).root)
    assert rules == []
    stats = css_visibility.drop_hidden(parsed(html).root)  # no flag: the work is there
    assert len(rules) == 1_500
    assert stats.elements_removed == 1_500


@pytest.mark.req("REQ-PAGE-008", "REQ-SEC-012", "REQ-CTX-005")
def test_the_hidden_text_engine_checks_the_flag_per_rule_it_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-PAGE-008: a flag set while hiding rules are matched stops at the next rule."""
    sheet = "".join(f".c{n}{{display:none}}" for n in range(200))
    html = paragraphs_page(f"<style>{sheet}</style>").replace(
        "<main>", "<main>" + "".join(f"<p class='c{n}'>secret</p>" for n in range(200)), 1
    )
    flag = threading.Event()
    matched: list[int] = []
    original = engine._Engine._matches

    def match_then_cancel(self: Any, selector: Any, interest: Any) -> Any:
        matched.append(1)
        flag.set()  # the call gives up after the first rule was matched
        return original(self, selector, interest)

    monkeypatch.setattr(engine._Engine, "_matches", match_then_cancel)
    with cancellable(flag), pytest.raises(ParseCancelled):
        css_visibility.drop_hidden(parsed(html).root)
    assert len(matched) == 1
