"""crates.io: Rust packages through the crates.io registry API.

Provider: crates.io, `GET https://crates.io/api/v1/crates?q=` (the registry's
own API, described in its OpenAPI document; access rules in its data-access
policy). Admission record: docs/engines/crates.md.

Configuration (`[engines.crates]`):

    endpoint   replaces https://crates.io/api/v1/crates, for a mirror or proxy.

The data-access policy asks for at most one request a second and a
User-Agent that identifies the application and a way to reach its operator.
The standard User-Agent carries `[operator] contact`, so the engine stays
inactive until that contact is set (`requires_contact`).

Result (a package registry, issue 11 item 6). Title = the crate name,
snippet = its description (raw), URL = the registry page
https://crates.io/crates/<name>, date = `updated_at`: crates.io moves it when
a version is published, and search results carry no per-version date.

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

# Crate names are ASCII letters, digits, `-` and `_` (crates.io refuses others).
_CRATE_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class _Meta(StrictModel):
    total: int | None = None


class _Answer(StrictModel):
    crates: list[object] | None = None  # absent: empty only when `meta.total` is 0
    meta: _Meta = _Meta()


class _Crate(StrictModel):
    name: str
    description: str | None = None
    updated_at: str | None = None


class Crates(Driver):
    """crates.io crates through `GET /api/v1/crates`."""

    id: ClassVar[str] = "crates"
    categories: ClassVar[frozenset[Category]] = frozenset({Category.CODE})
    releases_turn_on_answer: ClassVar[bool] = True  # one request, no pause asked
    admission: ClassVar[Admission] = Admission(
        min_interval_ms=1_000,  # data-access policy: at most one request a second
        max_concurrency=1,
        cacheable=True,
        attribution_required=False,
        max_body_bytes=1024 * 1024,
    )
    default_endpoint: ClassVar[str] = "https://crates.io/api/v1/crates"
    requires_contact: ClassVar[bool] = True
    _max_per_request: ClassVar[int] = 100  # per_page ceiling

    def build_request(self, params: SearchParams) -> EngineRequest:
        count = min(params.results, self._max_per_request)
        return EngineRequest(
            url=self.endpoint,
            params=(("q", params.query), ("per_page", str(count))),
            headers=(("Accept", "application/json"),),
        )

    def parse(self, response: EngineResponse) -> list[RawHit]:
        # No credential is sent: a 403 (crates.io's answer to a missing or
        # anonymous User-Agent) refuses the client, blocked; 429 rate_limited.
        raise_for_status(response)
        # `{"errors": [...]}` under 200 is crates.io refusing the request.
        answer = read_answer(_Answer, response, "crates")
        return collect_hits(listed_or_empty(answer.crates, answer.meta.total), _hit)


def _hit(position: int, item: object) -> RawHit | None:
    """One crate, or None when its name is not a crate name: that crate is skipped."""
    crate = validate_or_none(_Crate, item)
    if crate is None or not _CRATE_NAME.match(crate.name):
        return None
    return RawHit(
        rank=position,
        url=f"https://crates.io/crates/{crate.name}",
        title=crate.name,
        snippet=crate.description or "",
        date=iso_date(crate.updated_at),
    )
