"""The credential check: high-confidence credential formats in a query or a URL.

Contract (REQ-PRIV-002, REQ-SEARCH-006, REQ-LIFE-001):

- `find_credentials(text)` returns every span of `text` that holds a credential in
  one of the formats named by `CredentialKind`, sorted by `start` and never
  overlapping. Positions and lengths count Unicode scalar values (LIM-U1), which is
  what a Python `str` indexes.
- `mask_credentials(text, findings)` replaces each finding by `[masked:<kind>]` and
  keeps every other character as it was.
- A finding names a kind and a position, never the value: not in its fields, not in
  its `repr` (REQ-PRIV-004, REQ-ERR-004). The value stays in the caller's text.
- The caller decides what a finding means under the operator's mode (LIM-P1); this
  module only detects and masks.

What counts as high-confidence: a registered prefix with a fixed alphabet and length
(`ghp_…`, `AKIA…`), a structure that is checked, not guessed (a JWT header that
decodes to JSON with `alg`, a Discord token whose first part decodes to a numeric
id), a private-key block with base64 key material (a header followed by prose is a
question), a password in a URL's userinfo, a value in a field that names itself a
secret (`AccountKey=`, `Authorization: Bearer`, `?api_key=`), or a value that looks
generated (long, mixed, random by a runs test) under a parameter name that says
credential (`?token=`, `?key=`, `?sig=`). Documentation placeholders
(`AKIAXXXXXXXXXXXXXXXX`, `…EXAMPLE`, `user:password@`, `<token>`) are not credentials
and pass. Personal data is not detected. `docs/credential-check.md` lists the formats
and what is left out.

A URL may carry a credential percent-encoded (`?next=https%3A%2F%2Fu%3Ap%40h`), so
the text is also read with its ASCII percent-escapes decoded; positions still refer
to the text as given.

Bounded work: every pattern starts at a literal or behind a boundary that a run of
its own characters cannot satisfy, and repeats only through possessive or
unambiguous quantifiers, so a scan is linear in the length of the text.
"""

from __future__ import annotations

import base64
import binascii
import enum
import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

__all__ = [
    "CredentialFinding",
    "CredentialKind",
    "CredentialMode",
    "find_credentials",
    "mask_credentials",
]


class CredentialMode(enum.StrEnum):
    """What the operator lets the caller do with a finding (LIM-P1)."""

    DENY = "deny"
    WARN = "warn"
    MASK = "mask"
    OFF = "off"


class CredentialKind(enum.StrEnum):
    """The fixed vocabulary of detected formats, one name per format (CLR-6).

    Each value is the member's name in lower case (`github_token`); callers show it.
    """

    AWS_ACCESS_KEY_ID = enum.auto()
    AWS_SECRET_ACCESS_KEY = enum.auto()
    GCP_API_KEY = enum.auto()
    GOOGLE_OAUTH_CLIENT_SECRET = enum.auto()
    GOOGLE_OAUTH_ACCESS_TOKEN = enum.auto()
    AZURE_STORAGE_ACCOUNT_KEY = enum.auto()
    AZURE_SHARED_ACCESS_KEY = enum.auto()
    AZURE_AD_CLIENT_SECRET = enum.auto()
    GITHUB_TOKEN = enum.auto()
    GITLAB_TOKEN = enum.auto()
    SLACK_TOKEN = enum.auto()
    SLACK_WEBHOOK_URL = enum.auto()
    DISCORD_BOT_TOKEN = enum.auto()
    DISCORD_WEBHOOK_URL = enum.auto()
    TELEGRAM_BOT_TOKEN = enum.auto()
    STRIPE_KEY = enum.auto()
    OPENAI_API_KEY = enum.auto()
    ANTHROPIC_API_KEY = enum.auto()
    HUGGINGFACE_TOKEN = enum.auto()
    GROQ_API_KEY = enum.auto()
    XAI_API_KEY = enum.auto()
    REPLICATE_API_TOKEN = enum.auto()
    OPENROUTER_API_KEY = enum.auto()
    NPM_TOKEN = enum.auto()
    PYPI_TOKEN = enum.auto()
    SENDGRID_API_KEY = enum.auto()
    SHOPIFY_TOKEN = enum.auto()
    DIGITALOCEAN_TOKEN = enum.auto()
    DOCKERHUB_TOKEN = enum.auto()
    VAULT_TOKEN = enum.auto()
    MAILGUN_API_KEY = enum.auto()
    SQUARE_TOKEN = enum.auto()
    DATABRICKS_TOKEN = enum.auto()
    LINEAR_API_KEY = enum.auto()
    DOPPLER_TOKEN = enum.auto()
    POSTMAN_API_KEY = enum.auto()
    ATLASSIAN_API_TOKEN = enum.auto()
    PERPLEXITY_API_KEY = enum.auto()
    GRAFANA_TOKEN = enum.auto()
    SENTRY_TOKEN = enum.auto()
    TWILIO_CREDENTIAL = enum.auto()
    NOTION_TOKEN = enum.auto()
    WEBHOOK_SIGNING_SECRET = enum.auto()
    NEW_RELIC_KEY = enum.auto()
    PRIVATE_KEY = enum.auto()
    JWT = enum.auto()
    URL_USERINFO = enum.auto()
    CREDENTIAL_HEADER = enum.auto()
    SECRET_PARAMETER = enum.auto()


@dataclass(frozen=True, slots=True)
class CredentialFinding:
    """Where a credential is, in Unicode scalar values (LIM-U1); never what it is."""

    kind: CredentialKind
    start: int
    length: int

    def __post_init__(self) -> None:
        if self.start < 0 or self.length < 1:
            raise ValueError("a finding starts at 0 or later and is at least 1 character long")


def find_credentials(text: str) -> tuple[CredentialFinding, ...]:
    """Every credential in `text`, sorted by start, overlapping candidates merged."""
    candidates = list(_candidates(text))
    decoded = _percent_decoded(text)
    if decoded is not None:
        candidates.extend(decoded.to_original(candidate) for candidate in _candidates(decoded.text))
    return _merge(candidates)


def mask_credentials(text: str, findings: Sequence[CredentialFinding]) -> str:
    """`text` with each finding replaced by `[masked:<kind>]`; nothing of a value stays.

    Findings may come in any order; where two overlap, one marker covers both.
    """
    pieces: list[str] = []
    cursor = 0
    for finding in sorted(findings, key=lambda finding: finding.start):
        end = finding.start + finding.length
        if end > len(text):
            raise ValueError("a finding lies outside the text it is applied to")
        if finding.start < cursor:
            cursor = max(cursor, end)
            continue
        pieces.append(text[cursor : finding.start])
        pieces.append(f"{_MASK_OPENING}{finding.kind}]")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


# -- what a value must look like to be reported -------------------------------------------

_MASK_OPENING = "[masked:"
# A random body of the lengths used here almost surely has this many distinct characters;
# fewer means filler such as "XXXX" or "0000".
_MIN_DISTINCT_CHARS = 5
# Key material a private-key block must carry; a bare header is a question, not a key.
_MIN_PRIVATE_KEY_BODY_CHARS = 32
# Base64 key material comes in long unbroken runs (64-character lines); prose after a
# header comes in words. Only runs this long count as material.
_MIN_KEY_MATERIAL_RUN_CHARS = 16
# A value named as a secret (header, parameter) shorter than this is a word, not a key.
_MIN_HEADER_VALUE_CHARS = 16
_MIN_PARAMETER_VALUE_CHARS = 8
# What a value under a broad credential name (`token=`, `key=`, `sig=`) must show to be
# reported: it looks generated, which ordinary words, slugs, versions and ids do not.
# The miss rates on random strings are measured by the tests and in the docs.
_MIN_GENERATED_CHARS = 16
# Shannon entropy of the value's own characters, in bits per character. A random
# string of 16 hex digits has about 3.3; "2023-01-01T00:00:00Z" has 2.5.
_MIN_GENERATED_ENTROPY_BITS = 2.75
# Share of neighbouring letters and digits that change class (lower, upper, digit).
# Random base62 changes class at about 60 % of positions, hex at about 47 %;
# "release-2023-11-05-final" at 11 %.
_MIN_CLASS_CHANGE_RATIO = 0.2
# Wald-Wolfowitz runs test on the letter/digit sequence: random characters alternate
# about as often as chance says; names clump ("GoogleMapsDemo2024": z = -4). Below
# this z score the value is a name (random values fall below it well under 1 % of times).
_MIN_RUNS_Z_SCORE = -3.0
# Generated values are letters and digits with few separators; a version string or a
# slug ("python-3.11.7-amd64-full") has many. Base64's "+/=" do not count.
_MAX_SEPARATOR_SHARE = 0.15
_SEPARATORS = frozenset("-._~")
# An HMAC signature (Azure SAS `sig`, presigned URLs) is base64 of 32 to 64 bytes.
_SIGNATURE_BYTES = (32, 64)
_SIGNATURE_NAMES = frozenset({"sig", "signature", "x-amz-signature", "x-goog-signature"})
_GENERATED_ALPHABET = re.compile(r"[A-Za-z0-9._~+/=-]++")
# A JOSE header is a few hundred characters; longer ones are not decoded.
_MAX_JWT_HEADER_CHARS = 1_024
_DISCORD_ID_DIGITS = (17, 20)

_PLACEHOLDER_WORDS = frozenset(
    {
        "pass",
        "passwd",
        "password",
        "pw",
        "pwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "changeme",
        "guest",
        "admin",
        "root",
        "test",
        "user",
        "username",
        "mypassword",
        "my_password",
        "my-password",
    }
)
_TEMPLATE_OPENINGS = frozenset("<{[($%*")
_FILLER_ONLY = frozenset("*xX.•#_-")
_UPPER_SNAKE = re.compile(r"[A-Z]+(?:_[A-Z]+)*")
_PEM_LAYOUT = re.compile(r"\s|\\[nr]")


def _is_filler(body: str) -> bool:
    """Too few distinct characters, or a documented example value such as AWS's `…EXAMPLE`."""
    return len(set(body)) < _MIN_DISTINCT_CHARS or "EXAMPLE" in body.upper()


def _is_template(value: str) -> bool:
    """A placeholder written where a secret goes: `<token>`, `${PASS}`, `password`, `YOUR_KEY`."""
    if not value or value[0] in _TEMPLATE_OPENINGS or set(value) <= _FILLER_ONLY:
        return True
    lowered = value.lower()
    return (
        lowered in _PLACEHOLDER_WORDS
        or lowered.startswith("your")
        or "example" in lowered
        or _UPPER_SNAKE.fullmatch(value) is not None
    )


def _has_letter_and_digit(value: str) -> bool:
    return any(c.isascii() and c.isalpha() for c in value) and any(
        c.isascii() and c.isdigit() for c in value
    )


def _has_both_cases(value: str) -> bool:
    return any("A" <= c <= "Z" for c in value) and any("a" <= c <= "z" for c in value)


def _looks_like_secret(value: str) -> bool:
    """An opaque value (bearer token, API key) rather than a word or a placeholder."""
    return (
        len(value) >= _MIN_HEADER_VALUE_CHARS
        and _has_letter_and_digit(value)
        and not _is_template(value)
        and not _is_filler(value)
    )


def _char_class(char: str) -> int:
    """0 lower, 1 upper, 2 digit, -1 anything else (separators do not count)."""
    if "a" <= char <= "z":
        return 0
    if "A" <= char <= "Z":
        return 1
    if "0" <= char <= "9":
        return 2
    return -1


def _entropy_bits_per_char(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def _class_change_ratio(value: str) -> tuple[int, float]:
    """(how many of lower/upper/digit occur, share of neighbours that change class)."""
    classes = [c for c in map(_char_class, value) if c >= 0]
    if len(classes) < 2:
        return len(set(classes)), 0.0
    changes = sum(1 for left, right in itertools.pairwise(classes) if left != right)
    return len(set(classes)), changes / (len(classes) - 1)


def _letter_digit_runs_z(value: str) -> float:
    """How far the number of letter/digit runs lies from chance, in standard deviations."""
    is_digit = [c.isdigit() for c in value if _char_class(c) >= 0]
    total = len(is_digit)
    digits = sum(is_digit)
    letters = total - digits
    if digits == 0 or letters == 0:
        return 0.0
    runs = 1 + sum(1 for left, right in itertools.pairwise(is_digit) if left != right)
    pairs = 2 * letters * digits
    expected = 1 + pairs / total
    variance = pairs * (pairs - total) / (total * total * (total - 1))
    if variance <= 0:
        return 0.0
    return (runs - expected) / math.sqrt(variance)


def _looks_generated(value: str) -> bool:
    """Whether a parameter value looks machine-generated: long, mixed, random-looking.

    Each test is one an ordinary value fails: a word or an id is short or has no
    letter or no digit; a slug or a version string is full of separators or keeps
    its classes in long runs; a date repeats few characters; a name with a number
    clumps its digits.
    """
    if len(value) < _MIN_GENERATED_CHARS or _GENERATED_ALPHABET.fullmatch(value) is None:
        return False
    if _is_template(value) or _is_filler(value) or not _has_letter_and_digit(value):
        return False
    separators = sum(1 for c in value if c in _SEPARATORS)
    if separators > _MAX_SEPARATOR_SHARE * len(value):
        return False
    _classes, change_ratio = _class_change_ratio(value)
    return (
        change_ratio >= _MIN_CLASS_CHANGE_RATIO
        and _entropy_bits_per_char(value) >= _MIN_GENERATED_ENTROPY_BITS
        and _letter_digit_runs_z(value) >= _MIN_RUNS_Z_SCORE
    )


def _padded(data: str) -> str:
    return data + "=" * (-len(data) % 4)


def _b64url_decoded(data: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(_padded(data))
    except (binascii.Error, ValueError):
        return None


def _b64_decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(_padded(data), validate=True)
    except (binascii.Error, ValueError):
        return None


def _is_jose_header(segment: str) -> bool:
    """A JWT's first segment decodes to a JSON object that names its algorithm."""
    if len(segment) > _MAX_JWT_HEADER_CHARS:
        return False
    raw = _b64url_decoded(segment)
    if raw is None:
        return False
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)


# -- extractors: from a pattern match to the span to report, or None ------------------------

_Span = tuple[int, int]
_Extractor = Callable[[re.Match[str]], _Span | None]


def _token(*, both_cases: bool = False, digit: bool = False) -> _Extractor:
    """A prefixed token: the whole match, unless its body is filler or lacks a known trait."""

    def extract(match: re.Match[str]) -> _Span | None:
        body = match.group("body")
        if _is_filler(body):
            return None
        if both_cases and not _has_both_cases(body):
            return None
        if digit and not any(c.isdigit() for c in body):
            return None
        return match.span()

    return extract


def _alternatives(*groups: str, both_cases: bool = False, digit: bool = False) -> _Extractor:
    """A token with several documented forms: the body is the form's group that matched."""

    def extract(match: re.Match[str]) -> _Span | None:
        body = next((match.group(g) for g in groups if match.group(g) is not None), "")
        if not body or _is_filler(body):
            return None
        if both_cases and not _has_both_cases(body):
            return None
        if digit and not any(c.isdigit() for c in body):
            return None
        return match.span()

    return extract


# Hex bodies: a digit is almost sure in 32 random hex digits, and absent from filler.
_mailgun = _alternatives("body", "hex", digit=True)
_square = _alternatives("body", "secret", "access", both_cases=True, digit=True)
_grafana = _alternatives("body", "cloud", both_cases=True, digit=True)
_sentry = _alternatives("body", "org", digit=True)
_notion = _alternatives("body", "legacy", both_cases=True, digit=True)
_new_relic = _alternatives("body", "insert", "license", digit=True)


def _named_value(match: re.Match[str]) -> _Span | None:
    """A value after a field name that says it is a secret; the name is not reported."""
    if _is_filler(match.group("value")):
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
        and _has_both_cases(material)
        and any(c.isdigit() for c in material)
        and not _is_filler(material)
    )


def _private_key_block(match: re.Match[str]) -> _Span | None:
    """Header to footer (or to the end of the material), if it carries key material."""
    if not _is_key_material(match.group("body")):
        return None
    return match.span()


def _jwt(match: re.Match[str]) -> _Span | None:
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
    if not all(needed) or not _is_jose_header(segments[0]):
        return None
    return match.start(), match.start() + len(".".join(segments))


def _discord_bot_token(match: re.Match[str]) -> _Span | None:
    """Three parts whose first decodes to a numeric user id."""
    user_id = _b64url_decoded(match.group("id"))
    shortest, longest = _DISCORD_ID_DIGITS
    if user_id is None or not shortest <= len(user_id) <= longest or not user_id.isdigit():
        return None
    if _is_filler(match.group("body")):
        return None
    return match.span()


def _url_userinfo(match: re.Match[str]) -> _Span | None:
    """The `user:password` of an authority, if the password is neither empty nor a stand-in."""
    authority = match.group("authority")
    at = authority.rfind("@")
    if at <= 0:
        return None
    userinfo = unquote(authority[:at])
    if userinfo.startswith(_MASK_OPENING):
        return None
    user, _colon, password = userinfo.partition(":")
    # A password equal to the user name is a published default (guest:guest), no secret.
    if password == user or _is_template(password):
        return None
    start = match.start("authority")
    return start, start + at


def _credential_header(match: re.Match[str]) -> _Span | None:
    """A header value: Basic must decode to `user:password`; others must look opaque."""
    value = match.group("value")
    scheme = match.groupdict().get("scheme")
    if scheme is not None and scheme.lower() == "basic":
        raw = _b64_decoded(value)
        if raw is None:
            return None
        user_pass = raw.decode("utf-8", errors="replace")
        _user, colon, password = user_pass.partition(":")
        if not colon or _is_template(password):
            return None
    elif not _looks_like_secret(value):
        return None
    return match.span("value")


def _parameter_value(match: re.Match[str]) -> tuple[str, _Span]:
    """The value of a `name=value` match, without its quotes, and where it is."""
    group = "quoted" if match.group("quoted") is not None else "value"
    return match.group(group), match.span(group)


def _secret_parameter(match: re.Match[str]) -> _Span | None:
    """A `name=value` whose value looks like a secret rather than a word or a placeholder."""
    raw, span = _parameter_value(match)
    value = unquote(raw)
    if (
        len(value) < _MIN_PARAMETER_VALUE_CHARS
        or not _has_letter_and_digit(value)
        or _is_template(value)
        or _is_filler(value)
    ):
        return None
    return span


def _generated_parameter(match: re.Match[str]) -> _Span | None:
    """A value under a broad credential name, reported only if it looks generated."""
    raw, span = _parameter_value(match)
    value = unquote(raw)
    if match.group("name").lower() in _SIGNATURE_NAMES and _is_signature(value):
        return span
    if not _looks_generated(value):
        return None
    return span


def _is_signature(value: str) -> bool:
    """Base64 (or hex) of a MAC's 32 to 64 bytes: checked by decoding, not guessed."""
    raw = _b64_decoded(value) if len(value) % 4 == 0 else None
    if raw is None and len(value) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in value):
        raw = bytes.fromhex(value)
    shortest, longest = _SIGNATURE_BYTES
    return (
        raw is not None
        and shortest <= len(raw) <= longest
        and _has_letter_and_digit(value)
        and not _is_filler(value)
    )


# -- the rules, most specific first: the first rule of merged candidates names the kind ----

# Not inside a longer token: a credential does not continue a word or a base64 blob.
_S = r"(?<![A-Za-z0-9_-])"
_END_ALNUM = r"(?![A-Za-z0-9])"
_END_B64URL = r"(?![A-Za-z0-9_-])"
_END_B64 = r"(?![A-Za-z0-9+/=])"
_NOT_IN_HOST = r"(?<![A-Za-z0-9.-])"
_PEM_LABEL = r"(?:[A-Z0-9]{1,16}[ +]){0,3}PRIVATE[ +]KEY(?:[ +]BLOCK)?"
_PEM_LINE_BREAK = r"(?:\s|\\[nr])*+"
_FIELD_SEPARATOR = r"[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?"
# A parameter value ends at the next `&`, `#`, `;`, `=` (base64 padding excepted) or
# blank; one that opens with a quote ends at the next quote too (`api_key='…')`), and
# the quotes belong to the syntax, not to the secret.
_PARAMETER_VALUE = (
    r"(?:[\"'`](?P<quoted>[^&#;\s=\"'`]{1,2048}+={0,2})|(?P<value>[^&#;\s=]{1,2048}+={0,2}))"
)


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: CredentialKind
    pattern: re.Pattern[str]
    extract: _Extractor


def _rule(kind: CredentialKind, pattern: str, extract: _Extractor, flags: int = 0) -> _Rule:
    return _Rule(kind, re.compile(pattern, flags), extract)


_K = CredentialKind
_RULES: tuple[_Rule, ...] = (
    _rule(_K.AWS_ACCESS_KEY_ID, _S + r"(?:AKIA|ASIA)(?P<body>[A-Z2-7]{16})" + _END_ALNUM, _token()),
    _rule(_K.GCP_API_KEY, _S + r"AIza(?P<body>[0-9A-Za-z_-]{35})" + _END_B64URL, _token()),
    _rule(
        _K.GOOGLE_OAUTH_CLIENT_SECRET,
        _S + r"GOCSPX-(?P<body>[0-9A-Za-z_-]{28})" + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.GOOGLE_OAUTH_ACCESS_TOKEN,
        _S + r"ya29\.(?P<body>[0-9A-Za-z_-]{30,2048}+)" + _END_B64URL,
        _token(),
    ),
    _rule(_K.GITHUB_TOKEN, _S + r"gh[pousr]_(?P<body>[A-Za-z0-9]{36,251}+)" + _END_ALNUM, _token()),
    _rule(
        _K.GITHUB_TOKEN,
        _S + r"github_pat_(?P<body>[A-Za-z0-9]{22}_[A-Za-z0-9]{59,80}+)" + _END_ALNUM,
        _token(),
    ),
    _rule(
        _K.GITLAB_TOKEN,
        _S
        + r"(?:glpat|gldt|glrt|glptt|glsoat|glcbt|glimt|glffct|glagent|gloas)-"
        + r"(?P<body>[0-9A-Za-z_-]{20,255}+(?:\.[0-9A-Za-z_-]{1,32}+){0,2}+)"
        + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.SLACK_WEBHOOK_URL,
        _NOT_IN_HOST
        + r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/"
        + r"(?P<body>T[0-9A-Z]{6,12}+(?:/[0-9A-Za-z]{6,64}+){2,3}+)"
        + _END_ALNUM,
        _token(),
    ),
    _rule(
        _K.SLACK_TOKEN,
        _S
        + r"(?:xox[abprs]|xoxe(?:\.xox[abprs])?|xapp)-"
        + r"(?P<body>[0-9]{1,20}+(?:-[0-9A-Za-z]{1,128}+){2,8}+)"
        + r"(?![A-Za-z0-9_])",
        _token(),
    ),
    _rule(
        _K.DISCORD_WEBHOOK_URL,
        _NOT_IN_HOST
        + r"(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api(?:/v[0-9]{1,2})?"
        + r"/webhooks/[0-9]{17,20}/(?P<body>[A-Za-z0-9_-]{60,80}+)"
        + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.DISCORD_BOT_TOKEN,
        _S
        + r"(?P<id>[MNO][A-Za-z0-9_-]{22,26}+)\.[A-Za-z0-9_-]{6}\.(?P<body>[A-Za-z0-9_-]{27,40}+)"
        + _END_B64URL,
        _discord_bot_token,
    ),
    _rule(
        _K.TELEGRAM_BOT_TOKEN,
        r"(?<![0-9])[0-9]{8,10}:(?P<body>AA[A-Za-z0-9_-]{33})" + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.STRIPE_KEY,
        _S + r"(?:sk|rk)_(?:live|test)_(?P<body>[0-9A-Za-z]{16,247}+)" + _END_ALNUM,
        _token(),
    ),
    _rule(
        _K.ANTHROPIC_API_KEY,
        _S + r"sk-ant-[a-z]{2,8}[0-9]{2}-(?P<body>[A-Za-z0-9_-]{32,400}+)" + _END_B64URL,
        _token(),
    ),
    _rule(_K.OPENROUTER_API_KEY, _S + r"sk-or-v1-(?P<body>[0-9a-f]{64})" + _END_ALNUM, _token()),
    _rule(
        _K.OPENAI_API_KEY,
        _S + r"sk-(?:proj|svcacct|admin)-(?P<body>[A-Za-z0-9_-]{20,400}+)" + _END_B64URL,
        _token(),
    ),
    # The legacy form has no marker of its own beyond "sk-" and its exact length,
    # so it must also look random: both cases and a digit.
    _rule(
        _K.OPENAI_API_KEY,
        _S + r"sk-(?P<body>[A-Za-z0-9]{48})" + _END_ALNUM,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.HUGGINGFACE_TOKEN,
        _S + r"(?:hf|api_org)_(?P<body>[A-Za-z0-9]{34,64}+)" + _END_ALNUM,
        _token(both_cases=True),
    ),
    _rule(_K.GROQ_API_KEY, _S + r"gsk_(?P<body>[A-Za-z0-9]{52})" + _END_ALNUM, _token()),
    _rule(_K.XAI_API_KEY, _S + r"xai-(?P<body>[A-Za-z0-9]{80})" + _END_ALNUM, _token()),
    _rule(_K.REPLICATE_API_TOKEN, _S + r"r8_(?P<body>[A-Za-z0-9]{37})" + _END_ALNUM, _token()),
    _rule(_K.NPM_TOKEN, _S + r"npm_(?P<body>[A-Za-z0-9]{36})" + _END_ALNUM, _token()),
    _rule(
        _K.PYPI_TOKEN,
        _S
        + r"pypi-(?P<body>AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,4096}+)"
        + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.SENDGRID_API_KEY,
        _S + r"SG\.(?P<body>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})" + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.SHOPIFY_TOKEN,
        _S + r"shp(?:at|ca|pa|ss)_(?P<body>[a-fA-F0-9]{32})" + _END_ALNUM,
        _token(),
    ),
    _rule(_K.DIGITALOCEAN_TOKEN, _S + r"do[opr]_v1_(?P<body>[a-f0-9]{64})" + _END_ALNUM, _token()),
    _rule(
        _K.DOCKERHUB_TOKEN,
        _S + r"dckr_pat_(?P<body>[A-Za-z0-9_-]{27,64}+)" + _END_B64URL,
        _token(),
    ),
    _rule(
        _K.VAULT_TOKEN,
        _S + r"hv[sbr]\.(?P<body>[A-Za-z0-9_-]{24,512}+)" + _END_B64URL,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.MAILGUN_API_KEY,
        _S
        + r"(?:key-(?P<body>[0-9a-f]{32})|(?P<hex>[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8}))"
        + _END_ALNUM,
        _mailgun,
    ),
    _rule(
        _K.SQUARE_TOKEN,
        _S
        + r"(?:sq0atp-(?P<body>[0-9A-Za-z_-]{22})|sq0csp-(?P<secret>[0-9A-Za-z_-]{43})"
        + r"|EAAA(?P<access>[0-9A-Za-z_-]{60}))"
        + _END_B64URL,
        _square,
    ),
    _rule(
        _K.DATABRICKS_TOKEN,
        _S + r"dapi(?P<body>[0-9a-f]{32})(?:-[0-9])?" + _END_ALNUM,
        _token(digit=True),
    ),
    _rule(
        _K.LINEAR_API_KEY,
        _S + r"lin_api_(?P<body>[A-Za-z0-9]{40})" + _END_ALNUM,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.DOPPLER_TOKEN,
        _S
        + r"dp\.(?:pt|ct|sa|scim|audit|st(?:\.[a-z0-9_-]{2,35}+)?)\."
        + r"(?P<body>[A-Za-z0-9]{40,44}+)"
        + _END_ALNUM,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.POSTMAN_API_KEY,
        _S + r"PMAK-(?P<body>[0-9a-fA-F]{24}-[0-9a-fA-F]{34})" + _END_ALNUM,
        _token(digit=True),
    ),
    _rule(
        _K.ATLASSIAN_API_TOKEN,
        _S + r"ATATT3(?P<body>[A-Za-z0-9_=-]{150,250}+)" + r"(?![A-Za-z0-9_=-])",
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.PERPLEXITY_API_KEY,
        _S + r"pplx-(?P<body>[A-Za-z0-9]{48})" + _END_ALNUM,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.GRAFANA_TOKEN,
        _S
        + r"(?:glsa_(?P<body>[A-Za-z0-9]{32}_[0-9a-fA-F]{8})"
        + r"|glc_(?P<cloud>eyJ[A-Za-z0-9+/]{29,400}+={0,2}))"
        + _END_B64,
        _grafana,
    ),
    _rule(
        _K.SENTRY_TOKEN,
        _S
        + r"(?:sntryu_(?P<body>[0-9a-f]{64})"
        + r"|sntrys_(?P<org>eyJpYXQiO[A-Za-z0-9+/]{10,400}+={0,2}_[A-Za-z0-9+/]{43}))"
        + _END_B64,
        _sentry,
    ),
    # A Twilio SID (AC account, SK API key) is an identifier; written with its
    # secret after a colon (`curl -u AC…:…`), the pair is a credential.
    _rule(
        _K.TWILIO_CREDENTIAL,
        _S + r"(?:AC|SK)[0-9a-f]{32}:(?P<body>[0-9A-Za-z]{32})" + _END_ALNUM,
        _token(digit=True),
    ),
    _rule(
        _K.NOTION_TOKEN,
        _S
        + r"(?:ntn_[0-9]{11}(?P<body>[A-Za-z0-9]{35})|secret_(?P<legacy>[A-Za-z0-9]{43}))"
        + _END_ALNUM,
        _notion,
    ),
    _rule(
        _K.WEBHOOK_SIGNING_SECRET,
        _S + r"whsec_(?P<body>[A-Za-z0-9+/]{32,88}+={0,2})" + _END_B64,
        _token(both_cases=True, digit=True),
    ),
    _rule(
        _K.NEW_RELIC_KEY,
        _S
        + r"(?:NRAK-(?P<body>[A-Z0-9]{27})|NRII-(?P<insert>[A-Za-z0-9_-]{32})"
        + r"|(?P<license>[0-9a-f]{36})NRAL)"
        + _END_B64URL,
        _new_relic,
    ),
    _rule(
        _K.AZURE_STORAGE_ACCOUNT_KEY,
        r"(?<![A-Za-z0-9])(?i:AccountKey)=(?P<value>[A-Za-z0-9+/]{86}==)" + _END_B64,
        _named_value,
    ),
    _rule(
        _K.AZURE_SHARED_ACCESS_KEY,
        r"(?<![A-Za-z0-9])(?i:SharedAccessKey)=(?P<value>[A-Za-z0-9+/]{43}=)" + _END_B64,
        _named_value,
    ),
    _rule(
        _K.AZURE_AD_CLIENT_SECRET,
        r"(?<![A-Za-z0-9_~.-])(?P<body>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}+)"
        + r"(?![A-Za-z0-9_~.-])",
        _token(),
    ),
    _rule(
        _K.AWS_SECRET_ACCESS_KEY,
        r"(?<![A-Za-z0-9])(?:aws[_-]?)?secret[_-]?access[_-]?key"
        + _FIELD_SEPARATOR
        + r"(?P<value>[A-Za-z0-9/+]{40})"
        + _END_B64,
        _named_value,
        re.IGNORECASE,
    ),
    _rule(
        _K.PRIVATE_KEY,
        r"-----BEGIN[ +]"
        + _PEM_LABEL
        + r"-----"
        # Armor headers of encrypted PEM and PGP blocks (Proc-Type, DEK-Info, Version).
        + r"(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z][A-Za-z-]{0,30}+:[ \t][^\r\n\\]{1,100}+){0,4}"
        + r"(?P<body>(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z0-9+/=]++)*+)"
        + r"(?:"
        + _PEM_LINE_BREAK
        + r"-----END[ +]"
        + _PEM_LABEL
        + r"-----)?",
        _private_key_block,
    ),
    # A PuTTY key file: its private part follows `Private-Lines: N` (PPK versions
    # 2 and 3); the public part before it is not secret.
    _rule(
        _K.PRIVATE_KEY,
        r"(?<![A-Za-z0-9-])Private-Lines:[ \t]*+[0-9]{1,4}+"
        + r"(?P<body>(?:"
        + _PEM_LINE_BREAK
        + r"[A-Za-z0-9+/=]++(?![-:]))*+)",
        _private_key_block,
    ),
    _rule(
        _K.PRIVATE_KEY,
        r"(?<![A-Za-z0-9-])AGE-SECRET-KEY-1(?P<body>[0-9A-Z]{58})" + _END_ALNUM,
        _token(),
    ),
    _rule(
        _K.JWT,
        _S + r"eyJ[A-Za-z0-9_-]{8,}+(?:\.[A-Za-z0-9_-]*+){2,4}+",
        _jwt,
    ),
    _rule(
        _K.CREDENTIAL_HEADER,
        r"(?<![A-Za-z0-9-])(?:proxy-)?authorization"
        + _FIELD_SEPARATOR
        + r"(?P<scheme>bearer|basic|token|bot)[ +]{1,4}"
        + r"(?P<value>[A-Za-z0-9._~+/=-]{12,4096}+)",
        _credential_header,
        re.IGNORECASE,
    ),
    _rule(
        _K.CREDENTIAL_HEADER,
        r"(?<![A-Za-z0-9-])(?:x-api-key|api-key|x-auth-token|private-token|x-goog-api-key)"
        + r"[\"']?[ \t]{0,4}:[ \t]{0,4}[\"']?"
        + r"(?P<value>[A-Za-z0-9._~+/=-]{12,4096}+)",
        _credential_header,
        re.IGNORECASE,
    ),
    _rule(
        _K.URL_USERINFO,
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}+://(?P<authority>[^\s/?#\\]{1,2048}+)",
        _url_userinfo,
    ),
    # Query parameters, connection-string fields and `--flag=` values named as secrets.
    # A value ends at the next `=` except for base64 padding, so no value can hold the
    # start of another candidate and the scan stays linear.
    _rule(
        _K.SECRET_PARAMETER,
        r"(?<![A-Za-z0-9])(?:pass(?:word|wd)?|client[_-]?secret|api[_-]?key|access[_-]?token"
        + r"|refresh[_-]?token|auth[_-]?token|private[_-]?token|secret[_-]?key|app[_-]?secret"
        + r"|(?<=;)pwd)="
        + _PARAMETER_VALUE,
        _secret_parameter,
        re.IGNORECASE,
    ),
    # Broad names (`token=`, `key=`, `sig=` of an Azure SAS, `X-Amz-Signature=`): the
    # whole parameter name, after `?`, `&`, `#`, `;`, a blank, a quote or `--`, and a value
    # that must look generated, since such names also carry words and ids.
    _rule(
        _K.SECRET_PARAMETER,
        r"(?<![^?&#;\s\"'])(?:--)?+(?P<name>(?:x-(?:amz|goog)-)?(?:"
        + r"(?:access|auth|id|session|security|bearer|api|private|refresh|oauth)?[_-]?token"
        + r"|(?:api|access|auth|secret|private|session|subscription|license)?[_-]?key"
        + r"|(?:client|api|app|consumer|shared)?[_-]?secret"
        + r"|pass(?:word|wd)?|auth|sig|signature|apikey|apitoken))"
        + r"="
        + _PARAMETER_VALUE,
        _generated_parameter,
        re.IGNORECASE,
    ),
)


# -- scanning ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int
    rank: int  # index of the rule: lower is more specific and names a merged finding


def _candidates(text: str) -> Iterator[_Candidate]:
    for rank, rule in enumerate(_RULES):
        for start, end in _spans(rule, text):
            yield _Candidate(start, end, rank)


def _spans(rule: _Rule, text: str) -> Iterator[_Span]:
    position = 0
    while (match := rule.pattern.search(text, position)) is not None:
        span = rule.extract(match)
        if span is None:
            # A rejected match may hide an accepted one that starts inside it.
            position = match.start() + 1
            continue
        yield span
        position = max(span[1], match.start() + 1)


def _merge(candidates: list[_Candidate]) -> tuple[CredentialFinding, ...]:
    """One finding per group of overlapping candidates, covering all of them."""
    findings: list[CredentialFinding] = []
    group: list[_Candidate] = []
    group_end = -1
    for candidate in sorted(candidates, key=lambda c: (c.start, c.rank)):
        if group and candidate.start >= group_end:
            findings.append(_finding(group, group_end))
            group = []
        group_end = max(group_end, candidate.end) if group else candidate.end
        group.append(candidate)
    if group:
        findings.append(_finding(group, group_end))
    return tuple(findings)


def _finding(group: list[_Candidate], end: int) -> CredentialFinding:
    namer = min(group, key=lambda c: (c.rank, c.start - c.end))
    start = group[0].start
    return CredentialFinding(_RULES[namer.rank].kind, start, end - start)


# -- the percent-decoded reading of a URL -------------------------------------------------

# Only ASCII escapes: every detected format is ASCII, and a decoded byte >= 0x80 is
# part of a UTF-8 sequence that cannot belong to one.
_ASCII_ESCAPE = re.compile(r"%([0-7][0-9A-Fa-f])")


@dataclass(frozen=True, slots=True)
class _DecodedText:
    text: str
    origins: tuple[int, ...]  # where each decoded character starts in the original, then its end

    def to_original(self, candidate: _Candidate) -> _Candidate:
        return _Candidate(
            self.origins[candidate.start], self.origins[candidate.end], candidate.rank
        )


def _percent_decoded(text: str) -> _DecodedText | None:
    if "%" not in text:
        return None
    pieces: list[str] = []
    origins: list[int] = []
    cursor = 0
    for escape in _ASCII_ESCAPE.finditer(text):
        pieces.append(text[cursor : escape.start()])
        origins.extend(range(cursor, escape.start()))
        pieces.append(chr(int(escape.group(1), 16)))
        origins.append(escape.start())
        cursor = escape.end()
    if cursor == 0:
        return None
    pieces.append(text[cursor:])
    origins.extend(range(cursor, len(text) + 1))
    return _DecodedText("".join(pieces), tuple(origins))
