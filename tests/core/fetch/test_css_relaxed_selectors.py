"""Selectors beyond cssselect's reach still hide; they never re-show.

REQ-CTX-005: text a browser would not render never reaches the caller, also
when the hiding rule uses Selectors level 4 (`:not(.a, .b)`, `:is(.a .b)`,
`:nth-child(2 of .x)`, `:dir()`, `:defined`) or sits after `<!--` in a sheet.
REQ-SEC-003: visible text stays verbatim (a never-matching pseudo-class hides
nothing; a rewritten rule never recolours or re-shows).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.relax import rewrite_group
from rypsok.core.fetch.parse import parse_bounded

SECRET = "HIDDEN-BY-A-LEVEL-4-SELECTOR"
# The element under test: <p class="a" lang="en"> alone inside <div class="w">.
BODY = f'<div class="w"><p class="a" lang="en">{SECRET}</p></div>'


def _text_after_check(css: str, body: str = BODY) -> str:
    html = (
        f"<!doctype html><html><head><style>{css}</style></head>"
        f"<body>{body}<div>shown</div></body></html>"
    )
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split())


HIDING_RULES = [
    ".a:not(.b, .c) { display: none }",
    ".w :is(.x, .a) { display: none }",
    ".w :is(.q .r, .a) { visibility: hidden }",
    ".a:where(:not(.b)) { display: none }",
    ".a:is(:not(.z)) { opacity: 0 }",
    ".a:nth-child(1 of .a) { visibility: hidden }",
    ".a:nth-last-child(1 of p, .a) { font-size: 0 }",
    ".a:not(:focus-within) { display: none }",
    ".a:defined { opacity: 0 }",
    ".a:dir(ltr) { clip-path: inset(50%) }",
    ".a:-webkit-any(p, span) { display: none }",
    ".a:matches(p) { display: none }",
    ".a:not(.b, :defined) { display: none }",
    ".a:read-only { position: absolute; left: -10000px }",
    ":defined > .a { display: none }",
    ".w > :defined.a { display: none }",
    ".a::first-line { font-size: 0 }",
    "p.a:not(.b, .c):not(.d) { position: absolute; top: -9999px }",
]


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
@pytest.mark.parametrize("css", HIDING_RULES)
def test_a_level_4_hiding_rule_hides_its_text(css: str) -> None:
    """REQ-CTX-005: rules cssselect cannot read whole are rewritten, not dropped."""
    text = _text_after_check(css)
    assert SECRET not in text and "shown" in text


NEVER_MATCHING = [
    ".a:focus-within { display: none }",
    ":host .a { display: none }",
    ".a:focus-visible { display: none }",
    ".a:-ms-input-placeholder { display: none }",  # another engine's: dropped by browsers
    "x:-o-prefocus .a { display: none }",
    ".a::before { display: none }",  # the pseudo-element, not the element's text
    "@media screen { <!-- .a { display: none } }",  # CDO inside a block is not skipped
]


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
@pytest.mark.parametrize("css", NEVER_MATCHING)
def test_a_rule_that_never_matches_a_static_page_hides_nothing(css: str) -> None:
    """REQ-SEC-003: what a browser shows stays, rewritten rules or not."""
    assert _text_after_check(css) == f"{SECRET} shown"


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
@pytest.mark.parametrize(
    "css",
    [
        # A rewritten (superset) selector must never re-show: a browser keeps these hidden.
        ".a { display: none } .w .a:not(.b, .c) { display: block }",
        ".a { display: none } .a:is(.q .r, .a) { display: block !important }",
        ".a { visibility: hidden } .a:dir(ltr) { visibility: visible }",
        # Nor recolour: white on white stays hidden though a rewritten rule sets black.
        "body { background: #fff } .a { color: #fff } .a:nth-child(1 of .z) { color: #000 }",
    ],
)
def test_a_rewritten_selector_never_re_shows_or_recolours(css: str) -> None:
    """REQ-CTX-005: only a rewritten rule's hiding declarations apply."""
    assert SECRET not in _text_after_check(css)


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize(
    "css",
    [
        "<!-- .a { display: none } -->",
        "<!--\n.a { display: none }\n-->",
        ".y { color: red } --> .a { display: none }",
        "<!-- .y { margin: 0 } <!-- .a { visibility: hidden } -->",
        "<!--\n@media screen { .a { display: none } }\n-->",
    ],
)
def test_markup_comment_marks_between_rules_are_skipped(css: str) -> None:
    """REQ-CTX-005: `<style><!-- ... --></style>`, a legacy form, still hides."""
    text = _text_after_check(css)
    assert SECRET not in text and "shown" in text


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize(
    ("group", "expected"),
    [
        (".a:not(.b, .c)", [(".a:not(.b):not(.c)", True, 0)]),
        (".a:not(.b, :focus-within), .z", [(".a:not(.b)", True, 1), (".z", False, 0)]),
        (".a > :defined p", [(".a>* p", True, 1)]),
        (":focus-within .a, :host", []),
        ("> p:defined", []),
        ("p::before", []),
    ],
)
def test_rewrites_keep_what_they_can_and_count_what_they_leave(
    group: str, expected: list[tuple[str, bool, int]]
) -> None:
    """REQ-CTX-005: the rewriting itself, on the forms it handles."""
    assert [tuple(r) for r in rewrite_group(group)] == expected


# Conditions that hold for the element under test in a browser, which cssselect
# cannot read (alone or in these combinations).
_TRUE_CONDITIONS = st.sampled_from(
    [
        ":not(.b, .c)", ":is(.a, .q .r)", ":where(p)", ":not(:focus-within)",
        ":nth-child(1 of .a)", ":defined", ":dir(ltr)", ":-webkit-any(p, span)",
        ":is(:not(.z))", ":read-only", ":where(:not(.q), .r)", ":lang(en)", ":first-child",
        ".a", ":not(#x)",
    ]
)  # fmt: skip
_HIDING = st.sampled_from(
    [
        "display: none", "visibility: hidden", "opacity: 0", "font-size: 0",
        "clip-path: inset(50%)", "position: absolute; left: -10000px",
        "transform: scale(0)", "display: none !important",
    ]
)  # fmt: skip
_PREFIXES = st.sampled_from(["", ".w ", ".w > ", "div ", ":is(div) ", "body :defined > "])


@pytest.mark.req("REQ-CTX-005", "REQ-SEC-003")
@settings(max_examples=300, deadline=None, database=None)
@given(
    prefix=_PREFIXES,
    conditions=st.lists(_TRUE_CONDITIONS, min_size=1, max_size=3),
    hiding=_HIDING,
    decoy=st.booleans(),
)
def test_any_true_level_4_selector_hides_and_shows_the_rest(
    prefix: str, conditions: list[str], hiding: str, decoy: bool
) -> None:
    """REQ-CTX-005, REQ-SEC-003: generated selectors true for the element hide it;
    the page's other text stays."""
    selector = f"{prefix}p{''.join(conditions)}"
    group = f".never-on-this-page, {selector}" if decoy else selector
    text = _text_after_check(f"{group} {{ {hiding} }}")
    assert SECRET not in text
    assert text.endswith("shown")
