"""What a value must look like to be reported: not a placeholder, not filler, generated.

Pure functions of a string; the thresholds are measured by the tests and in
docs/credential-check.md.
"""

from __future__ import annotations

import base64
import binascii
import itertools
import json
import math
import re
from collections import Counter

# A random body of the lengths used here almost surely has this many distinct characters;
# fewer means filler such as "XXXX" or "0000".
_MIN_DISTINCT_CHARS = 5
# A header value named as a secret shorter than this is a word, not a key.
_MIN_HEADER_VALUE_CHARS = 16
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
_GENERATED_ALPHABET = re.compile(r"[A-Za-z0-9._~+/=-]++")
# A JOSE header is a few hundred characters; longer ones are not decoded.
_MAX_JWT_HEADER_CHARS = 1_024

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


def is_filler(body: str) -> bool:
    """Too few distinct characters, or a documented example value such as AWS's `…EXAMPLE`."""
    return len(set(body)) < _MIN_DISTINCT_CHARS or "EXAMPLE" in body.upper()


def is_template(value: str) -> bool:
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


def has_letter_and_digit(value: str) -> bool:
    return any(c.isascii() and c.isalpha() for c in value) and any(
        c.isascii() and c.isdigit() for c in value
    )


def has_both_cases(value: str) -> bool:
    return any("A" <= c <= "Z" for c in value) and any("a" <= c <= "z" for c in value)


def looks_like_secret(value: str) -> bool:
    """An opaque value (bearer token, API key) rather than a word or a placeholder."""
    return (
        len(value) >= _MIN_HEADER_VALUE_CHARS
        and has_letter_and_digit(value)
        and not is_template(value)
        and not is_filler(value)
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


def looks_generated(value: str) -> bool:
    """Whether a parameter value looks machine-generated: long, mixed, random-looking.

    Each test is one an ordinary value fails: a word or an id is short or has no
    letter or no digit; a slug or a version string is full of separators or keeps
    its classes in long runs; a date repeats few characters; a name with a number
    clumps its digits.
    """
    if len(value) < _MIN_GENERATED_CHARS or _GENERATED_ALPHABET.fullmatch(value) is None:
        return False
    if is_template(value) or is_filler(value) or not has_letter_and_digit(value):
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


def b64url_decoded(data: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(_padded(data))
    except (binascii.Error, ValueError):
        return None


def b64_decoded(data: str) -> bytes | None:
    try:
        return base64.b64decode(_padded(data), validate=True)
    except (binascii.Error, ValueError):
        return None


def is_jose_header(segment: str) -> bool:
    """A JWT's first segment decodes to a JSON object that names its algorithm."""
    if len(segment) > _MAX_JWT_HEADER_CHARS:
        return False
    raw = b64url_decoded(segment)
    if raw is None:
        return False
    try:
        header = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(header, dict) and isinstance(header.get("alg"), str)
