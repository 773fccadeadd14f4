"""Wikidata: entity lookup by label and alias.

Provider: the Wikimedia Foundation, through the Wikibase API module
`wbsearchentities` on www.wikidata.org
(https://www.wikidata.org/w/api.php?action=help&modules=wbsearchentities).
The SPARQL query service is deliberately not used: it refuses or times out
automated clients too often for a default engine. Admission record:
docs/engines/wikidata.md.

Configuration (`[engines.wikidata]`):

    endpoint   replaces https://www.wikidata.org/w/api.php, for a proxy or
               mirror of Wikidata. Result URLs stay on www.wikidata.org.

Language. `language` selects the language whose labels and aliases are
matched and `uselang` the language of the returned label and description,
so the engine honours every language in `languages` (a conservative subset of
Wikidata's content languages). Without a selection, or for a language outside
that set (an operator default), it asks in English.

Result. Title = the label, snippet = the description, URL =
https://www.wikidata.org/wiki/<Q-id>, built from the entity id on the public
host derived from `default_endpoint`: the reply's own `url` is
protocol-relative and names whatever host answered. No date.

Errors. MediaWiki's shared reading (status, `error` objects, throttle codes)
is in core/engines/mediawiki.py.
"""

from __future__ import annotations

from typing import ClassVar, Final
from urllib.parse import urlsplit

from pydantic import Field

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
)
from rypsok.core.engines.common import Lenient, StrictModel, collect_hits
from rypsok.core.engines.mediawiki import MediaWikiAnswer, read_answer


class _Term(StrictModel):
    value: str


class _Display(StrictModel):
    label: _Term | None = None
    description: _Term | None = None


class _Entity(StrictModel):
    id: str = Field(pattern=r"^Q[1-9][0-9]{0,11}$")
    label: str | None = None
    description: str | None = None
    display: _Display | None = None

    def title(self) -> str | None:
        """The label in the asked language or its fallback; None when the entity has none."""
        display = self.display.label.value if self.display and self.display.label else None
        return display or self.label or None

    def snippet(self) -> str:
        display = (
            self.display.description.value if self.display and self.display.description else None
        )
        return display or self.description or ""


class _Answer(MediaWikiAnswer):
    search: list[Lenient[_Entity]]


class Wikidata(Driver):
    """Wikidata items through `action=wbsearchentities`."""

    id: ClassVar[str] = "wikidata"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.GENERAL})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    languages: ClassVar[frozenset[str]] = frozenset(
        {
            "ar", "bg", "bn", "ca", "cs", "cy", "da", "de", "el", "en", "eo", "es", "et",
            "eu", "fa", "fi", "fr", "ga", "gl", "he", "hi", "hr", "hu", "hy", "id", "it",
            "ja", "ka", "kk", "ko", "la", "lt", "lv", "mk", "ms", "nb", "nl", "nn", "pl",
            "pt", "ro", "ru", "sk", "sl", "sq", "sr", "sv", "sw", "ta", "th", "tr", "uk",
            "ur", "vi", "zh",
        }
    )  # fmt: skip
    # Labels are at most 250 characters, so a longer string cannot match one (U).
    max_query_chars: ClassVar[int] = 250
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=100,  # no published read cap; a polite self-imposed spacing
        max_concurrency=1,  # API etiquette: serial requests
        cacheable=True,
        attribution_required=False,  # structured data is CC0
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://www.wikidata.org/w/api.php"
    _max_per_request: ClassVar[int] = 50  # wbsearchentities `limit` ceiling
    default_language: ClassVar[str | None] = "en"

    def build_request(self, params: SearchParams) -> EngineRequest:
        language = params.language if params.language in self.languages else "en"
        return EngineRequest(
            url=self.endpoint,
            params=(
                ("action", "wbsearchentities"),
                ("search", params.query),
                ("language", language),
                ("uselang", language),
                ("type", "item"),
                ("limit", str(min(params.results, self._max_per_request))),
                ("format", "json"),
                ("formatversion", "2"),
            ),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        answer = read_answer(response, _Answer)
        return collect_hits(answer.search, self._hit)

    def _hit(self, position: int, item: object) -> RawHit | None:
        """One hit, or None when it lacks an item id or a label: that hit is skipped."""
        if not isinstance(item, _Entity):
            return None
        entity = item
        title = entity.title()
        if title is None:
            return None
        return RawHit(
            rank=position,
            url=f"https://{_ITEM_HOST}/wiki/{entity.id}",
            title=title,
            snippet=entity.snippet(),
        )


# The host of an item's public page: the default endpoint's, read once (not per hit).
_ITEM_HOST: Final = urlsplit(Wikidata.default_endpoint).netloc
