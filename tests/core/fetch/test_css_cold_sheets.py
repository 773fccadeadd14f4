"""The sheet filter's per-rule test, made one search, keeps exactly the rules it kept.

REQ-CTX-005, REQ-SEC-003: a rule `_SheetRules.viable` wrongly leaves out is a
hiding rule never read, so its hidden text would reach the caller. The new
`_kept` is held to the definition it replaces, on rules built from the marks
that matter, and on whole sheets through `viable`.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rypsok.core.fetch.css_visibility import sheets
from rypsok.core.fetch.css_visibility.sheets import _ABSENT, _HARD_NAME_MARKS, _SheetRules


def _kept_by_definition(rules: _SheetRules, index: int, marked: str, commented: bool) -> bool:
    """`_kept` as it was written before (one `in` per mark, then every selector)."""
    if any(mark in marked for mark in _HARD_NAME_MARKS):
        return True
    if commented and "/*" in rules.rules[index][0][: rules.rules[index][1]]:
        return True
    return any(_ABSENT not in selector for selector in marked.split(","))


_PIECES = st.sampled_from(
    [
        *(".a", ".b", "#c", "#d", "div", " ", ",", ", ", ">", "+", "~", ":hover", "[x]", "("),
        *(")", "\\", '"', "'", "\r", "\f", "/*", "*/", "*", "\n", "\t", ".é", "#_"),
    ]
)


@pytest.mark.req("REQ-CTX-005")
@pytest.mark.req("REQ-SEC-003")
@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(_PIECES, min_size=1, max_size=8).map("".join), min_size=1, max_size=6),
    st.sets(st.sampled_from([".a", ".b", "#c", "#d", ".é", "#_"])),
)
@example([".a .b", ".b,.x", "#c > .q", "p/* .x */.y", "[x].q", ".q, div"], {".a"})
def test_the_filter_keeps_what_the_plain_test_keeps(
    selectors: list[str], present: set[str]
) -> None:
    css = "".join(f"{selector}{{display:none}}" for selector in selectors)
    names = dict.fromkeys(present, "")
    fast = _SheetRules(css).viable(names, len(_SheetRules(css).rules))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sheets._SheetRules, "_kept", _kept_by_definition)
        rules = _SheetRules(css)
        assert rules.viable(names, len(rules.rules)) == fast


def test_a_rule_naming_an_absent_class_in_its_only_selector_is_left_out() -> None:
    """The property above is not vacuous: the filter does leave rules out."""
    rules = _SheetRules(".gone{display:none}.here{display:none}.gone,.here{opacity:0}")
    assert rules.viable({".here": ""}, 3) == [1, 2]
