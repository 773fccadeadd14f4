"""Custom properties in the properties that hide are resolved, element by element.

REQ-CTX-005: hidden text never reaches the caller. A defect found in session 12:
`:root{--quiet:none} .note{display:var(--quiet)}` kept the note, because a
value holding `var()` was unknown. REQ-SEC-003: visible text stays, so a
reference resolves only to a value declared on the element or an ancestor
(`.closed{--d:none}` does not hide a `.panel` elsewhere), and an undefined one
without a fallback leaves the property unset, as in a browser. LIM-V5 bounds
the resolution; a chain of references cannot grow without bound.
"""

from __future__ import annotations

import pytest

from rypsok.core import limits
from rypsok.core.fetch.css_visibility import drop_hidden
from rypsok.core.fetch.css_visibility.variables import _MAX_CHARS, substitute
from rypsok.core.fetch.parse import parse_bounded

SECRET = "SECRET-BEHIND-A-CUSTOM-PROPERTY"


def _visible(css: str, body: str) -> tuple[str, bool]:
    html = f"<!doctype html><html><head><style>{css}</style></head><body>{body}<p>shown</p>"
    root = parse_bounded(html, max_nodes=limits.PARSED_NODES, max_depth=limits.NESTING_DEPTH).root
    stats = drop_hidden(root)
    return " ".join(" ".join(root.itertext()).split()), stats.sheets_truncated


HIDDEN = {
    "root value": (":root{--h:none} .v{display:var(--h)}", '<p class="v">S</p>'),
    "fallback": (".v{display:var(--nope, none)}", '<p class="v">S</p>'),
    "style attribute, value in a sheet": ("html{--h:none}", '<p style="display:var(--h)">S</p>'),
    "both in style attributes": (
        "",
        '<div style="--h: none"><p style="display: var(--h)">S</p></div>',
    ),
    "a value naming another": (
        ":root{--a:var(--b);--b:none} .v{display:var(--a)}",
        '<p class="v">S</p>',
    ),
    "opacity": (":root{--o:0} .v{opacity:var(--o)}", '<p class="v">S</p>'),
    "visibility, inherited": (
        "body{--vis:hidden} .v{visibility:var(--vis)}",
        '<div class="v"><p>S</p></div>',
    ),
    "inside translateX()": (
        ":root{--x:-9999px} .v{transform:translateX(var(--x))}",
        '<p class="v">S</p>',
    ),
    "font shorthand": (":root{--f:0/0 a} .v{font:var(--f)}", '<p class="v">S</p>'),
    "declared on an ancestor's class": (
        ".box{--d:none} .v{display:var(--d)}",
        '<div class="box"><p class="v">S</p></div>',
    ),
    "important over a style attribute": (
        ":root{--h:none} .v{display:var(--h)!important}",
        '<p class="v" style="display:block">S</p>',
    ),
}
SHOWN = {
    "undefined, no fallback": (".v{display:var(--nope)}", '<p class="v">S</p>'),
    "defined as block": (":root{--h:block} .v{display:var(--h)}", '<p class="v">S</p>'),
    "declared on another element": (
        ".closed{--d:none} .panel{display:var(--d, block)}",
        '<div class="closed">x</div><div class="panel">S</div>',
    ),
    "a nearer ancestor overrides": (
        ":root{--d:none} .open{--d:block} .v{display:var(--d)}",
        '<div class="open"><p class="v">S</p></div>',
    ),
    "a style attribute overrides": (
        ":root{--d:none} .v{display:var(--d)}",
        '<div style="--d:block"><p class="v">S</p></div>',
    ),
    "root value for print only": (
        "@media print{:root{--h:none}} .v{display:var(--h)}",
        '<p class="v">S</p>',
    ),
    "a cycle is invalid": (
        ":root{--a:var(--b);--b:var(--a)} .v{display:var(--a)}",
        '<p class="v">S</p>',
    ),
    "names are case-sensitive": (":root{--H:none} .v{display:var(--h)}", '<p class="v">S</p>'),
}


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.parametrize("case", sorted(HIDDEN))
def test_req_ctx_005_var_in_a_hiding_property_hides(case: str) -> None:
    css, body = HIDDEN[case]
    text, _ = _visible(css, body.replace(">S<", f">{SECRET}<"))
    assert SECRET not in text
    assert "shown" in text


@pytest.mark.req("REQ-SEC-003")
@pytest.mark.parametrize("case", sorted(SHOWN))
def test_req_sec_003_var_that_resolves_to_visible_stays(case: str) -> None:
    css, body = SHOWN[case]
    text, _ = _visible(css, body.replace(">S<", f">{SECRET}<"))
    assert SECRET in text


@pytest.mark.req("REQ-CTX-005")
def test_req_ctx_005_expanding_references_stop_at_the_bound() -> None:
    """Each level doubles (`--b: var(--c) var(--c)`, ...): the substituted text is capped,
    the declaration becomes invalid, and the check ends."""
    levels = [f"--v{index}:var(--v{index + 1}) var(--v{index + 1})" for index in range(40)]
    css = ":root{" + ";".join(levels) + ";--v40:none} .v{display:var(--v0)}"
    text, _ = _visible(css, f'<p class="v">{SECRET}</p>')
    assert "shown" in text

    def doubling(name: str) -> tuple[str, object]:
        return ("var(--x) " * 8, doubling)

    assert substitute("var(--x)", doubling) is None  # past _MAX_CHARS or _MAX_DEPTH
    assert substitute("a var(--y, b) c", lambda name: None) == "a  b c"
    assert (
        len(substitute("var(--x)", lambda n: ("x" * (_MAX_CHARS - 1), lambda m: None)) or "")
        < _MAX_CHARS
    )


@pytest.mark.req("REQ-CTX-005")
def test_req_ctx_005_spent_visits_hide_rather_than_show(monkeypatch: pytest.MonkeyPatch) -> None:
    """LIM-V5 spent while resolving a reference: the element is hidden and the check
    reported partial, as past every other bound."""
    monkeypatch.setattr(limits, "SELECTOR_VISITS", 3)
    css = ":root{--h:block} .v{display:var(--h)}"
    deep = "<div>" * 20 + f'<p class="v">{SECRET}</p>' + "</div>" * 20
    text, truncated = _visible(css, deep)
    assert truncated
    assert SECRET not in text
