"""CSS nesting: rules inside a rule's block, flattened into plain rules.

`.card { color: #222; .note { display: none } }` hides `.card .note` in every
current browser. A rule whose block holds a nested rule is read by tinycss2
(`parse_blocks_contents`) and cut into the rule with its own declarations and
one rule per nested rule, whose selector joins the parent's: `&` is replaced
by each parent selector (`&.open` of `.a` is `.a.open`), and a selector
without `&` is relative to the parent (`.note` and `> .note` become `.a .note`
and `.a > .note`). A parent group multiplies: `.a, .b { .n {} }` gives
`.a .n, .b .n`. Nested `@media`, `@supports`, `@layer`, `@container` and
`@scope` blocks apply to the rules and declarations inside them when their
condition does (`media`). The depth and the number of selectors one nested
rule may expand to are bounded (`_MAX_DEPTH`, `_MAX_SELECTORS`); past them
the nested rule is left out, as the splitter left every nested rule out
before. Replacing `&` by text reads `.x &` of `.a .b` as `.x .a .b`, which
is narrower than `:is(.a .b)` when `.x` lies between them (docs/hidden-text.md).
"""

from __future__ import annotations

from typing import Any, Final

import tinycss2  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.media import _condition_applies

_MAX_DEPTH: Final = 8
_MAX_SELECTORS: Final = 64
_CONDITION_RULES: Final = frozenset({"media", "supports", "layer", "container", "scope"})


def flatten(text: str, brace: int) -> list[tuple[str, int]]:
    """(text, where its block opens) of the rule and of each rule nested in it."""
    selectors = _selector_list(text[:brace])
    block = text[brace + 1 :]
    block = block[:-1] if block.endswith("}") else block
    found: list[tuple[str, int]] = []
    _add(selectors, block, found, 0)
    return found


def _add(selectors: list[str], block: Any, found: list[tuple[str, int]], depth: int) -> None:
    """Add the rule `selectors { block }` and its nested rules to `found`."""
    try:
        items = tinycss2.parse_blocks_contents(block, skip_comments=True, skip_whitespace=True)
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return
    declarations: list[str] = []
    nested: list[tuple[list[str], Any]] = []
    _collect(items, selectors, declarations, nested, depth)
    if declarations and selectors:
        prelude = ", ".join(selectors)
        found.append((prelude + "{" + "; ".join(declarations) + "}", len(prelude)))
    for inner_selectors, content in nested:
        _add(inner_selectors, content, found, depth + 1)


def _collect(
    items: list[Any],
    selectors: list[str],
    declarations: list[str],
    nested: list[tuple[list[str], Any]],
    depth: int,
) -> None:
    for item in items:
        if item.type == "declaration":
            important = " !important" if item.important else ""
            declarations.append(f"{item.name}: {tinycss2.serialize(item.value).strip()}{important}")
        elif item.type == "qualified-rule" and depth < _MAX_DEPTH and item.content is not None:
            joined = _joined(selectors, _selector_list(tinycss2.serialize(item.prelude)))
            if joined:
                nested.append((joined, item.content))
        elif (
            item.type == "at-rule"
            and item.content is not None
            and depth < _MAX_DEPTH
            and item.lower_at_keyword in _CONDITION_RULES
            and _condition_applies(item.lower_at_keyword, tinycss2.serialize(item.prelude))
        ):
            inner = tinycss2.parse_blocks_contents(
                item.content, skip_comments=True, skip_whitespace=True
            )
            _collect(inner, selectors, declarations, nested, depth + 1)


def _joined(parents: list[str], children: list[str]) -> list[str]:
    """Each child selector joined to each parent; empty past `_MAX_SELECTORS`."""
    if not parents or len(parents) * len(children) > _MAX_SELECTORS:
        return []
    joined: list[str] = []
    for child in children:
        for parent in parents:
            joined.append(child.replace("&", parent) if "&" in child else f"{parent} {child}")
    return joined


def _selector_list(prelude: str) -> list[str]:
    """A selector group cut at its top-level commas (not those inside brackets,
    parentheses or strings)."""
    parts: list[str] = []
    depth = 0
    quote = ""
    current: list[str] = []
    escaped = False
    for char in prelude:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]
