"""The credential check's value tests, each at its boundary (REQ-PRIV-002, REQ-TEST-019).

tests/core/test_privacy.py shows the check on whole texts; the first mutation
run of rypsok.core.privacy.values (its 201 mutants) showed that several
thresholds and character classes were not pinned down by any text: a class
boundary one letter off, a threshold met exactly, base64 decoded leniently.
These tests call the value tests themselves, at the edges the docstrings and
docs/credential-check.md state.
"""

from __future__ import annotations

import base64
import json
import math

import pytest

from rypsok.core.privacy import values
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

GENERATED = "ourK8fA3kQ9zX2mB7wPq"  # 20 characters that look generated


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_filler_is_fewer_than_five_distinct_characters_or_an_example() -> None:
    """REQ-PRIV-002: five distinct characters are enough to be a value; four are filler."""
    assert not is_filler("abcde") and is_filler("abcdabcd")
    assert is_filler("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".lower())


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
@pytest.mark.parametrize(
    "value",
    [
        "*xX.•#_-",
        "xX.•#_-*",
        "xxxx",
        "<token>",
        "yourtoken8fA3",
        "abcExample123",
        "API_KEY",
        "password",
        "",
    ],
)
def test_each_placeholder_form_is_a_template_on_its_own(value: str) -> None:
    """REQ-PRIV-002: filler characters only (the whole set included), a template opening,
    `your…`, `…example…`, UPPER_SNAKE and placeholder words are each templates alone."""
    assert is_template(value)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_value_is_no_template_without_a_placeholder_form() -> None:
    """REQ-PRIV-002: the forms are not met by accident: a mixed value is no template."""
    assert not is_template("8fA3kQ9zX2mB7wPq") and not is_template("Zq_Key9")


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_letters_and_digits_are_ascii_letters_and_digits() -> None:
    """REQ-PRIV-002: a letter is an ASCII letter: `é1` and `12-34` have no letter."""
    assert has_letter_and_digit("a1") and has_letter_and_digit("Z9")
    assert not has_letter_and_digit("é1") and not has_letter_and_digit("12-34")
    assert not has_letter_and_digit("abc")


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("value", "both"),
    [("Aa", True), ("Za", True), ("Az", True), ("ab", False), ("AB", False), ("AZ", False),
     ("A[", False), ("_a", False)],
)  # fmt: skip
def test_both_cases_means_an_upper_and_a_lower_ascii_letter(value: str, both: bool) -> None:
    """REQ-PRIV-002: `A`…`Z` and `a`…`z`, ends included; nothing between them counts."""
    assert has_both_cases(value) is both


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_an_opaque_header_value_needs_sixteen_characters() -> None:
    """REQ-PRIV-002: 16 characters make an opaque value, 15 a word."""
    assert looks_like_secret("aB3dE5gH7jK9mN1p")
    assert not looks_like_secret("aB3dE5gH7jK9mN1")


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("char", "kind"),
    [
        ("a", 0),
        ("z", 0),
        ("A", 1),
        ("Z", 1),
        ("0", 2),
        ("9", 2),
        ("-", -1),
        ("[", -1),
        ("`", -1),
        (":", -1),
        ("@", -1),
    ],
)
def test_each_character_has_its_class(char: str, kind: int) -> None:
    """REQ-PRIV-002: lower, upper, digit, other; the ends of each range included."""
    assert values._char_class(char) == kind


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_entropy_and_class_changes_are_measured_exactly() -> None:
    """REQ-PRIV-002: Shannon entropy per character, and the share of neighbours that change
    class, over the letters and digits only."""
    assert values._entropy_bits_per_char("ab") == 1.0
    assert values._entropy_bits_per_char("abcd") == 2.0
    assert values._class_change_ratio("aB") == (2, 1.0)
    assert values._class_change_ratio("a-") == (1, 0.0)
    assert values._class_change_ratio("aB1") == (3, 1.0)
    assert values._class_change_ratio("abC") == (2, 0.5)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
@pytest.mark.parametrize(
    ("value", "z"),
    [
        ("ab12", (2 - 3) / math.sqrt(2 / 3)),  # 2 runs where 3 are expected
        ("a1b2", (4 - 3) / math.sqrt(2 / 3)),
        ("abcd1", (2 - 2.6) / math.sqrt(0.24)),
        ("1234a", (2 - 2.6) / math.sqrt(0.24)),
        ("a1", 0.0),  # no variance: no verdict
        ("a", 0.0),
        ("aaaa", 0.0),
        ("1111", 0.0),
    ],
)
def test_the_runs_test_follows_wald_and_wolfowitz(value: str, z: float) -> None:
    """REQ-PRIV-002: runs of letters and digits against chance: expected 1 + 2nm/N runs,
    variance 2nm(2nm - N) / (N²(N - 1)); 0 where a class is missing or there is no variance."""
    assert values._letter_digit_runs_z(value) == pytest.approx(z)


def _with_entropy_2_75() -> str:
    """16 characters with counts 4, 4, 2, 2, 1, 1, 1, 1: exactly 2.75 bits each."""
    return "aB1aB7aB1aBcXcD9"


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_generated_value_passes_each_threshold_met_exactly() -> None:
    """REQ-PRIV-002: entropy of exactly 2.75 bits, separators at exactly 15 % pass; a template,
    however random the rest, does not."""
    exact = _with_entropy_2_75()
    assert values._entropy_bits_per_char(exact) == 2.75 and looks_generated(exact)
    separated = "aB3-dE5.gH7_jK9mN1pQ"  # 3 separators in 20 characters
    assert looks_generated(separated)
    assert not looks_generated(separated[:-1] + "-")  # 4 in 20
    assert looks_generated(GENERATED) and not looks_generated("y" + GENERATED)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_base64_is_padded_and_decoded_strictly() -> None:
    """REQ-PRIV-002: unpadded base64 of any length is padded to a multiple of 4; the standard
    alphabet is checked, not skipped over; undecodable input is None."""
    for text in (b"a", b"ab", b"abc", b"abcd"):
        encoded = base64.b64encode(text).decode().rstrip("=")
        assert b64_decoded(encoded) == text and b64url_decoded(encoded) == text
    assert b64_decoded("YW*I") is None
    assert b64_decoded("YWJ$jZGVm") is None and b64_decoded("YWJjZGVm") == b"abcdef"
    assert b64url_decoded("A") is None


def _jose(length: int) -> str:
    """A base64url JOSE header of exactly `length` characters (a multiple of 4)."""
    stub = {"alg": "RS256", "pad": ""}
    room = length * 3 // 4 - len(json.dumps(stub, separators=(",", ":")))
    stub["pad"] = "x" * room
    segment = base64.urlsafe_b64encode(json.dumps(stub, separators=(",", ":")).encode())
    assert len(segment) == length
    return segment.decode()


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_jose_header_is_decoded_up_to_its_bound_only() -> None:
    """REQ-PRIV-002: a header of 1,024 characters is read; a longer one, or one that does not
    decode, is not a JWT header."""
    assert is_jose_header(_jose(1024))
    assert not is_jose_header(_jose(1028))
    assert not is_jose_header("A")
    assert not is_jose_header(base64.urlsafe_b64encode(b"not json at all").decode())
    assert not is_jose_header(base64.urlsafe_b64encode(b'{"typ":"JWT"}').decode())
