"""Extractors: from a rule's pattern match to the span to report, or None.

Each one checks what the pattern cannot: the body is not filler, a structure
decodes (a JOSE header, a Discord user id, Basic credentials), a value under a
secret's name looks like a secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote

from rypsok.core.privacy.kinds import MASK_OPENING
from rypsok.core.privacy.values import (
    b64_decoded,
    b64url_decoded,
    has_both_cases,
    has_letter_and_digit,
    is_filler,
    is_jose_header,
    is_template,
    looks_generated,
    looks_like_secret,
)

# Key material a private-key block must carry; a bare header is a question, not a key.
_MIN_PRIVATE_KEY_BODY_CHARS = 32
# Base64 key material comes in long unbroken runs (64-character lines); prose after a
# header comes in words. Only runs this long count as material.
_MIN_KEY_MATERIAL_RUN_CHARS = 16
_PEM_LAYOUT = re.compile(r"\s|\\[nr]")
# A parameter value named as a secret shorter than this is a word, not a key.
_MIN_PARAMETER_VALUE_CHARS = 8
# An HMAC signature (Azure SAS `sig`, presigned URLs) is base64 of 32 to 64 bytes.
_SIGNATURE_BYTES = (32, 64)
_SIGNATURE_NAMES = frozenset({"sig", "signature", "x-amz-signature", "x-goog-signature"})
_DISCORD_ID_DIGITS = (17, 20)

# A span of the text: (start, end), in Unicode scalar values.
Span = tuple[int, int]
Extractor = Callable[[re.Match[str]], Span | None]


def token(*, both_cases: bool = False, digit: bool = False) -> Extractor:
    """A prefixed token: the whole match, unless its body is filler or lacks a known trait."""

    def extract(match: re.Match[str]) -> Span | None:
        body = match.group("body")
        if is_filler(body):
            return None
        if both_cases and not has_both_cases(body):
            return None
        if digit and not any(c.isdigit() for c in body):
            return None
        return match.span()

    return extract


def alternatives(*groups: str, both_cases: bool = False, digit: bool = False) -> Extractor:
    """A token with several documented forms: the body is the form's group that matched."""

    def extract(match: re.Match[str]) -> Span | None:
        body = next((match.group(g) for g in groups if match.group(g) is not None), "")
        if not body or is_filler(body):
            return None
        if both_cases and not has_both_cases(body):
            return None
        if digit and not any(c.isdigit() for c in body):
            return None
        return match.span()

    return extract


# Hex bodies: a digit is almost sure in 32 random hex digits, and absent from filler.
mailgun = alternatives("body", "hex", digit=True)
square = alternatives("body", "secret", "access", both_cases=True, digit=True)
grafana = alternatives("body", "cloud", both_cases=True, digit=True)
sentry = alternatives("body", "org", digit=True)
notion = alternatives("body", "legacy", both_cases=True, digit=True)
new_relic = alternatives("body", "insert", "license", digit=True)


def named_value(match: re.Match[str]) -> Span | None:
    """A value after a field name that says it is a secret; the name is not reported."""
    if is_filler(match.group("value")):
        return None
    return match.span("value")


def _is_key_material(body: str) -> bool:
    """Base64 key material: long runs, together long enough, with both cases and digits.

    Prose after a header (`-----BEGIN RSA PRIVATE KEY----- what is this format`) is
    words: short runs, or long ones of one case. It is a question, not a key.
    """
    runs = [run for run in _PEM_LAYOUT.split(body) if len(run) >= _MIN_KEY_MATERIAL_RUN_CHARS]
    material = "".join(runs)
    return (
        len(material) >= _MIN_PRIVATE_KEY_BODY_CHARS
        and has_both_cases(material)
        and any(c.isdigit() for c in material)
        and not is_filler(material)
    )


def private_key_block(match: re.Match[str]) -> Span | None:
    """Header to footer (or to the end of the material), if it carries key material."""
    if not _is_key_material(match.group("body")):
        return None
    return match.span()


def jwt(match: re.Match[str]) -> Span | None:
    """The token's segments, if its header is a JOSE header."""
    segments = match.group(0).split(".")
    # Compact JOSE has 3 (JWS) or 5 (JWE) segments. A trailing dot ends a sentence, and
    # a fourth segment is the text that follows (`<token>.txt`), not part of the token.
    while len(segments) > 3 and not segments[-1]:
        segments.pop()
    if len(segments) == 4:
        segments.pop()
    # A JWS needs its payload; a JWE may leave its key empty but not iv, ciphertext, tag.
    needed = segments[1:2] if len(segments) == 3 else segments[2:]
    if not all(needed) or not is_jose_header(segments[0]):
        return None
    return match.start(), match.start() + len(".".join(segments))


def discord_bot_token(match: re.Match[str]) -> Span | None:
    """Three parts whose first decodes to a numeric user id."""
    user_id = b64url_decoded(match.group("id"))
    shortest, longest = _DISCORD_ID_DIGITS
    if user_id is None or not shortest <= len(user_id) <= longest or not user_id.isdigit():
        return None
    if is_filler(match.group("body")):
        return None
    return match.span()


def url_userinfo(match: re.Match[str]) -> Span | None:
    """The `user:password` of an authority, if the password is neither empty nor a stand-in."""
    authority = match.group("authority")
    at = authority.rfind("@")
    if at <= 0:
        return None
    userinfo = unquote(authority[:at])
    if userinfo.startswith(MASK_OPENING):
        return None
    user, _colon, password = userinfo.partition(":")
    # A password equal to the user name is a published default (guest:guest), no secret.
    if password == user or is_template(password):
        return None
    start = match.start("authority")
    return start, start + at


def credential_header(match: re.Match[str]) -> Span | None:
    """A header value: Basic must decode to `user:password`; others must look opaque."""
    value = match.group("value")
    scheme = match.groupdict().get("scheme")
    if scheme is not None and scheme.lower() == "basic":
        raw = b64_decoded(value)
        if raw is None:
            return None
        user_pass = raw.decode("utf-8", errors="replace")
        _user, colon, password = user_pass.partition(":")
        if not colon or is_template(password):
            return None
    elif not looks_like_secret(value):
        return None
    return match.span("value")


def _parameter_value(match: re.Match[str]) -> tuple[str, Span]:
    """The value of a `name=value` match, without its quotes, and where it is."""
    group = "quoted" if match.group("quoted") is not None else "value"
    return match.group(group), match.span(group)


def secret_parameter(match: re.Match[str]) -> Span | None:
    """A `name=value` whose value looks like a secret rather than a word or a placeholder."""
    raw, span = _parameter_value(match)
    value = unquote(raw)
    if (
        len(value) < _MIN_PARAMETER_VALUE_CHARS
        or not has_letter_and_digit(value)
        or is_template(value)
        or is_filler(value)
    ):
        return None
    return span


def generated_parameter(match: re.Match[str]) -> Span | None:
    """A value under a broad credential name, reported only if it looks generated."""
    raw, span = _parameter_value(match)
    value = unquote(raw)
    if match.group("name").lower() in _SIGNATURE_NAMES and _is_signature(value):
        return span
    if not looks_generated(value):
        return None
    return span


def _is_signature(value: str) -> bool:
    """Base64 (or hex) of a MAC's 32 to 64 bytes: checked by decoding, not guessed."""
    raw = b64_decoded(value) if len(value) % 4 == 0 else None
    if raw is None and len(value) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in value):
        raw = bytes.fromhex(value)
    shortest, longest = _SIGNATURE_BYTES
    return (
        raw is not None
        and shortest <= len(raw) <= longest
        and has_letter_and_digit(value)
        and not is_filler(value)
    )
