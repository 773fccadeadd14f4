"""Style sheets cut into rules, and what their text alone says (cached per process).

A small splitter (`_uncached_split`) tracks only strings, comments, escapes
and braces, never values, and keeps the qualified rules whose enclosing
at-rules apply (`media`). A sheet's rules, whether each could hide
(`prechecks`) and their lowered blocks are remembered per sheet text in
`_SheetRules`, since a site serves the same sheets on every page. Selector
sketches (`_Part`) and words say, without parsing a selector, which classes,
ids and tags it needs, so rules for names absent from the page are never
parsed. The `_Chunk` objects carry the page's state (parsed or not).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Final, NamedTuple

from rypsok.core.fetch.css_visibility.contrast import NO_COLOURS, RuleColours, rule_colours
from rypsok.core.fetch.css_visibility.media import _condition_applies
from rypsok.core.fetch.css_visibility.nesting import flatten
from rypsok.core.fetch.css_visibility.prechecks import (
    _HIDING_FORMS,
    _colours_could_hide,
    could_hide,
)
from rypsok.core.fetch.css_visibility.properties import (
    _CACHED_BLOCK_TEXT,
    _CACHED_LONG_CHARS,
    _CACHED_LONG_TEXTS,
    _CACHED_RULES,
    _CACHED_SHEET_CHARS,
    _CACHED_SHEETS,
)
from rypsok.core.fetch.css_visibility.textcache import TextCache

# -- splitting sheets into rules ----------------------------------------------------------

# The marks that matter to rule boundaries, inside a block and between statements.
_BLOCK_MARKS: Final = re.compile(r"""[{}"'\\]|/\*""")
_STATEMENT_MARKS: Final = re.compile(r"""[{};"'\\]|/\*""")
_BLOCK_AT_RULES: Final = frozenset({"media", "supports", "layer", "container", "scope"})


@dataclass(slots=True)
class _Chunk:
    """The text of one qualified rule (prelude and block) whose media applies."""

    text: str
    brace: int  # where the block opens
    order: int
    may_hide: bool = True  # `could_hide` of its text (read once per sheet)
    sheet: _SheetRules | None = None  # the sheet it was cut from, and its place there
    index: int = 0
    parsed: bool = False
    colours: RuleColours | None = None  # read only on pages whose sheets are all known
    _sketch: tuple[_Part, ...] | None = None

    def selector_text(self) -> str:
        return self.text[: self.brace]

    def block_text(self) -> str:
        block = self.text[self.brace + 1 :]
        return block[:-1] if block.endswith("}") else block

    def sketch(self) -> tuple[_Part, ...]:
        if self._sketch is None:
            self._sketch = _sketch(self.selector_text())
        return self._sketch


class _Part(NamedTuple):
    """What one selector of a group needs, read without parsing it (a pre-check only).

    Names inside parentheses, brackets, strings or escapes are left out, so
    the needs are never more than the real selector's.
    """

    classes: frozenset[str]  # anywhere in the selector
    ids: frozenset[str]
    subject: frozenset[str]  # classes and ids of its last compound ("\\" when escaped)
    tag: str | None  # the tag of its last compound


class _Keys(NamedTuple):
    """The names of the elements whose re-showing rules the second pass reads."""

    names: set[str]  # their classes and ids
    tags: set[str]
    bare_tags: set[str]  # tags for which a rule naming only the tag could win the cascade


_NAME_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")
_COMBINATORS: Final = frozenset(" \t\n\r\f>+~")


_SIMPLE_SEPARATORS: Final = str.maketrans({">": " ", "+": " ", "~": " ", "\t": " ", "\n": " "})
_NAME_MARKS: Final = str.maketrans({".": " .", "#": " #", ":": " :", "*": " "})


def _sketch(selectors: str) -> tuple[_Part, ...]:
    if len(selectors) <= _CACHED_BLOCK_TEXT:
        return _cached_sketch(selectors)
    return _long_sketch(selectors)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _cached_sketch(selectors: str) -> tuple[_Part, ...]:
    return _uncached_sketch(selectors)


def _uncached_sketch(selectors: str) -> tuple[_Part, ...]:
    if not any(mark in selectors for mark in _HARD_SELECTOR_MARKS):
        return _simple_sketch(selectors)
    return _full_sketch(selectors)


_long_sketch: Final = TextCache(
    _uncached_sketch, max_texts=_CACHED_LONG_TEXTS, max_chars=_CACHED_LONG_CHARS
)


_HARD_SELECTOR_MARKS: Final = ("(", "[", "\\", '"', "'", "/*", "\r", "\f")


def _simple_sketch(selectors: str) -> tuple[_Part, ...]:
    """The sketch of selectors without brackets, strings or escapes, by splitting."""
    parts: list[_Part] = []
    for selector in selectors.split(","):
        compounds = selector.translate(_SIMPLE_SEPARATORS).split()
        classes: set[str] = set()
        ids: set[str] = set()
        subject: set[str] = set()
        tag: str | None = None
        for index, compound in enumerate(compounds):
            last = index == len(compounds) - 1
            for piece in compound.translate(_NAME_MARKS).split():
                if piece[0] == ".":
                    classes.add(piece[1:])
                elif piece[0] == "#":
                    ids.add(piece[1:])
                elif piece[0] == ":":
                    continue
                elif last:
                    tag = piece.lower()
                    continue
                else:
                    continue
                if last:
                    subject.add(piece[1:])
        parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
    return tuple(parts)


def _full_sketch(selectors: str) -> tuple[_Part, ...]:
    parts: list[_Part] = []
    classes: set[str] = set()
    ids: set[str] = set()
    subject: set[str] = set()
    tag: str | None = None
    depth = 0
    quote = ""
    position, size = 0, len(selectors)
    while position < size:
        char = selectors[position]
        position += 1
        if quote:
            if char == "\\":
                position += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "/" and selectors.startswith("*", position):
            # A comment: no name in it is needed (`p/* .x */.y` is `p.y`). It separates
            # nothing either, so the compound goes on after it.
            position = _comment_end(selectors, position)
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth = max(0, depth - 1)
        elif char == "\\":
            position += 1
            subject.add("\\")  # an escaped name: unknown, never filtered out
        elif depth:
            continue
        elif char == ",":
            parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
            classes, ids, subject, tag = set(), set(), set(), None
        elif char in _COMBINATORS:
            subject, tag = set(), None
        elif char in ".#" or char in _NAME_CHARS or ord(char) > 127:
            start = position if char in ".#" else position - 1
            position = _name_end(selectors, position)
            if position < size and selectors[position] == "\\":
                subject.add("\\")
                continue
            name = selectors[start:position]
            if char == ".":
                classes.add(name)
                subject.add(name)
            elif char == "#":
                ids.add(name)
                subject.add(name)
            else:
                tag = name.lower()
    parts.append(_Part(frozenset(classes), frozenset(ids), frozenset(subject), tag))
    return tuple(parts)


def _comment_end(selectors: str, position: int) -> int:
    """Past the comment whose `*` is at `position` (the end of the text if it is open)."""
    end = selectors.find("*/", position + 1)
    return len(selectors) if end < 0 else end + 2


def _name_end(selectors: str, position: int) -> int:
    """Where the name going on at `position` ends (ASCII name characters or non-ASCII)."""
    size = len(selectors)
    while position < size and (
        selectors[position] in _NAME_CHARS or ord(selectors[position]) > 127
    ):
        position += 1
    return position


class _Scanner:
    """Finds the next token that matters to rule boundaries, in one C-speed search.

    The two searches look for literal marks only (a brace, a quote, a comment
    opening, a backslash, a semicolon); what follows a mark is read by the
    methods below, never by a regular expression.
    """

    __slots__ = ("css", "size")

    def __init__(self, css: str) -> None:
        self.css = css
        self.size = len(css)

    def special(self, start: int, marks: re.Pattern[str] = _STATEMENT_MARKS) -> int:
        """The position of the first of `marks` (default: all) at or after `start`."""
        found = marks.search(self.css, start)
        return self.size if found is None else found.start()

    def skip(self, position: int) -> int:
        """Past the string, comment or escape starting at `position`."""
        css = self.css
        char = css[position]
        if char == "\\":
            return position + 2
        if char == "/":
            end = css.find("*/", position + 2)
            return self.size if end < 0 else end + 2
        return self._after_string(position, char)

    def _after_string(self, position: int, quote: str) -> int:
        css = self.css
        cursor = position + 1
        while cursor < self.size:
            end = css.find(quote, cursor)
            if end < 0:
                end = self.size
            newline = css.find("\n", cursor, end)
            if newline >= 0:
                return newline  # an unescaped newline ends a bad string
            escape = css.find("\\", cursor, end)
            if escape < 0:
                return end + 1
            cursor = escape + 2
        return self.size

    def block_end(self, opening: int) -> int:
        """The index of the `}` closing the block opened at `opening` (EOF closes it)."""
        depth = 1
        cursor = opening + 1
        while True:
            position = self.special(cursor, _BLOCK_MARKS)
            if position >= self.size:
                return self.size
            char = self.css[position]
            if char == "{":
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    return position
            else:
                cursor = self.skip(position)
                continue
            cursor = position + 1


def _statement_start(prelude: str) -> str:
    """The prelude without leading whitespace and comments."""
    text = prelude.lstrip()
    while text.startswith("/*"):
        end = text.find("*/", 2)
        text = "" if end < 0 else text[end + 2 :].lstrip()
    return text


def _at_rule_name(head: str) -> tuple[str, str]:
    """`@media screen {` -> ("media", " screen ")."""
    end = 1
    while end < len(head) and (head[end].isalnum() or head[end] in "-_"):
        end += 1
    return head[1:end].lower(), head[end:]


class _SheetRules:
    """A sheet's rules and the pre-checks read from their text, computed once per sheet.

    A site serves the same sheets on every page, so a process that fetches
    several of its pages reads each rule once: whether its text could hide
    (`could_hide`, per value of `external`) and its block in lower case (the
    second pass's pre-check looks for property spellings there).

    The rule texts are lowered and stripped of whitespace together, in C-speed
    string operations on the joined sheet. When the sheet is ASCII without the
    rare whitespace `str.split` removes beyond CSS's own, the stripped text of
    a rule without comments is exactly `_compact`'s, and the check runs on it
    directly; any other rule goes through `could_hide` as it is.
    """

    __slots__ = (
        "_colours",
        "_hiding",
        "_last_viable",
        "_lowered_blocks",
        "_selectors",
        "rules",
    )

    def __init__(self, css: str) -> None:
        self.rules: Final = _uncached_split(css)
        self._hiding: dict[bool, dict[int, bool]] = {}
        self._lowered_blocks: list[str] | None = None
        self._selectors: tuple[list[str] | None, tuple[str, ...], bool] | None = None
        self._last_viable: tuple[bytes, int, tuple[int, ...]] | None = None
        self._colours: dict[int, RuleColours] = {}

    def hiding(self, external: bool, indexes: Sequence[int] | None = None) -> tuple[bool, ...]:
        """`could_hide` of the rules at `indexes` (default: all), each computed once."""
        if indexes is None:
            indexes = range(len(self.rules))
        known = self._hiding.setdefault(external, {})  # two threads may both fill it: same
        missing = [index for index in indexes if index not in known]
        if missing:
            flags = _could_hide_each([self.rules[index][0] for index in missing], external)
            known.update(zip(missing, flags, strict=True))
        return tuple(known[index] for index in indexes)

    def colours(self, indexes: Sequence[int]) -> list[tuple[int, RuleColours]]:
        """The rules at `indexes` that declare a colour, and their colours (`contrast`),
        each rule read once per sheet and only when a page may apply it."""
        known = self._colours  # two threads may both fill it: the same values
        found: list[tuple[int, RuleColours]] = []
        for index in indexes:
            colours = known.get(index)
            if colours is None:
                colours = known[index] = _rule_colours(self.rules[index][0])
            if colours is not NO_COLOURS:
                found.append((index, colours))
        return found

    def viable(self, names: Mapping[str, str], count: int) -> list[int]:
        """The indexes of the first `count` rules that some element of the page may match,
        as far as the classes and ids of their selectors say (`names`: every class the
        page carries as `.name`, every id as `#name`, each mapped to "").

        A superset of the rules `_Part` sketches let through: a rule is left out only
        when every selector of its group names, outside brackets, strings and
        escapes, a class or id no element carries. Found for the whole sheet at once:
        the names are cut out of the joined selectors by one regular expression, looked
        up in C (`map` over `dict.get`), and each absent one leaves `_ABSENT` behind;
        only a rule with a mark left is looked at in Python.
        """
        pieces, distinct, commented = self._selector_names()
        if pieces is None:  # a separator or the mark in a selector (never from lxml)
            return list(range(count))
        # The answer depends only on which of the sheet's names the page carries: a page
        # of the same template (the same page again) reuses the last one.
        carried = bytes(map(names.__contains__, distinct))
        last = self._last_viable
        if last is not None and last[0] == carried and last[1] == count:
            return list(last[2])
        marked_pieces = pieces.copy()
        marked_pieces[1::2] = map(names.get, pieces[1::2], repeat(_ABSENT))
        marked = "".join(marked_pieces).split(_RULE_SEPARATOR)
        viable = [
            index
            for index, text in enumerate(marked[:count])
            if _ABSENT not in text or self._kept(index, text, commented)
        ]
        self._last_viable = (carried, count, tuple(viable))  # one assignment: thread-safe
        return viable

    def _kept(self, index: int, marked: str, commented: bool) -> bool:
        """Whether a rule with an absent name stays: a selector of it names none, or its
        names cannot be read without parsing (the marks of `_HARD_SELECTOR_MARKS`)."""
        if _HARD_NAME_MARK.search(marked) is not None:
            return True
        if commented and "/*" in self.rules[index][0][: self.rules[index][1]]:
            return True
        # The caller saw an absent name: one selector alone (no comma) is that one.
        return "," in marked and any(_ABSENT not in selector for selector in marked.split(","))

    def _selector_names(self) -> tuple[list[str] | None, tuple[str, ...], bool]:
        """The rules' selector texts joined by `_RULE_SEPARATOR` and cut at their names
        (the names at odd places), the distinct names, and whether a selector may hold
        a comment; computed once per sheet. None when the cut cannot be trusted."""
        if self._selectors is None:
            joined = _RULE_SEPARATOR.join(text[:brace] for text, brace in self.rules)
            pieces = _SELECTOR_NAME.split(joined)
            usable = _ABSENT not in joined and joined.count(_RULE_SEPARATOR) + 1 == len(self.rules)
            self._selectors = (
                pieces if usable else None,
                tuple(dict.fromkeys(pieces[1::2])),
                "/*" in joined,
            )
        return self._selectors

    def spells(self, index: int, spellings: re.Pattern[str]) -> bool:
        """Whether rule `index`'s block (lower case) holds one of `spellings`."""
        if self._lowered_blocks is None:
            joined = _RULE_SEPARATOR.join(text[brace:] for text, brace in self.rules)
            self._lowered_blocks = joined.lower().split(_RULE_SEPARATOR)
        return spellings.search(self._lowered_blocks[index]) is not None


def _could_hide_each(texts: list[str], external: bool) -> tuple[bool, ...]:
    """`could_hide` of each rule text, found from the texts joined (see `_SheetRules`)."""
    lowered = _RULE_SEPARATOR.join(texts).lower()
    plain = lowered.isascii() and not any(space in lowered for space in _SPLIT_ONLY_SPACES)
    joined = "".join(lowered.split())
    stripped = joined.split(_RULE_SEPARATOR)
    if len(stripped) != len(texts):  # no rules, or (never from lxml) a NUL in one
        return tuple(could_hide(text, external=external) for text in texts)
    # `_compact_could_hide` per rule, found from the joined text: the rules holding a
    # hiding form, then the colour check only for rules that name a colour. The
    # separator is in no form, so no occurrence spans two rules.
    starts = _rule_starts(joined)
    flags = [False] * len(texts)
    for index in _rules_holding(joined, starts, _HIDING_FORMS):
        flags[index] = True
    for index in _rules_holding(joined, starts, _COLOUR_MARKS):
        if not flags[index]:
            flags[index] = _colours_could_hide(";" + stripped[index], external)
    if plain and "/*" not in joined:
        return tuple(flags)
    for index, text in enumerate(stripped):  # the rules `_compact` would read otherwise
        if not plain or "/*" in text:
            flags[index] = could_hide(texts[index], external=external)
    return tuple(flags)


def _rule_colours(text: str) -> RuleColours:
    """`rule_colours`, for a rule whose text names a colour or a background, or holds a
    comment that could stand inside one (`color/**/:`)."""
    lowered = text.lower()
    if "color" in lowered or "background" in lowered or "/*" in lowered or "\\" in lowered:
        return rule_colours(text)
    return NO_COLOURS


# Never in a sheet: the parser removes C0 controls other than whitespace.
_RULE_SEPARATOR: Final = "\x00"
_ABSENT: Final = "\x01"  # what `viable` leaves where a selector named an absent class or id
# A class or id as `_simple_sketch` reads it: up to whitespace (`str.split`'s, which is
# the pattern's \s), a combinator, a comma or the next name mark. The marks of
# `_HARD_NAME_MARKS` end it too, so that they survive the cut and keep their rule.
_SELECTOR_NAME: Final = re.compile(r"""([.#][^\s.#:*>+~,\x00\x01(\[\\"']+)""")
_HARD_NAME_MARKS: Final = ("(", "[", "\\", '"', "'", "\r", "\f")  # and "/*", looked up apart
_HARD_NAME_MARK: Final = re.compile("[" + re.escape("".join(_HARD_NAME_MARKS)) + "]")  # one search
# ASCII characters `str.split` takes for whitespace and CSS (and `_compact`) does not.
_SPLIT_ONLY_SPACES: Final = ("\x0b", "\x1c", "\x1d", "\x1e", "\x1f")


def _rule_starts(joined: str) -> list[int]:
    """Where each rule's text starts in the rules joined by `_RULE_SEPARATOR`."""
    starts = [0]
    position = joined.find(_RULE_SEPARATOR)
    while position >= 0:
        starts.append(position + 1)
        position = joined.find(_RULE_SEPARATOR, position + 1)
    return starts


def _rules_holding(joined: str, starts: list[int], forms: tuple[str, ...]) -> set[int]:
    """The indexes of the joined rules whose text holds one of `forms` (C-speed finds)."""
    found: set[int] = set()
    for form in forms:
        position = joined.find(form)
        while position >= 0:
            index = bisect.bisect_right(starts, position) - 1
            found.add(index)
            # The rest of this rule cannot add anything: go on from the next one.
            following = index + 1
            if following >= len(starts):
                break
            position = joined.find(form, starts[following])
    return found


# A block without one of these sets no colour or background: `_colours_could_hide` is False.
_COLOUR_MARKS: Final = ("color:", "background:")


# `_SheetRules` by sheet text, least recently used out: at most `_CACHED_SHEETS` sheets
# and `_CACHED_SHEET_CHARS` characters of sheet text (a count alone would let 16 pages'
# worth of small sheets, or a few huge ones, decide the memory).
_cached_split: Final = TextCache(
    _SheetRules, max_texts=_CACHED_SHEETS, max_chars=_CACHED_SHEET_CHARS
)


# A qualified rule without strings, escapes, comments, nested blocks or a `;` or `@`
# before its block: what the general steps of `_uncached_split` would cut from its
# start, found by one match (the comment test is done on the match).
_SIMPLE_RULE: Final = re.compile(r"""([^{};"'\\@]*)\{[^{}"'\\]*\}""")


def _uncached_split(css: str) -> tuple[tuple[str, int], ...]:
    """(text, where its block opens) of each qualified rule whose at-rules apply."""
    scanner = _Scanner(css)
    chunks: list[tuple[str, int]] = []
    applies: list[bool] = [True]  # one entry per open at-rule block
    start = cursor = 0
    while True:
        if cursor == start:  # most rules: one match, and the state the steps below reach
            simple = _SIMPLE_RULE.match(css, start)
            if simple is not None and "/*" not in simple.group():
                if applies[-1]:
                    chunks.append(_chunk_at(simple.group(), simple.end(1) - start, applies))
                start = cursor = simple.end()
                continue
        position = scanner.special(cursor)
        if position >= scanner.size:
            break
        char = css[position]
        if char in "\"'/\\":
            cursor = scanner.skip(position)
            continue
        if char == ";":
            if _head(css[start:position], applies).startswith("@"):
                start = position + 1  # a statement at-rule such as @import ends here
            cursor = position + 1
            continue
        if char == "}":
            if len(applies) > 1:
                applies.pop()
            start = cursor = position + 1
            continue
        head = _head(css[start:position], applies)
        if head.startswith("@"):
            name, condition = _at_rule_name(head)
            if name in _BLOCK_AT_RULES:
                applies.append(applies[-1] and _condition_applies(name, condition))
                start = cursor = position + 1
                continue
            end = scanner.block_end(position)  # @keyframes, @font-face, @page, ...
        else:
            end = scanner.block_end(position)
            if applies[-1]:
                text, brace = _chunk_at(css[start : end + 1], position - start, applies)
                if "{" in text[brace + 1 :] and _nests_a_rule(text, brace):
                    chunks.extend(flatten(text, brace))  # CSS nesting (`nesting`)
                else:
                    chunks.append((text, brace))
        start = cursor = end + 1
    return tuple(chunks)


# `<!--` and `-->` (CDO, CDC) between a sheet's top-level rules are skipped by CSS, so
# that `<style><!-- .x { display: none } --></style>` hides; inside a block they are not.
_MARKUP_COMMENTS: Final = re.compile(r"(?:[ \t\n\r\f]*(?:<!--|-->))+")


def _nests_a_rule(text: str, brace: int) -> bool:
    """Whether a `{` inside the block is a nested rule's, not one inside a string or a
    comment (only those the scanner's own marks can tell)."""
    scanner = _Scanner(text)
    cursor = brace + 1
    while (position := scanner.special(cursor)) < scanner.size:
        char = text[position]
        if char == "{":
            return True
        cursor = scanner.skip(position) if char in "\"'/\\" else position + 1
    return False


def _head(prelude: str, applies: list[bool]) -> str:
    """`_statement_start`, past the CDO/CDC a top-level statement may follow."""
    head = _statement_start(prelude)
    if len(applies) == 1 and head.startswith(("<!--", "-->")):
        skipped = _MARKUP_COMMENTS.match(head)
        head = _statement_start(head[skipped.end() :]) if skipped is not None else head
    return head


def _chunk_at(text: str, brace: int, applies: list[bool]) -> tuple[str, int]:
    """(text, brace) of a rule, without the CDO/CDC before it at the top level."""
    if len(applies) == 1 and (text.find("<!--", 0, brace) >= 0 or text.find("-->", 0, brace) >= 0):
        skipped = _MARKUP_COMMENTS.match(text)
        if skipped is not None:
            return text[skipped.end() :], brace - skipped.end()
    return text, brace


_WORD_SEPARATORS: Final = str.maketrans(dict.fromkeys(".#>+~,()=|^$!\"' \t\n\r\f", " "))


def _names_none_of(chunk: _Chunk, keys: _Keys) -> bool:
    """True when no selector of the rule can have its subject among `keys`, judged by
    splitting the selector text into words (cheaper than the sketch, and looser)."""
    words = _selector_words(chunk.selector_text())
    if words is None:
        return False  # a subject may have no name at all: leave it to the sketch
    names, lowered = words
    return keys.names.isdisjoint(names) and keys.tags.isdisjoint(lowered)


@functools.lru_cache(maxsize=_CACHED_RULES)
def _selector_words(selector: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The words of a selector group and their lower case; None when a subject may
    have no name (`*`, an attribute, a pseudo-class, an escape)."""
    if any(mark in selector for mark in ("*", "[", ":", "\\")):
        return None
    words = frozenset(selector.translate(_WORD_SEPARATORS).split())
    return words, frozenset(word.lower() for word in words)


def _spells_any(chunk: _Chunk, spellings: re.Pattern[str]) -> bool:
    """Whether the rule's block names one of the properties in play."""
    return chunk.sheet is None or chunk.sheet.spells(chunk.index, spellings)


@functools.lru_cache(maxsize=64)
def _spelling_pattern(spellings: frozenset[str]) -> re.Pattern[str]:
    """One search for any of `spellings` (plain words: no escaping is needed, but done)."""
    return re.compile("|".join(re.escape(spelling) for spelling in sorted(spellings)))
