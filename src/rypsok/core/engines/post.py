"""JSON POST requests, for the providers whose search API takes a JSON body (Kagi, Tavily, Exa).

Only the request side is shared; each driver keeps its own answer model and
failure signals (REQ-ARCH-002).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from rypsok.core.engines.base import EngineRequest

JSON_MEDIA_TYPE = "application/json"


def json_post(
    url: str,
    payload: Mapping[str, object],
    *,
    credential: tuple[str, str] | None = None,
) -> EngineRequest:
    """A POST of `payload` as compact JSON; `credential` is one header, declared as such."""
    headers = [("Content-Type", JSON_MEDIA_TYPE), ("Accept", JSON_MEDIA_TYPE)]
    credentials: frozenset[str] = frozenset()
    if credential is not None:
        headers.append(credential)
        credentials = frozenset({credential[0]})
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return EngineRequest(
        url=url,
        method="POST",
        body=body,
        headers=tuple(headers),
        credential_headers=credentials,
    )
