"""Custom properties at elements: the rules that declare them, and `var()` resolved.

The text side of `var()` (what a reference is, how it is substituted, the
bounds) is `variables`; this module knows the page: which rules declare the
names the hiding declarations refer to (`declaring_rules`, matched by the
engine on the elements that use them and their ancestors), and the value a
name has at one element (`resolved`): its own style attribute, else the rule
that wins the cascade there, else the nearest ancestor's, else the fallback.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, TypeAlias

from rypsok.core.fetch.css_visibility.bounds import _Budget
from rypsok.core.fetch.css_visibility.matching import _Rule
from rypsok.core.fetch.css_visibility.properties import Value, _declare_piece, _Declared
from rypsok.core.fetch.css_visibility.sheets import _Chunk
from rypsok.core.fetch.css_visibility.variables import (
    Lookup,
    VarRef,
    custom_declarations,
    referenced_names,
    substitute,
)
from rypsok.core.fetch.parse import Element

_ROUNDS: Final = 4  # custom values naming custom values, this deep at most
_Entries: TypeAlias = dict[Element, list[tuple[_Rule, tuple[int, int, int]]]]


def declaring_rules(
    references: Sequence[VarRef], chunks: Sequence[_Chunk], interest: Iterable[Element]
) -> list[_Rule]:
    """The rules declaring a name the references use, directly or through the values
    of other custom properties, each with only those declarations."""
    names: set[str] = set()
    for reference in references:
        names |= referenced_names(reference.text)
    styles = [style for e in interest if (style := e.get("style")) and "--" in style]
    for _ in range(_ROUNDS):
        texts = [*(c.block_text() for c in chunks if _names_any(c.text, names)), *styles]
        found: set[str] = set()
        for text in texts:
            for name, value, _ in custom_declarations(text):
                if name in names:
                    found |= referenced_names(value)
        if found <= names:
            break
        names |= found
    rules: list[_Rule] = []
    for chunk in chunks:
        if not _names_any(chunk.text, names):
            continue
        customs = tuple(
            _Declared(important, name, value, position)
            for position, (name, value, important) in enumerate(
                custom_declarations(chunk.block_text())
            )
            if name in names
        )
        if customs:
            rules.append(_Rule(chunk, customs, chunk.order))
    return rules


def resolved(
    element: Element, reference: VarRef, entries: _Entries, budget: _Budget
) -> list[tuple[str, Value]]:
    """A `var()` value at `element`: its references substituted and the result read as
    the declared property (nothing when invalid: a browser leaves it unset)."""
    text = substitute(reference.text, _lookup_at(element, entries, budget))
    if budget.visits == 0:
        # LIM-V5 spent while resolving: as past every bound, hide rather than show.
        return [("display", "none")]
    if text is None:
        return []
    try:
        return [(prop, value) for _, prop, value in _declare_piece(f"{reference.prop}: {text}")]
    except (ValueError, TypeError, AttributeError, IndexError, RecursionError):
        return []


def _lookup_at(element: Element, entries: _Entries, budget: _Budget) -> Lookup:
    def lookup(name: str) -> tuple[str, Lookup] | None:
        for node in (element, *element.iterancestors()):
            if not budget.take("visits", 1):  # LIM-V5
                return None
            value = _value_at(node, name, entries)
            if value is not None:
                return value, _lookup_at(node, entries, budget)
        return None

    return lookup


def _value_at(node: Element, name: str, entries: _Entries) -> str | None:
    """The custom property's value declared at `node`: its style attribute, else the
    rule that wins the cascade there (`!important` first)."""
    style = node.get("style")
    if style and name in style:
        inline: tuple[bool, str] | None = None
        for declared_name, value, important in custom_declarations(style):
            if declared_name == name and (inline is None or important >= inline[0]):
                inline = (important, value)  # the last of the strongest
        if inline is not None:
            return inline[1]
    best: tuple[tuple[bool, tuple[int, int, int], int, int], str] | None = None
    for rule, specificity in entries.get(node, ()):
        for declared in rule.declarations:
            if declared.prop == name and isinstance(declared.value, str):
                rank = (declared.important, specificity, rule.order, declared.position)
                if best is None or rank >= best[0]:
                    best = (rank, declared.value)
    return None if best is None else best[1]


def _names_any(text: str, names: set[str]) -> bool:
    return any(name in text for name in names)
