"""Eligible content (REQ-FETCH-008, REQ-PAGE-005): judged from the headers first.

A response's body is read only when its status, media type and content
coding can be used, so a refused type (a 6 MiB PDF) or coding ends
unsupported_content without reading or counting its body. The type is then
confirmed from the first bytes of what was read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from rypsok.core.contract import ErrorKind, ToolError
from rypsok.core.egress.client import DECODED_CODINGS
from rypsok.core.egress.messages import AgentResponse
from rypsok.core.fetch.decode import Kind, media_type, sniff_kind

_MEDIA_TYPE: Final = re.compile(
    r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$"
)
# Content codings decoded (egress offers exactly these), and "identity".
_DECODED: Final = frozenset({*DECODED_CODINGS, "identity"})
# The content codings of the IANA HTTP Content Coding Registry that rypsok does
# not decode: an error names one of these, never the header's own text.
_KNOWN_UNDECODED: Final = frozenset(
    {"aes128gcm", "compress", "dcb", "dcz", "exi", "pack200-gzip", "x-compress", "x-gzip"}
)


def wants_body(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a response's body is read: only a 2xx whose type and coding can be used.

    Decided on the headers alone, so a refused type (a 6 MiB PDF) or coding
    ends unsupported_content without reading or counting its body (REQ-PAGE-005).
    """
    if not 200 <= status < 300:
        return False  # a redirect's Location and a status are all that is used
    if _undecoded_coding(headers) is not None:
        return False
    # An eligible type, or an unknown one that the first bytes will decide.
    return sniff_kind(media_type(headers.get("content-type")), b"") is not None


def eligible_kind(response: AgentResponse) -> Kind:
    """The extractor kind, or unsupported_content naming the type or the coding."""
    declared = media_type(response.headers.get("content-type"))
    kind = sniff_kind(declared, response.body)
    if kind is None:
        shown = declared if _MEDIA_TYPE.match(declared) else None
        raise ToolError(
            ErrorKind.UNSUPPORTED_CONTENT,
            "rypsok extracts HTML, XHTML, plain text and Markdown only; this resource is "
            "another type (detail.media_type).",
            reason="media_type",
            media_type=shown,
        )
    coding = _undecoded_coding(response.headers)
    if coding is not None:
        named = (
            f"the {coding} coding" if coding in _KNOWN_UNDECODED else "a coding it does not know"
        )
        raise ToolError(
            ErrorKind.UNSUPPORTED_CONTENT,
            f"The site sent the page compressed with {named}; rypsok decodes only "
            f"{', '.join(DECODED_CODINGS)}. Use another source.",
            reason="content_encoding",
        )
    return kind


def _undecoded_coding(headers: Mapping[str, str]) -> str | None:
    """The first content coding of the response that rypsok does not decode, if any."""
    for coding in headers.get("content-encoding", "").split(","):
        name = coding.strip().lower()
        if name and name not in _DECODED:
            return name
    return None
