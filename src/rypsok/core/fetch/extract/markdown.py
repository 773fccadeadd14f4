"""Markdown rendering of the chosen content (REQ-FETCH-004).

Decides how each element reads as Markdown: ATX headings at their level,
paragraphs separated by a blank line, `-`/`1.` lists nested by indentation,
`>` quotes, fenced code with the language the page names, inline code,
emphasis, absolute links, pipe tables. Text is not Markdown-escaped: the
output is read by a model, not re-rendered (REQ-CTX-008). Nesting is shown to
eight levels and the output is bounded by twice the input plus 64 KiB, so
the cost stays linear and a long `<base href>` cannot multiply the output.
One iterative walk per chosen root, no recursion.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from lxml import etree  # type: ignore[import-untyped]

from rypsok.core.boundary.invisible import remove_invisible
from rypsok.core.fetch.extract.cleaning import may_hold_invisible
from rypsok.core.fetch.extract.model import HtmlElement
from rypsok.core.fetch.extract.noise import (
    BLOCK_TAGS,
    CLEANABLE_TAGS,
    HAS_STRUCTURE,
    HAS_TABLE,
    Analysis,
    is_clutter,
)
from rypsok.core.fetch.extract.page import resolve
from rypsok.core.fetch.parse import CANCEL_CHECK_INTERVAL, check_cancelled

OUTPUT_SLACK: Final = 64 * 1024
_MAX_NESTING: Final = 8  # quote and list levels shown
_HEADING_LEVELS: Final = {f"h{level}": level for level in range(1, 7)}
_STRONG_TAGS: Final = frozenset({"strong", "b"})
_EMPHASIS_TAGS: Final = frozenset({"em", "i"})
_CODE_TAGS: Final = frozenset({"code", "kbd", "samp", "tt"})
_LIST_TAGS: Final = frozenset({"ul", "ol", "menu", "dir"})
_SPECIAL_BLOCKS: Final = frozenset(
    {*_HEADING_LEVELS, "pre", "li", "blockquote", "hr", "table", "tr", "td", "th", "caption"}
    | _LIST_TAGS
)
_PLAIN_BLOCKS: Final = BLOCK_TAGS - _SPECIAL_BLOCKS - {"br"}
_HANDLED_TAGS: Final = (
    _SPECIAL_BLOCKS | _STRONG_TAGS | _EMPHASIS_TAGS | _CODE_TAGS | {"a", "br", "img"}
)
_MAX_EMPHASIS: Final = 2  # nested emphasis beyond this is plain text
_MAX_COLUMNS: Final = 32
_LANGUAGE: Final = re.compile(
    r"(?:^|\s)(?:language|lang|highlight-source|highlight)-([A-Za-z0-9_+#.-]{1,32})"
)
_LANGUAGE_NAME: Final = re.compile(r"[A-Za-z0-9_+#.-]{1,32}")
_NO_LANGUAGE: Final = frozenset({"default", "none", "text", "plaintext", "nohighlight"})
# Alt text that describes nothing: a file name or a placeholder word.
_NOT_A_DESCRIPTION: Final = re.compile(
    r"\s*(?:[^\s/]+\.(?:jpe?g|png|gif|webp|svg|avif|bmp|tiff?|ico)"
    r"|image|img|photo|picture|icon|logo|thumbnail|placeholder|null|undefined"
    r"|[\w.-]*[\d_-][\w.-]*)\s*",  # one token with digits or joiners: an identifier
    re.IGNORECASE,
)
# The visible text of heading permalinks (Sphinx, MkDocs, Docusaurus, GitHub).
_PERMALINK_SIGNS: Final = frozenset("¶§#🔗⚓ \u200b")
_BACKTICKS: Final = re.compile(r"`+")
_SPACES: Final = re.compile(r" {2,}")
_SPACES_AT_BREAK: Final = re.compile(r" *\n *")
_PRE_BREAKS: Final = re.compile("\r\n?|[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_NUMBER: Final = re.compile(r"\s*(-?\d{1,9})\s*")


_Closer = Callable[[], None]


@dataclass(slots=True)
class _Table:
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""


class Markdown:
    """Renders chosen elements as Markdown in one iterative walk each."""

    def __init__(self, analysis: Analysis, base: str, budget: int) -> None:
        self._analysis = analysis
        self._base = base
        self._budget = budget
        self._urls: dict[str, str | None] = {}
        self._lines: list[str] = []
        self._inline: list[str] = []
        self._generation = 0  # counts flushes: a wrapper spanning one is not applied
        self._inline_only = 0  # inside a heading, link or table cell: blocks become spaces
        self._raw = 0  # inside inline code: no Markdown inside
        self._pre = 0
        self._links = 0
        self._emphasis = 0
        self._prefix: list[str] = []
        self._marker: tuple[int, str] | None = None  # list marker for the next line
        self._lists: list[list[int]] = []  # [ordered, next number]
        self._last_was_item = False
        self._last_prefix = ""
        self._table: _Table | None = None
        self._row_lists = 0  # open tables rendered as lists of rows
        self._size = 0
        self.partial = False
        self.removed = 0

    # walk

    def render(self, roots: list[HtmlElement]) -> str:
        for root in roots:
            if not self._render_one(root):
                self.partial = True
                break
        self._flush()
        return "\n".join(self._lines)

    def _render_one(self, root: HtmlElement) -> bool:
        closers: list[_Closer | None] = []
        noise = self._analysis.noise
        walker = etree.iterwalk(root, events=("start", "end"))
        entered = 0
        for event, element in walker:
            if event == "start":
                if self._size > self._budget:
                    return False
                entered += 1
                if not entered % CANCEL_CHECK_INTERVAL:
                    check_cancelled()  # an abandoned extraction stops here (REQ-PAGE-008)
                tag = element.tag
                # Only noise and the cleanable blocks can be skipped: the test is
                # inlined so that the other elements (most of them) cost no call.
                if element is not root and (
                    element in noise or (tag in CLEANABLE_TAGS and self._cluttered(element))
                ):
                    walker.skip_subtree()
                    closers.append(None)
                    continue
                closers.append(self._enter(element, tag))
                if text := element.text:
                    self._text(text)
                continue
            closer = closers.pop()
            if closer is not None:
                closer()
            if element is not root and (tail := element.tail):
                self._text(tail)
        return True

    def _cluttered(self, element: HtmlElement) -> bool:
        """Whether a block of a cleanable tag (not noise) is clutter inside the content."""
        analysis = self._analysis
        stat = analysis.stats.get(element)
        if stat is None:
            return True
        parent = element.getparent()
        return is_clutter(element, stat, None if parent is None else analysis.stats.get(parent))

    # text

    def _text(self, text: str) -> None:
        if self._pre:
            piece = _PRE_BREAKS.sub("\n", text)
        elif text.isspace():
            if not self._inline:
                return  # indentation at the start of a block: nothing to keep
            piece = " "
        else:
            if not text.isascii() and may_hold_invisible(text):
                text, removed = remove_invisible(text)
                self.removed += removed
                if not text.strip():
                    return
            piece = " ".join(text.split())
            if self._links and ("[" in piece or "]" in piece):
                piece = piece.replace("[", "\\[").replace("]", "\\]")
            if text[0].isspace():
                piece = " " + piece
            if text[-1].isspace():
                piece += " "
        self._inline.append(piece)
        self._size += len(piece)

    def _append(self, piece: str) -> None:
        self._inline.append(piece)
        self._size += len(piece)

    def _take(self, start: int) -> tuple[str, str, str]:
        """Remove the inline pieces from `start`; return leading space, text, trailing space."""
        joined = "".join(self._inline[start:])
        del self._inline[start:]
        core = joined.strip()
        if "  " in core:  # a C search first: the regex costs a step per character
            core = _SPACES.sub(" ", core)
        lead = " " if joined[:1].isspace() else ""
        trail = " " if joined[-1:].isspace() and core else ""
        return lead, core, trail

    # blocks

    def _boundary(self) -> None:
        if self._inline_only:
            self._append(" ")
        elif self._inline:
            self._flush()
        else:
            self._generation += 1

    def _flush(self) -> None:
        self._generation += 1
        if not self._inline:
            return
        text = "".join(self._inline)
        self._inline.clear()
        if "  " in text:
            text = _SPACES.sub(" ", text)
        if "\n" in text:
            text = _SPACES_AT_BREAK.sub("\n", text).strip()
            if text:
                self._emit(text.split("\n"))
        elif text := text.strip():
            self._emit([text])

    def _emit(self, lines: list[str]) -> None:
        if not self._prefix and not self._last_prefix and len(lines) == 1:
            # The common case, a top-level paragraph: a blank line, then the text.
            if self._lines:
                self._lines.append("")
            self._lines.append(lines[0])
            self._last_was_item = False
            return
        prefix = "".join(self._prefix)
        first = prefix
        is_item = self._marker is not None
        if self._marker is not None:
            index, marker = self._marker
            first = "".join(self._prefix[:index]) + marker + "".join(self._prefix[index + 1 :])
            self._marker = None
        if self._lines and not (is_item and self._last_was_item):
            # The blank line belongs to the containers both blocks share.
            shared = (
                prefix if prefix == self._last_prefix else _common_prefix(prefix, self._last_prefix)
            )
            self._lines.append(shared.rstrip())
        self._lines.append(first + lines[0])
        self._lines.extend(prefix + line if line else prefix.rstrip() for line in lines[1:])
        self._last_was_item = is_item
        self._last_prefix = prefix
        self._size += len(prefix) * len(lines)

    def _push_prefix(self, piece: str) -> bool:
        if len(self._prefix) >= _MAX_NESTING:
            return False
        self._prefix.append(piece)
        return True

    # elements

    def _enter(self, element: HtmlElement, tag: str) -> _Closer | None:
        if self._pre:
            if tag == "br":
                self._append("\n")
            return None
        if tag in _PLAIN_BLOCKS:  # the common cases first: p, div, section, ...
            self._boundary()
            return self._boundary
        if tag not in _HANDLED_TAGS:
            return None  # span, font, sup and the like: their text only
        if tag in _HEADING_LEVELS:
            return self._heading(_HEADING_LEVELS[tag])
        if tag == "a":
            return self._link(element.get("href"))
        if tag in _STRONG_TAGS:
            return self._wrap("**")
        if tag in _EMPHASIS_TAGS:
            return self._wrap("*")
        if tag in _CODE_TAGS:
            return self._code()
        if tag == "br":
            self._append(" " if self._inline_only else "\n")
            return None
        if tag == "img":
            self._image(element)
            return None
        return self._enter_block(element, tag)

    def _enter_block(self, element: HtmlElement, tag: str) -> _Closer | None:
        if tag == "pre":
            return self._code() if self._inline_only else self._preformatted(element)
        if tag in _LIST_TAGS:
            return self._list(element, ordered=tag == "ol")
        if tag == "li":
            return self._item()
        if tag == "blockquote":
            return self._quote()
        if tag == "hr":
            self._boundary()
            if not self._inline_only:
                self._emit(["---"])
            return None
        if tag == "table" or (self._table is not None and tag in ("tr", "td", "th", "caption")):
            return self._table_part(element, tag)
        if tag == "tr" and self._row_lists:
            return self._item()
        if tag in BLOCK_TAGS:
            self._boundary()
            return self._boundary
        return None

    def _heading(self, level: int) -> _Closer | None:
        self._boundary()
        if self._inline_only:
            return self._boundary
        self._inline_only += 1

        def close() -> None:
            self._inline_only -= 1
            _, text, _ = self._take(0)
            if text:
                self._emit(["#" * level + " " + text])
            self._generation += 1

        return close

    def _link(self, href: str | None) -> _Closer | None:
        if self._links or self._raw:
            return None
        url = self._url(href)
        if url is None:
            return self._fragment_link() if href and href.lstrip().startswith("#") else None
        start = len(self._inline)
        self._links += 1
        self._inline_only += 1

        def close() -> None:
            self._links -= 1
            self._inline_only -= 1
            lead, text, trail = self._take(start)
            if text:  # brackets of the text were escaped as it came in
                self._append(f"{lead}[{text}]({url}){trail}")
            elif lead:
                self._append(" ")

        return close

    def _fragment_link(self) -> _Closer:
        """A link within the page: its text stays, unless it is a permalink sign (¶, #, §)."""
        start = len(self._inline)

        def close() -> None:
            if start > len(self._inline):
                return
            lead, text, trail = self._take(start)
            if text and not _PERMALINK_SIGNS.issuperset(text):
                self._append(f"{lead}{text}{trail}")
            elif lead or trail:
                self._append(" ")

        return close

    def _image(self, element: HtmlElement) -> None:
        """`![alt](absolute URL)`; an image without alt text is decoration and is left out.

        A lazy-loaded image names its real address in `data-src` while `src`
        holds a placeholder (often a data: URI, which `resolve` refuses).
        """
        alt = element.get("alt")
        if not alt or self._raw or alt.isspace() or _names_nothing(alt):
            return
        url = self._url(element.get("src")) or self._url(element.get("data-src"))
        if url is None:
            return
        if not alt.isascii() and may_hold_invisible(alt):
            alt, removed = remove_invisible(alt)
            self.removed += removed
        alt = " ".join(alt.split()).replace("[", "\\[").replace("]", "\\]")
        if alt:
            self._append(f"![{alt}]({url})")

    def _url(self, href: str | None) -> str | None:
        if href is None:
            return None
        if href not in self._urls:
            self._urls[href] = resolve(self._base, href)
        return self._urls[href]

    def _wrap(self, marker: str) -> _Closer | None:
        if self._raw or self._emphasis >= _MAX_EMPHASIS:
            return None
        start, generation = len(self._inline), self._generation
        self._emphasis += 1

        def close() -> None:
            self._emphasis -= 1
            if generation != self._generation or start > len(self._inline):
                return  # a block boundary came in between
            lead, text, trail = self._take(start)
            if text:
                self._append(f"{lead}{marker}{text}{marker}{trail}")
            elif lead:
                self._append(" ")

        return close

    def _code(self) -> _Closer | None:
        if self._raw:
            return None
        start = len(self._inline)
        self._raw += 1
        self._inline_only += 1  # a block inside inline code becomes a space

        def close() -> None:
            self._raw -= 1
            self._inline_only -= 1
            lead, text, trail = self._take(start)
            if text:
                fence = "`" * (_longest_run(text) + 1)
                pad = " " if text.startswith("`") or text.endswith("`") else ""
                self._append(f"{lead}{fence}{pad}{text}{pad}{fence}{trail}")

        return close

    def _preformatted(self, element: HtmlElement) -> _Closer:
        self._flush()
        self._pre += 1
        language = _language(element)

        def close() -> None:
            self._pre -= 1
            text = "".join(self._inline)
            self._inline.clear()
            text = "\n".join(line.rstrip() for line in text.split("\n"))
            text = text.removeprefix("\n").rstrip("\n")  # HTML drops the first newline
            if text.strip():
                fence = "`" * max(3, _longest_run(text) + 1)
                self._emit([fence + language, *text.split("\n"), fence])
            self._generation += 1

        return close

    def _list(self, element: HtmlElement, *, ordered: bool) -> _Closer:
        self._boundary()
        start = _NUMBER.fullmatch(element.get("start") or "")
        self._lists.append([int(ordered), int(start.group(1)) if start else 1])

        def close() -> None:
            self._lists.pop()
            self._boundary()
            if not self._lists:
                self._last_was_item = False  # the next list is a new list

        return close

    def _item(self) -> _Closer:
        self._boundary()
        if self._inline_only:
            return self._boundary
        marker = "- "
        if self._lists and self._lists[-1][0]:
            marker = f"{self._lists[-1][1]}. "
            self._lists[-1][1] += 1
        pushed = self._push_prefix(" " * len(marker))
        if pushed:
            self._marker = (len(self._prefix) - 1, marker)

        def close() -> None:
            self._flush()
            if pushed:
                self._prefix.pop()
                self._marker = None

        return close

    def _quote(self) -> _Closer:
        self._boundary()
        if self._inline_only:
            return self._boundary
        pushed = self._push_prefix("> ")

        def close() -> None:
            self._flush()
            if pushed:
                self._prefix.pop()

        return close

    # tables

    def _table_part(self, element: HtmlElement, tag: str) -> _Closer | None:
        table = self._table
        if tag == "table":
            stat = self._analysis.stats.get(element)
            nested = stat is None or bool(stat.flags & HAS_TABLE)
            self._boundary()
            if table is not None or self._inline_only or nested:
                return self._boundary  # a layout table: its cells are blocks
            if stat is not None and stat.flags & HAS_STRUCTURE:
                return self._table_as_list(element)
            self._table = _Table()
            return self._close_table
        if table is None:  # pragma: no cover - guarded by _enter_block
            return None
        if tag == "tr":
            table.rows.append([])
            return None
        return self._cell(table, caption=tag == "caption")

    def _table_as_list(self, element: HtmlElement) -> _Closer:
        """A table whose cells hold lists, code or quotes: one list item per row.

        A pipe table cell holds one line, so such a table reads as a list
        whose items are the rows and whose paragraphs are the cells.
        """
        self._row_lists += 1
        close_list = self._list(element, ordered=False)

        def close() -> None:
            self._row_lists -= 1
            close_list()

        return close

    def _cell(self, table: _Table, *, caption: bool) -> _Closer:
        start = len(self._inline)
        self._inline_only += 1

        def close() -> None:
            self._inline_only -= 1
            _, text, _ = self._take(start)
            text = text.replace("\n", " ").replace("|", "\\|")
            if caption:
                table.caption = text
                return
            if not table.rows:
                table.rows.append([])
            table.rows[-1].append(text)

        return close

    def _close_table(self) -> None:
        table = self._table
        self._table = None
        self._flush()  # text that stood between the cells
        if table is None:  # pragma: no cover - set by _table_part
            return
        rows = [row[:_MAX_COLUMNS] for row in table.rows if any(row)]
        if table.caption:
            self._emit([table.caption])
        columns = max((len(row) for row in rows), default=0)
        if len(rows) >= 2 and columns >= 2:
            self._emit(_pipe_table(rows, columns))
        else:
            for row in rows:
                for cell in row:
                    if cell:
                        self._emit([cell])
        self._generation += 1


def _common_prefix(first: str, second: str) -> str:
    size = 0
    for left, right in zip(first, second, strict=False):
        if left != right:
            break
        size += 1
    return first[:size]


def _pipe_table(rows: list[list[str]], columns: int) -> list[str]:
    padded = [row + [""] * (columns - len(row)) for row in rows]
    lines = ["| " + " | ".join(padded[0]) + " |", "|" + " --- |" * columns]
    lines.extend("| " + " | ".join(row) + " |" for row in padded[1:])
    return lines


def _language(element: HtmlElement) -> str:
    """The language named by `data-lang` or a `language-x` class, near the `pre`.

    It is looked for on the `pre`, its `code` and two wrappers.
    """
    parent = element.getparent()
    wrappers = (parent, None if parent is None else parent.getparent())
    for candidate in (element, element.find("code"), *wrappers):
        if candidate is None:
            continue
        named: str = candidate.get("data-lang") or candidate.get("data-language") or ""
        if named and _LANGUAGE_NAME.fullmatch(named) and named.lower() not in _NO_LANGUAGE:
            return named
        match = _LANGUAGE.search(candidate.get("class") or "")
        if match and match.group(1).lower() not in _NO_LANGUAGE:
            return match.group(1)
    return ""


def _names_nothing(alt: str) -> bool:
    """Whether the alt text is one file name or placeholder word (`_NOT_A_DESCRIPTION`).

    No alternative of the pattern holds whitespace, so alt text of two or
    more words (the common case) is a description without running it; `\\s`
    and `str.split` agree on what whitespace is.
    """
    return len(alt.split(None, 1)) == 1 and _NOT_A_DESCRIPTION.fullmatch(alt) is not None


def _longest_run(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0)
