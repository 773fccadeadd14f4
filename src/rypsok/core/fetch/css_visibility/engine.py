"""The engine: read the page's sheets and attributes, match, cascade, decide, remove.

`_Engine.run` is one page's check: `<style>` sheets cut into rules
(`sheets`), candidates from the `hidden`, `aria-hidden` and `style`
attributes, a first pass over the rules that could hide, a second pass over
the rules that could re-show what the first found, the cascade for those
elements only (`!important`, inline over sheet, specificity, order), and the
decision per element: hidden whole, text hidden by inheritance, or the
aria-hidden rendering beside its clipped accessible copy. Every loop is
iterative and spends the LIM-V budgets (`bounds`), so the work is linear in
the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from cssselect import SelectorError
from cssselect.xpath import ExpressionError
from lxml import etree  # type: ignore[import-untyped]

from rypsok.core.fetch.css_visibility.bounds import _Budget
from rypsok.core.fetch.css_visibility.colours import _Rgba
from rypsok.core.fetch.css_visibility.contrast import Palette, declared_colours
from rypsok.core.fetch.css_visibility.custom import declaring_rules, resolved
from rypsok.core.fetch.css_visibility.glyphs import _GLYPH_TAG, draw_glyphs
from rypsok.core.fetch.css_visibility.markup import (
    _Carriers,
    _hidden_by_markup,
    _links_a_style_sheet,
    _names_import,
    _presentational,
    attribute_candidates,
    carriers,
)
from rypsok.core.fetch.css_visibility.matching import _parse_chunk, _Rule, _Selector
from rypsok.core.fetch.css_visibility.media import _safe_media
from rypsok.core.fetch.css_visibility.prechecks import could_hide
from rypsok.core.fetch.css_visibility.properties import (
    _BLACK,
    _GROUPS,
    _INHERIT,
    _INHERITED,
    _SPELLINGS,
    _TRANSPARENT,
    _UNKNOWN,
    _WHITE,
    Value,
    _block_may_hide,
    _Declared,
    _hides_alone,
    _hides_subtree,
    _parse_style,
    _State,
    _visually_clipped,
)
from rypsok.core.fetch.css_visibility.sheets import (
    _cached_split,
    _Chunk,
    _Keys,
    _names_none_of,
    _SheetRules,
    _spelling_pattern,
    _spells_any,
)
from rypsok.core.fetch.css_visibility.tree import (
    _aria_hidden,
    _chars,
    _has_own_text,
    _holds_text,
    _inside,
    _names_of,
)
from rypsok.core.fetch.css_visibility.variables import (
    VarRef,
)
from rypsok.core.fetch.parse import CANCEL_CHECK_INTERVAL, Element, check_cancelled
from rypsok.core.trees import remove_keeping_tail

# -- the engine ---------------------------------------------------------------------------

_NEVER_HIDDEN: Final = frozenset({"html", "body", "head"})
_UNRENDERED: Final = ("style", "template")
_ELEMENT_COUNT: Final = etree.XPath("count(//*)")
# A selector whose subject names no class or id is evaluated under the parents of the
# carriers of one of its other names when they are at most this many (`_scope`).
_SCOPE_CARRIERS: Final = 16
_ELEMENT_TEST_VISITS: Final = 4  # measured: XPath on one element from Python vs. in a tree walk

_Specificity: TypeAlias = tuple[int, int, int]
_Entry: TypeAlias = tuple[_Rule, _Specificity]
_Rank: TypeAlias = tuple[bool, bool, _Specificity, int, int]


@dataclass(slots=True)
class _Engine:
    root: Element
    budget: _Budget = field(default_factory=_Budget)
    elements_removed: int = 0
    chars_removed: int = 0
    external: bool = False  # the page links a style sheet we do not read
    glyph_rules: bool = False  # a sheet names the glyph elements of MathJax 3
    chunks: list[_Chunk] = field(default_factory=list)  # the rules some element may match
    read: list[tuple[_SheetRules, int]] = field(default_factory=list)  # sheets, rules read
    # Rules matched per element, the style attributes parsed, the cascaded values.
    entries: dict[Element, list[_Entry]] = field(default_factory=dict)
    inline: dict[Element, tuple[_Declared, ...]] = field(default_factory=dict)
    parsed_styles: dict[str, tuple[_Declared, ...]] = field(default_factory=dict)
    values: dict[Element, dict[str, Value]] = field(default_factory=dict)
    candidates: dict[Element, None] = field(default_factory=dict)  # an ordered set
    element_count: int = 0
    interest_tags: tuple[set[Element], dict[str, list[Element]]] | None = None
    # Inherited state at an element and the root of the hidden text it lies in.
    states: dict[Element, tuple[_State, Element | None]] = field(default_factory=dict)
    # The text colours and backgrounds the page declares (`contrast`), and the
    # candidates that only a rule matched through them made.
    palette: Palette = field(default_factory=Palette)
    by_colours: set[Element] = field(default_factory=set)
    # Elements with a hiding property through `var()` (`variables`).
    var_users: dict[Element, None] = field(default_factory=dict)
    # The elements carrying each class and each id (read once, when first needed).
    present: tuple[_Carriers, _Carriers] | None = None

    def run(self) -> None:
        self.external = _links_a_style_sheet(self.root)
        self._read_sheets()
        if self.glyph_rules:  # before anything is judged (MathJax 3 formulas)
            draw_glyphs(self.root, self._every_chunk(), external=self.external)
        self._find_attribute_candidates()
        hiding, text_colours, others = self._first_pass_rules()
        for rule, by_colours in hiding:
            self._match(rule, interest=None, by_colours=by_colours)
        if text_colours:
            self._match_text_colours(text_colours)
        if self.var_users:
            self._match_custom_properties()
        if not self.candidates:
            return
        removed, regions = self._decide()
        if self._second_pass(others, removed, regions):
            self.values.clear()  # new rules matched: decide again with the full cascade
            self.states.clear()
            removed, regions = self._decide()
        for element in removed:
            self._remove(element)
        for region in regions:
            self._clear_region(*region)

    # -- reading ---------------------------------------------------------------------------

    def _read_sheets(self) -> None:
        """Split the applicable `<style>` sheets into rules; remove style and template."""
        sheets: list[str] = []
        unrendered = list(self.root.iter(*_UNRENDERED))
        for element in unrendered:
            if element.tag == "style" and not _inside(element, "template"):
                media = element.get("media")
                if media is None or _safe_media(media):
                    sheets.append(element.text or "")
        for element in unrendered:
            if not _inside(element, "template"):
                remove_keeping_tail(element)
        self.glyph_rules = any(_GLYPH_TAG in css for css in sheets)
        if any(_names_import(css) for css in sheets):
            self.external = True  # an imported sheet is not fetched either: colours unknown
        read: list[tuple[_SheetRules, int]] = []  # each sheet and how many of its rules
        for css in sheets:
            size = len(css) if css.isascii() else len(css.encode("utf-8", "surrogatepass"))
            left = self.budget.sheet_bytes
            if not self.budget.take("sheet_bytes", size):
                # LIM-V1: read the part that fits; a rule cut in two is dropped.
                encoded = css.encode("utf-8", "surrogatepass")
                part = _cached_split(encoded[:left].decode("utf-8", "ignore"))
                read.append((part, max(0, len(part.rules) - 1)))
                break
            sheet = _cached_split(css)
            read.append((sheet, len(sheet.rules)))
        self._keep_viable_rules(read)

    def _keep_viable_rules(self, read: list[tuple[_SheetRules, int]]) -> None:
        """The rules some element may match, as chunks, in order (see `_SheetRules.viable`).

        Every rule skipped here is one `_may_apply` refuses, which both passes ask
        before anything else (the budgets included), so the page's check is the same
        as over every rule; only the rules left are looked at one by one.
        """
        if not any(count for _, count in read):
            return
        classes, ids = self.present or self._present()
        names = dict.fromkeys(
            [*("." + name for name in classes), *("#" + name for name in ids)], ""
        )
        first = 0
        for sheet, count in read:
            viable = sheet.viable(names, count)
            hiding = sheet.hiding(self.external, viable)
            chunks = [
                _Chunk(*sheet.rules[index], first + index, may_hide, sheet, index)
                for index, may_hide in zip(viable, hiding, strict=True)
            ]
            if not self.external:  # see `_may_contrast`
                self._read_colours(sheet, viable, chunks)
            self.chunks.extend(chunks)
            first += count
        self.read = read

    def _read_colours(self, sheet: _SheetRules, viable: list[int], chunks: list[_Chunk]) -> None:
        """Add the colours of the rules that may apply to the page's palette; keep each
        rule's on its chunk for `_may_contrast`."""
        at = {index: place for place, index in enumerate(viable)}
        for index, colours in sheet.colours(viable):
            self.palette.add(colours)
            chunks[at[index]].colours = colours

    def _every_chunk(self) -> list[_Chunk]:
        """All the rules read, viable or not (the glyph rules are judged on all of them)."""
        chunks: list[_Chunk] = []
        for sheet, count in self.read:
            hiding = sheet.hiding(self.external)
            chunks.extend(
                _Chunk(*sheet.rules[index], len(chunks), hiding[index], sheet, index)
                for index in range(count)
            )
        return chunks

    def _find_attribute_candidates(self) -> None:
        for element in attribute_candidates(self.root):
            if element.tag in _NEVER_HIDDEN:
                continue
            if hint := _presentational(element):
                self.candidates[element] = None  # its colour: compared with the ancestors
                if not self.external:
                    self.palette.add(declared_colours(hint))
            if _hidden_by_markup(element) or _aria_hidden(element):
                self.candidates[element] = None
                continue
            style = element.get("style") or ""
            if not could_hide(style, external=self.external, inline=True):
                continue
            declared = self._inline(element)
            if any(isinstance(d.value, VarRef) for d in declared):
                self.var_users[element] = None
            if any(isinstance(d.value, _Rgba) for d in declared):
                self.candidates[element] = None  # a colour: compared with the ancestors
                if not self.external:  # see `_may_contrast`
                    self.palette.add(declared_colours(declared))
            elif _block_may_hide(declared, self.external):
                self.candidates[element] = None

    def _inline(self, element: Element) -> tuple[_Declared, ...]:
        """The element's style attribute, parsed once per distinct text (LIM-V2)."""
        known = self.inline.get(element)
        if known is not None:
            return known
        style = element.get("style") or ""
        declared = self.parsed_styles.get(style)
        if declared is None:
            declared = ()
            if style and self.budget.take("attribute_bytes", len(style)):
                declared = _parse_style(style)
            self.parsed_styles[style] = declared
        self.inline[element] = declared
        return declared

    def _first_pass_rules(self) -> tuple[list[tuple[_Rule, bool]], list[_Rule], list[_Rule]]:
        """Parse the rules whose text could hide; split them into hiding (and whether
        only the page's palette makes them so: a background near a text colour of the
        page), those whose text colour only is near a background of the page, and the
        others."""
        hiding: list[tuple[_Rule, bool]] = []
        text_colours: list[_Rule] = []
        others: list[_Rule] = []
        for index, chunk in enumerate(self.chunks):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if not (chunk.may_hide or self._may_contrast(chunk)) or not self._may_apply(chunk):
                continue
            if not self.budget.take("rules", 1):  # LIM-V3
                break
            rule = _parse_chunk(chunk)
            if rule is None:
                continue
            if _block_may_hide(rule.declarations, self.external):
                hiding.append((rule, False))
            elif not self.external and self.palette.contrasts(
                colours := declared_colours(rule.declarations)
            ):
                if self.palette.near_a_colour(colours):
                    hiding.append((rule, True))
                else:
                    text_colours.append(rule)
            else:
                others.append(rule)
        return hiding, text_colours, others

    def _match_text_colours(self, rules: list[_Rule]) -> None:
        """Match the rules whose text colour is near a background of the page, only
        where a matched rule or a style attribute declares a background: on those
        elements, inside them and above them (an inherited colour). Every background
        near a page colour was matched above, so nothing else can hide by contrast."""
        painted = [
            element
            for element, entries in self.entries.items()
            if any(_sets_background(rule.declarations) for rule, _ in entries)
        ]
        painted += [e for e, declared in self.inline.items() if _sets_background(declared)]
        if not painted:
            return
        within: set[Element] = set()
        for element in painted:
            if element in within:
                continue  # its subtree and ancestors are there already
            within.add(element)
            within.update(element.iterancestors())
            within.update(e for e in element.iterdescendants() if isinstance(e.tag, str))
        for rule in rules:
            self._match(rule, interest=None, by_colours=True, within=within)

    def _may_contrast(self, chunk: _Chunk) -> bool:
        """Whether the rule's text declares a colour near one of the page's (`contrast`).

        Never on a page with a sheet we do not read: any box between the text and
        a declared background may have a background of its own there (a site's
        footer, white on its dark blue, inside a white `body`).
        """
        return chunk.colours is not None and self.palette.contrasts(chunk.colours)

    def _may_apply(self, chunk: _Chunk, keys: _Keys | None = None) -> bool:
        """Whether some selector of the rule could match (and, given `keys`, match one of
        the elements they name), judged from its text without parsing it."""
        classes, ids = self.present or self._present()
        for part in chunk.sketch():
            if not (part.classes <= classes.keys() and part.ids <= ids.keys()):
                continue
            if keys is None or "\\" in part.subject:
                return True
            if not part.subject <= keys.names:
                continue
            if part.tag is not None and part.tag not in keys.tags:
                continue
            if part.tag is not None and not part.subject and part.tag not in keys.bare_tags:
                continue  # `div{display:block}` cannot beat a class rule
            return True
        return False

    def _present(self) -> tuple[_Carriers, _Carriers]:
        """The elements carrying each class and each id of the document."""
        if self.present is None:
            self.present = carriers(self.root)
        return self.present

    # -- matching --------------------------------------------------------------------------

    def _match(
        self,
        rule: _Rule,
        interest: set[Element] | None,
        *,
        by_colours: bool = False,
        within: set[Element] | None = None,
    ) -> None:
        """Evaluate each selector of `rule` once; record the matches.

        With `interest` None the rule hides and every match becomes a
        candidate (`by_colours`: only through the page's palette); otherwise
        only matches inside `interest` are recorded.
        """
        check_cancelled()  # once per rule: an abandoned extraction stops here (REQ-PAGE-008)
        for selector in rule.selectors():
            matched = rule
            if selector.relaxed:
                if interest is not None:
                    continue  # a rewritten selector never re-shows (relax.py)
                matched = rule.hiding_part()
            for element in self._matches(selector, interest if within is None else within):
                if within is not None and element not in within:
                    continue
                if interest is not None and element not in interest:
                    continue
                if not self.budget.take("matches", 1):  # LIM-V4
                    return
                self.entries.setdefault(element, []).append((matched, selector.specificity))
                if interest is None and element.tag not in _NEVER_HIDDEN:
                    if rule.holds_var:
                        self.var_users[element] = None
                    if not by_colours:
                        self.by_colours.discard(element)
                    elif element not in self.candidates:
                        self.by_colours.add(element)
                    self.candidates[element] = None

    def _matches(self, selector: _Selector, interest: set[Element] | None) -> list[Element]:
        """The selector's matches, within `interest` when given.

        A selector whose subject needs a class or id is tested on the elements
        that carry it, one restricted to `interest` on those elements of it;
        any other is evaluated once over the whole tree.
        """
        classes, ids = self.present or self._present()
        if not (selector.classes <= classes.keys() and selector.ids <= ids.keys()):
            return []
        carriers: list[Element] | None = None
        if selector.key is not None:
            kind, name = selector.key
            carriers = (ids if kind == "id" else classes).get(name, [])
            if interest is not None:
                carriers = [element for element in carriers if element in interest]
        elif interest is not None:
            carriers = self._interest_by_tag(interest).get(selector.tag or "*", [])
        try:
            if carriers is not None:
                # A test through XPath from Python costs about as much as four elements
                # visited by one evaluation over the tree; a plain selector's, one.
                weight = 1 if selector.plain is not None else _ELEMENT_TEST_VISITS
                if not self.budget.take("visits", weight * len(carriers)):  # LIM-V5
                    return []
                if selector.key_alone():
                    return list(carriers)  # `.a` or `#b`: every carrier, nothing to test
                return selector.among(carriers)
            if not self.element_count:
                self.element_count = max(1, int(_ELEMENT_COUNT(self.root)))
            # Charged as a walk over the whole tree even when scoped: the bound is spent
            # as it always was, so a page is cut by LIM-V5 where it was before.
            if not self.budget.take("visits", self.element_count):  # LIM-V5
                return []
            scope = self._scope(selector, classes, ids)
            return selector.over_tree(self.root) if scope is None else selector.within(scope)
        except (etree.XPathError, ExpressionError, SelectorError, ValueError, RecursionError):
            return []

    def _scope(
        self, selector: _Selector, classes: _Carriers, ids: _Carriers
    ) -> list[Element] | None:
        """Subtrees that hold every match of a selector whose subject names no class or
        id, or None: search the whole tree.

        A class or id the selector requires (not under `:not()`, `:is()` or
        `:has()`) is carried by an element that matches one of its compounds, and
        every combinator leads from that element to a descendant, a child or a
        sibling, so each match lies in the subtree of that element's parent (of the
        element itself when it has none). `.share-btn span` is then evaluated under
        the parents of the few `.share-btn` elements instead of at every `span`.
        The name with the fewest carriers is taken; with more than
        `_SCOPE_CARRIERS` of them the whole tree is searched, as before.
        """
        fewest: list[Element] | None = None
        for index, names in ((classes, selector.classes), (ids, selector.ids)):
            for name in names:
                found = index.get(name, [])
                if fewest is None or len(found) < len(fewest):
                    fewest = found
        if not fewest or len(fewest) > _SCOPE_CARRIERS:
            return None
        roots: dict[Element, None] = {}
        for carrier in fewest:
            parent = carrier.getparent()
            roots[carrier if parent is None else parent] = None
        # A root inside another root's subtree adds nothing but repeated work.
        return [root for root in roots if not any(up in roots for up in root.iterancestors())]

    def _interest_by_tag(self, interest: set[Element]) -> dict[str, list[Element]]:
        """`interest` by tag, and all of it under "*" (built once per second pass)."""
        if self.interest_tags is None or self.interest_tags[0] is not interest:
            index: dict[str, list[Element]] = {"*": list(interest)}
            for element in interest:
                index.setdefault(str(element.tag), []).append(element)
            self.interest_tags = (interest, index)
        return self.interest_tags[1]

    def _second_pass(
        self,
        others: list[_Rule],
        removed: list[Element],
        regions: list[tuple[Element, _State]],
    ) -> bool:
        """Read and match the rules that could re-show what the first pass hid.

        Only the elements found hidden matter, and only the properties that
        hid them: a `display:none` is undone by `display`, inherited hiding
        by visibility, font size or colour on the element, its ancestors or
        inside it. True when some rule was matched.
        """
        in_play: set[str] = set()
        interest: set[Element] = set()
        bare: set[Element] = set()  # elements a rule naming only their tag could re-show
        for element in removed:
            for prop, value in self._cascade(element).items():
                if _hides_alone(prop, value):
                    in_play.update(_GROUPS.get(prop, ()))
                    interest.add(element)
            if self._hidden_by_tag_rules_only(element):
                bare.add(element)
        for root, _ in regions:
            in_play.update(_INHERITED)
            related = {root, *root.iterancestors()}
            related.update(e for e in root.iterdescendants() if isinstance(e.tag, str))
            interest.update(related)
            bare.update(related)
        for element in self.candidates:
            if element in self.by_colours:
                # Every background near its colour was matched in the first pass (the
                # palette holds both sides): not hidden then, nothing read now can hide
                # it; hidden then, it is a region above.
                continue
            if element not in interest and self._sets_colour(element):
                # Its own colour is judged against its ancestors' backgrounds, and a rule
                # naming it more precisely may give it another: read both.
                in_play.update(("background", "color"))
                related = {element, *element.iterancestors()}
                interest.update(related)
                bare.update(related)
        if not in_play:
            return False  # only attributes hide: nothing in CSS re-shows them
        keys = _Keys(
            _names_of(interest), {str(e.tag) for e in interest}, {str(e.tag) for e in bare}
        )
        spellings = _spelling_pattern(
            frozenset(spelling for prop in in_play for spelling in _SPELLINGS[prop])
        )
        rules = [
            rule
            for rule in others
            if any(d.prop in in_play for d in rule.declarations)
            and self._may_apply(rule.chunk, keys)
        ]
        for index, chunk in enumerate(self.chunks):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if chunk.parsed or not _spells_any(chunk, spellings):
                continue
            if _names_none_of(chunk, keys) or not self._may_apply(chunk, keys):
                continue
            if not self.budget.take("rules", 1):  # LIM-V3
                break
            rule = _parse_chunk(chunk)
            if rule is not None and any(d.prop in in_play for d in rule.declarations):
                rules.append(rule)
        for rule in rules:
            self._match(rule, interest)
        return bool(rules)

    def _hidden_by_tag_rules_only(self, element: Element) -> bool:
        """Whether every rule that matched the element names no class or id (nor an inline
        style hides it), so that a rule naming only a tag may win over them."""
        entries = self.entries.get(element, ())
        return (
            bool(entries)
            and element.get("style") is None
            and all(specificity[0] == 0 and specificity[1] == 0 for _, specificity in entries)
        )

    def _sets_colour(self, element: Element) -> bool:
        return any(
            d.prop in ("color", "text-fill", "background") and isinstance(d.value, _Rgba)
            for d in self._declared(element)
        )

    # -- the cascade -----------------------------------------------------------------------

    def _declared(self, element: Element) -> list[_Declared]:
        """Every declaration that applies to `element`, in cascade order (the last wins)."""
        ranked: list[tuple[_Rank, _Declared]] = []
        for rule, specificity in self.entries.get(element, ()):
            for declared in rule.declarations:
                rank = (declared.important, False, specificity, rule.order, declared.position)
                ranked.append((rank, declared))
        if element.get("style") is not None:
            for declared in self._inline(element):
                rank = (declared.important, True, (0, 0, 0), 0, declared.position)
                ranked.append((rank, declared))
        for declared in _presentational(element):
            # A presentational hint comes before every author rule (HTML, "Rendering").
            ranked.append(((False, False, (-1, 0, 0), 0, 0), declared))
        ranked.sort(key=lambda pair: pair[0])
        return [declared for _, declared in ranked]

    def _cascade(self, element: Element) -> dict[str, Value]:
        """The winning value of each property declared for `element` (after matching)."""
        known = self.values.get(element)
        if known is None:
            known = {}
            for declared in self._declared(element):
                if isinstance(declared.value, VarRef):
                    known.update(resolved(element, declared.value, self.entries, self.budget))
                else:
                    known[declared.prop] = declared.value
            self.values[element] = known
        return known

    # -- custom properties (`custom`) ------------------------------------------------------

    def _match_custom_properties(self) -> None:
        """Match the rules that declare the custom properties the `var()` users name,
        on those elements and their ancestors (where an inherited value comes from)."""
        references = [
            declared.value
            for element in self.var_users
            for declared in self._declared(element)
            if isinstance(declared.value, VarRef)
        ]
        interest: set[Element] = set()
        for element in self.var_users:
            interest.add(element)
            interest.update(element.iterancestors())
        for rule in declaring_rules(references, self.chunks, interest):
            if not self.budget.take("rules", 1):  # LIM-V3
                break
            self._match(rule, interest)

    # -- deciding --------------------------------------------------------------------------

    def _decide(self) -> tuple[list[Element], list[tuple[Element, _State]]]:
        """Candidates removed whole, and the roots of text hidden by inheritance."""
        removed: dict[Element, None] = {}
        regions: dict[Element, _State] = {}
        for index, element in enumerate(self.candidates):
            if not index % CANCEL_CHECK_INTERVAL:
                check_cancelled()
            if element.tag in _NEVER_HIDDEN or element in removed or element in regions:
                continue
            if self._hidden_whole(element):
                removed[element] = None
                continue
            root, state = self._region_root(element)
            if root is not None:
                regions[root] = state
        outermost = [e for e in removed if not any(a in removed for a in e.iterancestors())]
        kept = [
            (root, state)
            for root, state in regions.items()
            if not any(a in removed or a in regions for a in root.iterancestors())
        ]
        return outermost, kept

    def _hidden_whole(self, element: Element) -> bool:
        if _hidden_by_markup(element):
            return True
        if _aria_hidden(element) and not self._beside_its_accessible_copy(element):
            return True
        return _hides_subtree(self._cascade(element))

    def _beside_its_accessible_copy(self, element: Element) -> bool:
        """Whether the aria-hidden `element` is the visible rendering of a sibling that
        is its copy for assistive technology, visually clipped (see "aria-hidden" above).

        Only the two adjacent element siblings are looked at, so each element is
        tested at most twice and the check stays linear in the document.
        """
        for sibling in (element.getprevious(), element.getnext()):
            if sibling is None or not isinstance(sibling.tag, str):
                continue
            if sibling.get("hidden") is not None or _aria_hidden(sibling):
                continue
            if _visually_clipped(self._cascade(sibling)) and _holds_text(sibling):
                return True
        return False

    def _region_root(self, element: Element) -> tuple[Element | None, _State]:
        """The topmost ancestor-or-self whose own text inherited values hide, and its state.

        States and roots are remembered per element, so many candidates under
        one ancestor cost one walk down from the root, not one each.
        """
        path: list[Element] = []
        node: Element | None = element
        while node is not None and node not in self.states:
            path.append(node)
            node = node.getparent()
        if node is None:
            parent_state, parent_root = self._page_state(), None
        else:
            parent_state, parent_root = self.states[node]
        for ancestor in reversed(path):
            state = self._inherit(ancestor, parent_state)
            root = parent_root
            if root is None and state.hides_text() and ancestor.tag not in _NEVER_HIDDEN:
                root = ancestor
            self.states[ancestor] = (state, root)
            parent_state, parent_root = state, root
        state, root = self.states[element]
        return root, (self.states[root][0] if root is not None else state)

    def _page_state(self) -> _State:
        """Black on white, or unknown colours when an external sheet may set them."""
        return _State(
            invisible=False,
            zero_font=False,
            colour=None if self.external else _BLACK,
            background=None if self.external else _WHITE,
        )

    def _inherit(self, element: Element, parent: _State) -> _State:
        """The state at `element`, given its parent's.

        Each element with declarations costs a visit (LIM-V5); past the bound
        an element inherits its parent's state unchanged, which can only hide
        more, never show hidden text.
        """
        if (
            element not in self.entries
            and element.get("style") is None
            and element.tag != "font"  # `<font color>` (`_presentational`)
        ):
            return parent
        if not self.budget.take("visits", 1):
            return parent
        values = self._cascade(element)
        exempt = element.tag in _NEVER_HIDDEN
        invisible, zero_font, colour, background = parent
        visibility = values.get("visibility")
        if visibility in ("hidden", "collapse"):
            invisible = not exempt
        elif visibility == "visible":
            invisible = False
        font = values.get("font-size")
        if font == "zero":
            zero_font = not exempt
        elif font == "absolute":
            zero_font = False
        declared_colour = values.get("color", _INHERIT)
        if isinstance(declared_colour, _Rgba):
            colour = declared_colour
        elif declared_colour == _UNKNOWN:
            colour = None
        fill = values.get("text-fill")
        if isinstance(fill, _Rgba):
            # The glyphs are painted in the fill colour, or by the background when it is
            # clipped to the text (gradient headings): then their colour is not known.
            colour = None if values.get("background-clip") is True else fill
        declared_background = values.get("background", _TRANSPARENT)
        if isinstance(declared_background, _Rgba):
            background = declared_background
        elif declared_background == _UNKNOWN:
            background = None
        return _State(invisible, zero_font, colour, background)

    # -- changing the tree -----------------------------------------------------------------

    def _clear_region(self, root: Element, state: _State) -> None:
        """Clear the text hidden under `root`; keep what descendants re-show."""
        if root.getparent() is None:
            return
        stack: list[tuple[Element, _State]] = [(root, state)]
        cleared = shown = False
        while stack:
            element, here = stack.pop()
            if element is not root:
                here = self._inherit(element, here)
            if here.hides_text():
                cleared = self._clear_own_text(element) or cleared
            elif _has_own_text(element):
                shown = True
            stack.extend((child, here) for child in element if isinstance(child.tag, str))
        if not shown:
            self._remove(root)  # nothing of it shows: drop the empty shell too
        elif cleared:
            self.elements_removed += 1

    def _clear_own_text(self, element: Element) -> bool:
        """Clear the element's text and its children's tails (text in its own flow)."""
        cleared = False
        if element.text:
            self.chars_removed += _chars(element.text)
            element.text = None
            cleared = True
        for child in element:
            if child.tail:
                self.chars_removed += _chars(child.tail)
                child.tail = None
                cleared = True
        return cleared

    def _remove(self, element: Element) -> None:
        if element.getparent() is None:
            return
        self.elements_removed += 1
        # One count over the joined text: whitespace never joins or splits a character,
        # so this is the sum over the pieces, without a call per piece.
        self.chars_removed += _chars("".join(element.itertext()))
        remove_keeping_tail(element)


def _sets_background(declarations: Sequence[_Declared]) -> bool:
    return any(d.prop == "background" and isinstance(d.value, _Rgba) for d in declarations)
