"""npm: JavaScript packages through the npm registry's search endpoint.

Provider: npm, Inc., `GET https://registry.npmjs.org/-/v1/search?text=`
(documented in the registry's REGISTRY-API.md). Admission record:
docs/engines/npm.md.

Configuration (`[engines.npm]`):

    endpoint   replaces https://registry.npmjs.org/-/v1/search, for a mirror.

Request. `text` = the query, `size` = the result count (at most 250).

Result (a package registry, issue 11 item 6). Title = the package name,
snippet = its description (raw), URL = the registry page
https://www.npmjs.com/package/<name> (a scoped name keeps its `@scope/`),
date = `package.date`, the publication of the latest version. The answer's
scores and counters are not read: `dependents` comes as a string and the
scores were retired, so neither is a stable field.

No language, time range or safe-search parameter exists.
"""

from __future__ import annotations

import re
from typing import ClassVar, Final

from rypsok.core.engines.base import (
    Admission,
    Category,
    Driver,
    EngineRequest,
    EngineResponse,
    RawHit,
    SearchParams,
)
from rypsok.core.engines.common import (
    StrictModel,
    collect_hits,
    iso_date,
    listed_or_empty,
    raise_for_status,
    read_answer,
    validate_or_none,
)

# npm's package-name rules: URL-safe characters, optionally @scope/. New names
# are lower case; packages published before 2017 keep upper-case letters
# (`JSONStream`), and the registry still serves them.
_PACKAGE_NAME: Final = re.compile(
    r"^(?:@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]{0,213}$"
)


class _Answer(StrictModel):
    objects: list[object] | None = None  # absent: empty only when `total` is 0
    total: int | None = None


class _Package(StrictModel):
    name: str
    description: str | None = None
    date: str | None = None


class _Object(StrictModel):
    package: _Package


class Npm(Driver):
    """npm packages through `GET /-/v1/search`."""

    id: ClassVar[str] = "npm"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.CODE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=500,  # U: no number published; two a second is far below any seen limit
        max_concurrency=1,
        cacheable=True,
        attribution_required=False,
        max_body_bytes=2 * 1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://registry.npmjs.org/-/v1/search"
    _max_per_request: ClassVar[int] = 250  # size ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        count = min(params.results, self._max_per_request)
        return EngineRequest(
            url=self.endpoint,
            params=(("text", params.query), ("size", str(count))),
            headers=(("Accept", "application/json"),),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # 429 is the registry's rate limit; 400 (a query it refuses) request_failure.
        raise_for_status(response)
        # `{"error": ...}` under 200 is the registry refusing the query.
        answer = read_answer(_Answer, response, "objects")
        return collect_hits(listed_or_empty(answer.objects, answer.total), _hit)


def _hit(position: int, item: object) -> RawHit | None:
    """One package, or None when it has no valid name: that package is skipped."""
    found = validate_or_none(_Object, item)
    if found is None or not _PACKAGE_NAME.match(found.package.name):
        return None
    package = found.package
    return RawHit(
        rank=position,
        url=f"https://www.npmjs.com/package/{package.name}",
        title=package.name,
        snippet=package.description or "",
        date=iso_date(package.date),
    )
