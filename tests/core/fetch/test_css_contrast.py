"""Text the colour of a background that another rule declares is hidden text.

REQ-CTX-005: hidden text never reaches the caller; text whose colour equals its
declared background is hidden, whichever rules or style attributes declare the
two. REQ-SEC-003: visible text is never rewritten, so text that a more precise
rule recolours, or that lies on a background the check cannot know (an image,
a hover state, print media, a sheet it does not read), stays.

A defect found in session 12: a rule setting only a text colour was never read
unless the colour was white or transparent, so `body{background:#111}` with
`.note{color:#111}`, or a background in a style attribute with the text colour
in a sheet, let the text through. The page's palette (`contrast.py`) now makes
such rules read; the cascade decides as for any colour.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.colours import _Rgba
from rypsok.core.fetch.css_visibility.contrast import Palette, declared_colours, rule_colours
from rypsok.core.fetch.css_visibility.properties import _close, _Declared
from rypsok.core.fetch.parse import parse_bounded

SECRET = "SECRET-IN-THE-BACKGROUND-COLOUR"


def _visible_text(css: str, body: str, head: str = "") -> str:
    html = (
        f"<!doctype html><html><head>{head}<style>{css}</style></head>"
        f"<body>{body}<p>shown</p></body></html>"
    )
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split())


HIDDEN = {
    "two class rules": (
        ".bg{background:#123456} .fg{color:#123456}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "background-color longhand": (
        ".bg{background-color:#123456} .fg{color:#123456}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "dark body, text of its colour": (
        "body{background:#111;color:#eee} .x{color:#111}",
        '<p class="x">S</p>',
    ),
    "inherited text colour on a box": (
        "body{color:#123456} .box{background:#123456}",
        '<div class="box"><p>S</p></div>',
    ),
    "background in a style attribute": (
        ".fg{color:#123456}",
        '<div style="background:#123456"><p class="fg">S</p></div>',
    ),
    "two sheets": (
        ".bg{background:#abcdef}</style><style>.fg{color:#abcdef}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "descendant selector": (
        ".bg{background:#333} .bg b{color:#333}",
        '<div class="bg"><span><b>S</b></span></div>',
    ),
    "near, not equal": (
        ".bg{background:#808080} .fg{color:#848484}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "named against hex": (
        ".bg{background-color:navy} .fg{color:#000080}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "rgb and hsl": (
        ".bg{background:rgb(0, 128, 0)} .fg{color:hsl(120, 100%, 25%)}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "comment in the property": (
        ".bg{background:#222} .fg{color/**/:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "escaped property name": (
        ".bg{background:#222} .fg{c\\olor:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "background inside @media screen": (
        "@media screen{.bg{background:#222}} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "important over a style attribute": (
        ".bg{background:#222} .fg{color:#222 !important}",
        '<div class="bg"><p class="fg" style="color:red">S</p></div>',
    ),
    "id rules": (
        "#b{background:#5a5a5a} #f{color:#5b5b5b}",
        '<div id="b"><p><span id="f">S</span></p></div>',
    ),
}

SHOWN = {
    "button text on its own background": (
        ".btn{background:#007bff;color:#fff} a{color:#007bff}",
        '<a class="btn">S</a> <a href="x">link</a>',
    ),
    "links recoloured inside a card": (
        ".card{background:#007bff} a{color:#007bff} .card a{color:#fff}",
        '<div class="card"><a>S</a></div>',
    ),
    "a class recolours the link": (
        ".card{background:#007bff} a{color:#007bff} .l{color:#fff}",
        '<div class="card"><a class="l">S</a></div>',
    ),
    "readable dark theme": ("body{background:#111;color:#eee} .x{color:#111}", "<p>S</p>"),
    "box with its own text colour": (
        "body{color:#123456} .box{background:#123456;color:#fff}",
        '<div class="box"><p>S</p></div>',
    ),
    "child recoloured in a box": (
        "body{color:#123456} .box{background:#123456} .t{color:#fff}",
        '<div class="box"><p class="t">S</p></div>',
    ),
    "background image over the colour": (
        ".bg{background:#222 url(x.png)} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "gradient background": (
        ".bg{background:linear-gradient(#222,#fff)} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "background on another element": (
        ".bg{background:#222} .fg{color:#222}",
        '<div class="bg">a</div><p class="fg">S</p>',
    ),
    "background for print only": (
        "@media print{.bg{background:#222}} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "background on hover only": (
        ".bg:hover{background:#222} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "translucent background": (
        ".bg{background:rgba(34,34,34,.5)} .fg{color:#222}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
    "far enough apart": (
        ".bg{background:#808080} .fg{color:#8a8a8a}",
        '<div class="bg"><p class="fg">S</p></div>',
    ),
}


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_req_ctx_005_text_on_a_background_of_its_colour_is_removed(case: str) -> None:
    css, body = HIDDEN[case]
    text = _visible_text(css, body.replace(">S<", f">{SECRET}<"))
    assert SECRET not in text
    assert "shown" in text


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize("case", sorted(SHOWN))
def test_req_sec_003_readable_colours_stay(case: str) -> None:
    css, body = SHOWN[case]
    text = _visible_text(css, body.replace(">S<", f">{SECRET}<"))
    assert SECRET in text


@pytest.mark.req("REQ-SEC-003")
def test_req_sec_003_a_page_with_an_unread_sheet_keeps_its_sheet_colours() -> None:
    """An external sheet may give any box between the text and the declared background
    one of its own (a footer's white on dark blue inside a white body): sheet colours
    are not compared across rules there (docs/hidden-text.md)."""
    css = "body{background:#fff} .footer-note{color:#fff}"
    head = '<link rel="stylesheet" href="/site.css">'
    text = _visible_text(css, f'<footer><p class="footer-note">{SECRET}</p></footer>', head)
    assert SECRET in text


_channel = st.integers(min_value=0, max_value=255)
_colour = st.builds(
    lambda r, g, b: _Rgba(r / 255, g / 255, b / 255, 1.0), _channel, _channel, _channel
)


def _hex(colour: _Rgba) -> str:
    return "#" + "".join(f"{round(channel * 255):02x}" for channel in colour[:3])


def _declared(prop: str, colour: _Rgba) -> tuple[_Declared, ...]:
    return (_Declared(False, prop, colour, 0),)


@settings(max_examples=400, deadline=None)
@given(_colour, st.integers(-8, 8), st.integers(-8, 8), st.integers(-8, 8))
def test_req_ctx_005_the_palette_never_misses_a_close_pair(
    background: _Rgba, dr: int, dg: int, db: int
) -> None:
    """The coarse buckets are a filter: every pair `_close` calls the same gets through."""

    def shift(value: float, delta: int) -> float:
        return min(255, max(0, round(value * 255) + delta)) / 255

    colour = _Rgba(
        shift(background.red, dr), shift(background.green, dg), shift(background.blue, db), 1.0
    )
    assume(_close(colour, background))  # at exactly 8 levels, float rounding decides
    backgrounds = Palette()
    backgrounds.add(declared_colours(_declared("background", background)))
    assert backgrounds.contrasts(declared_colours(_declared("color", colour)))
    assert backgrounds.contrasts(rule_colours(f".x{{color:{_hex(colour)}}}"))
    colours = Palette()
    colours.add(declared_colours(_declared("color", colour)))
    assert colours.contrasts(declared_colours(_declared("background", background)))
    assert colours.contrasts(rule_colours(f".x{{background:{_hex(background)}}}"))


def test_req_ctx_005_rule_colours_read_from_the_text_match_the_parsed_values() -> None:
    found = rule_colours(".a { COLOR : #123456 ; background: rgb(1 2 3) url(x.png) }")
    assert found.colours and not found.backgrounds  # an image makes the background unknown
    assert rule_colours(".a{border-color:#123456;outline-color:red}") == rule_colours(".a{}")
    assert rule_colours(".a{color:transparent}").colours == frozenset()
    assert Palette().contrasts(rule_colours(".a{color:#000;background:#fff}")) is False
