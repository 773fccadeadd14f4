"""Selectors cssselect cannot read, rewritten so that a hiding rule still hides.

cssselect (1.x) lacks part of Selectors level 4 that browsers apply:
`:not(.a, .b)`, complex selectors and `:not()` inside `:is()`/`:where()`,
`:nth-child(2 of .x)`, and pseudo-classes such as `:dir()`, `:defined` or
`:focus-within`. A rule it cannot compile used to be dropped whole, so
`.note:not(.a, .b) { display: none }` let its text through: a hiding trick
that costs nothing to write.

Each selector of such a group is rewritten here piece by piece:

- exactly where the meaning is kept: `:not(A, B)` becomes `:not(A):not(B)`;
  a pseudo-class that never matches a static page (`:focus-within`, `:host`)
  ends the selector, and inside `:not()` it is always true and drops out;
- otherwise as a **superset**: a part that cannot be expressed is left out
  (in `:not()`, the argument is left out), so the selector matches at least
  every element the browser's would.

Every rewritten selector is *relaxed*: the engine applies only its rule's
declarations that hide on their own, and only when looking for hidden text,
never to re-show (a superset of a re-showing rule would let hidden text
back, and even the exact rewrites count a specificity at least the
browser's, which only a hiding rule may be given). The price of a superset
is text hidden that a browser might show, in a rule whose author wrote it to
hide something; the choice is written down in docs/extraction.md.
"""

from __future__ import annotations

import functools
from typing import Any, Final, NamedTuple

import tinycss2  # type: ignore[import-untyped]
from cssselect import HTMLTranslator, SelectorError
from cssselect.xpath import ExpressionError

from rypsok.core.fetch.css_visibility.properties import _CACHED_RULES


class Rewritten(NamedTuple):
    """One selector of a group, as cssselect can read it."""

    text: str
    relaxed: bool  # rewritten: apply its hiding declarations only
    dropped: int  # the conditions left out, counted into the specificity


# Pseudo-classes that never match a document read without script, focus or playback.
_NEVER_MATCH: Final = frozenset(
    {
        "focus-within", "focus-visible", "target-within", "host", "host-context",
        "current", "past", "future", "playing", "paused", "seeking", "buffering",
        "stalled", "muted", "volume-locked", "fullscreen", "picture-in-picture",
        "modal", "popover-open", "user-valid", "user-invalid", "autofill",
        "-webkit-autofill", "-moz-focusring", "active-view-transition",
    }
)  # fmt: skip
# Prefixed pseudo-classes current engines still apply, left out as any unknown one.
_PREFIXED_KNOWN: Final = frozenset({"-webkit-any-link", "-moz-any-link", "-webkit-full-page-media"})
# Spellings of `:is()` that cssselect does not know.
_IS_ALIASES: Final = frozenset({"matches", "-webkit-any", "-moz-any", "any"})
_COMBINATOR_MARKS: Final = frozenset({">", "+", "~"})
_TRANSLATOR: Final = HTMLTranslator()
# Pseudo-elements whose rule styles the element's own text (`::first-line { font-size: 0 }`).
_TEXT_PSEUDO_ELEMENTS: Final = frozenset({"first-line", "first-letter"})


def readable(text: str) -> bool:
    """Whether cssselect parses and translates `text`."""
    try:
        _TRANSLATOR.css_to_xpath(text)
    except (SelectorError, ExpressionError, ValueError, TypeError, IndexError, RecursionError):
        return False
    return True


@functools.lru_cache(maxsize=_CACHED_RULES)
def rewrite_group(text: str) -> tuple[Rewritten, ...]:
    """Every selector of the group `text`, rewritten (never-matching ones left out)."""
    found: list[Rewritten] = []
    for tokens in _split_commas(tinycss2.parse_component_value_list(text, skip_comments=True)):
        piece = tinycss2.serialize(tokens).strip()
        if not piece:
            continue
        if readable(piece):
            found.append(Rewritten(piece, relaxed=False, dropped=0))
            continue
        rewritten = _rewrite_selector(tokens)
        if rewritten is not None and readable(rewritten.text):
            found.append(rewritten)
    return tuple(found)


def _split_commas(tokens: list[Any]) -> list[list[Any]]:
    pieces: list[list[Any]] = [[]]
    for token in tokens:
        if token.type == "literal" and token.value == ",":
            pieces.append([])
        else:
            pieces[-1].append(token)
    return pieces


class _Writer:
    """The rewritten text of one selector, with what was left out."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.compound_open = False  # something written since the last combinator
        self.dropped = 0
        self.invalid = False

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.compound_open = True

    def separate(self, combinator: str) -> None:
        if not self.compound_open:
            if combinator == " ":
                return  # the space after `>`, `+` or `~`, or before the first compound
            if not self.parts:
                self.invalid = True  # `> p`: invalid outside nesting, as in a browser
            self.parts.append("*")
        self.parts.append(combinator)
        self.compound_open = False

    def leave_out(self) -> None:
        """A condition of the compound left out (it still counts for the specificity);
        a compound of nothing else becomes `*` (`:defined > p` is `* > p`)."""
        self.dropped += 1
        if not self.compound_open:
            self.write("*")

    def result(self) -> Rewritten | None:
        if not self.compound_open:
            self.parts.append("*")
        text = "".join(self.parts).strip()
        if self.invalid or not text:
            return None
        return Rewritten(text, relaxed=True, dropped=self.dropped)


def _rewrite_selector(tokens: list[Any]) -> Rewritten | None:
    """One selector rewritten for cssselect; None when it never matches or cannot be."""
    writer = _Writer()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        if kind == "whitespace":
            if not _before_combinator(tokens, index):
                writer.separate(" ")  # a descendant combinator
        elif kind == "literal" and token.value in _COMBINATOR_MARKS:
            writer.separate(token.value)
        elif kind == "literal" and token.value == ":":
            if index + 1 >= len(tokens):
                return None
            following = tokens[index + 1]
            if following.type == "literal" and following.value == ":":
                return _pseudo_element(writer, tokens, index)
            if not _pseudo_class(writer, following):
                return None  # a pseudo-class that never matches: nor does the selector
            index += 1
        else:
            writer.write(tinycss2.serialize([token]))
        index += 1
    return writer.result()


def _before_combinator(tokens: list[Any], index: int) -> bool:
    """Whether only whitespace stands between `index` and a combinator or the end."""
    for token in tokens[index + 1 :]:
        if token.type != "whitespace":
            return token.type == "literal" and token.value in _COMBINATOR_MARKS
    return True


def _pseudo_element(writer: _Writer, tokens: list[Any], index: int) -> Rewritten | None:
    """`::name` ends a selector: kept when it styles the element's own text."""
    name_token = tokens[index + 2] if index + 2 < len(tokens) else None
    rest = [t for t in tokens[index + 3 :] if t.type != "whitespace"]
    if name_token is None or name_token.type != "ident" or rest:
        return None
    if name_token.lower_value not in _TEXT_PSEUDO_ELEMENTS:
        return None  # ::before, ::marker, ::placeholder: not the element's own text
    writer.leave_out()
    return writer.result()


def _pseudo_class(writer: _Writer, token: Any) -> bool:
    """Write `:token`, or leave it out; False when the compound can never match."""
    if token.type == "ident":
        name = token.lower_value
        if name in _NEVER_MATCH or _unknown_prefixed(name):
            return False
        if readable(f":{name}"):
            writer.write(f":{name}")
        else:
            writer.leave_out()  # :defined, :read-only, :any-link, ...
        return True
    if token.type != "function":
        writer.leave_out()
        return True
    name = token.lower_name
    if name in _NEVER_MATCH or (_unknown_prefixed(name) and name not in _IS_ALIASES):
        return False
    if name == "not":
        _negation(writer, token.arguments)
        return True
    if name in _IS_ALIASES:
        name = "is"
    written = f":{name}({tinycss2.serialize(token.arguments)})"
    if readable(written):
        writer.write(written)
    else:
        writer.leave_out()  # :is(.a .b), :nth-child(2 of .x), :dir(ltr), ...
    return True


def _unknown_prefixed(name: str) -> bool:
    """A vendor's pseudo-class of another engine (`:-ms-input-placeholder`): the browsers
    that do not know it drop the rule, so it is read as never matching."""
    return name.startswith("-") and name not in _PREFIXED_KNOWN


def _negation(writer: _Writer, arguments: list[Any]) -> None:
    """`:not(A, B)` as `:not(A):not(B)`; an argument cssselect cannot read drops out.

    Leaving an argument out removes a restriction (a superset); for one that
    never matches (`:not(:focus-within)`) it is exact, the condition always held.
    """
    for tokens in _split_commas(arguments):
        argument = tinycss2.serialize(tokens).strip()
        if not argument:
            continue
        if readable(f":not({argument})"):
            writer.write(f":not({argument})")
        else:
            writer.leave_out()
