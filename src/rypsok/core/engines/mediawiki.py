"""What every MediaWiki Action API answer shares, for `wikipedia` and `wikidata`.

Both engines speak the same API (`w/api.php`, `format=json&formatversion=2`),
so they read an answer the same way, here, once (REQ-MAIN-004):

1. the HTTP status and interstitial pages, as for every engine (no credential
   is sent, so a 403 refuses the client, not a key: `blocked`);
2. the JSON document, or parse_failure;
3. MediaWiki's own errors, which come with HTTP 200 and an `error` object
   (https://www.mediawiki.org/wiki/API:Errors_and_warnings). `ratelimited`
   and `maxlag` are throttle signals that clear after a wait (maxlag comes
   with Retry-After): rate_limited. Any other code is request_failure. An
   `error` without a string `code` is not MediaWiki's format: parse_failure.

The code and its `info` text never leave this module (REQ-SEC-016).
"""

from __future__ import annotations

from typing import Final, TypeVar

from rypsok.core.engines.base import (
    EngineFailure,
    EngineResponse,
    FailureClass,
    retry_after_ms,
)
from rypsok.core.engines.common import (
    StrictModel,
    decode_json,
    json_model,
    raise_for_status,
    validate,
    validate_or_none,
)

THROTTLE_CODES: Final = frozenset({"ratelimited", "maxlag"})


class MediaWikiAnswer(StrictModel):
    """The base of an engine's answer model: it notices an `error` object, even a null one."""

    error: object = None


_A = TypeVar("_A", bound=MediaWikiAnswer)


class _ApiError(StrictModel):
    code: str


def read_answer(response: EngineResponse, model: type[_A]) -> _A:
    """A MediaWiki answer as `model`, or the `EngineFailure` it signals."""
    raise_for_status(response)
    answer = json_model(model, response)
    if answer is not None and "error" not in answer.model_fields_set:
        return answer
    # Refused in one pass, or an error: the document decides (`json_model`).
    document = decode_json(response)
    if isinstance(document, dict) and "error" in document:
        raise _api_failure(document["error"], response)
    return validate(model, document)


def _api_failure(error: object, response: EngineResponse) -> EngineFailure:
    """The class of a MediaWiki `error` object."""
    api_error = validate_or_none(_ApiError, error)
    if api_error is None:
        return EngineFailure(FailureClass.PARSE_FAILURE)
    if api_error.code in THROTTLE_CODES:
        return EngineFailure(
            FailureClass.RATE_LIMITED, retry_after_ms=retry_after_ms(response.headers)
        )
    return EngineFailure(FailureClass.REQUEST_FAILURE)
