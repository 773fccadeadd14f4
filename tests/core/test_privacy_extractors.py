"""The credential check's extractors, each check at its edge (REQ-PRIV-002, REQ-TEST-019).

The first mutation run of rypsok.core.privacy.extractors killed 158 of 237
mutants. Many survivors were in the extractor factories (`token`,
`alternatives`), whose code runs when the rules table is built at import, so
the mutation job now imports afresh for each mutant; these tests also call
the factories directly. The others changed a bound or a decoding unnoticed:
key-material runs, JWT segments, Discord id lengths, Basic credentials that
are not UTF-8, the `@` of a userinfo, and signatures in base64 and hex.
"""

from __future__ import annotations

import base64
import json
import re
import string

import pytest

from rypsok.core.privacy import CredentialKind, find_credentials
from rypsok.core.privacy import extractors as x
from tests.core.test_privacy import B64URL, synthetic

K = CredentialKind
BODY = re.compile(r"(?P<body>\S*)")
FORMS = re.compile(r"(?:a=(?P<body>\S+))?(?:h=(?P<hex>\S+))?")


def _body(text: str) -> re.Match[str]:
    match = BODY.fullmatch(text)
    assert match is not None
    return match


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_prefixed_token_needs_only_the_traits_its_rule_asks_for() -> None:
    """REQ-PRIV-002: by default any non-filler body is a token; both cases or a digit are
    required only where the rule says so, and filler never passes."""
    assert x.token()(_body("abcdefgh")) == (0, 8)
    assert x.token()(_body("xxxxxxxx")) is None
    assert x.token(both_cases=True)(_body("ab3de5gh")) is None
    assert x.token(both_cases=True)(_body("aB3dE5gH")) == (0, 8)
    assert x.token(digit=True)(_body("aBcDeFgH")) is None
    assert x.token(digit=True)(_body("aB3dE5gH")) == (0, 8)


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_token_of_several_forms_is_judged_by_the_form_that_matched() -> None:
    """REQ-PRIV-002: the body is the group of the form present; none present, or filler, is
    no token; traits apply to that body."""
    forms = x.alternatives("body", "hex", digit=True)
    assert forms(FORMS.fullmatch("h=ab12cd34")) == (0, 10)  # type: ignore[arg-type]
    assert forms(FORMS.fullmatch("a=abcdefgh")) is None  # type: ignore[arg-type]
    assert forms(FORMS.fullmatch("")) is None  # type: ignore[arg-type]
    assert forms(FORMS.fullmatch("h=11111111")) is None  # type: ignore[arg-type]
    cased = x.alternatives("body", "hex", both_cases=True)
    assert cased(FORMS.fullmatch("a=abcdefgh")) is None  # type: ignore[arg-type]
    assert cased(FORMS.fullmatch("a=abCdefgh")) == (0, 10)  # type: ignore[arg-type]
    assert x.alternatives("body")(FORMS.fullmatch("a=abcdefgh")) == (0, 10)  # type: ignore[arg-type]


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_key_material_is_long_runs_of_both_cases_and_digits() -> None:
    """REQ-PRIV-002: runs of 16 characters count, 32 characters in all are enough; runs of
    one case with digits are not key material, however long."""
    run = "aB3dE5gH7jK9mN1p"  # 16
    assert x._is_key_material(run + "\n" + run)
    assert not x._is_key_material(run + "\n" + run[:15])  # 31 characters of material
    assert not x._is_key_material(run[:15] + " " + run[:15] + " " + run[:15])
    lower = "ab3de5gh7jk9mn1p"
    assert not x._is_key_material(lower + "\n" + lower + "\n" + lower)


def _b64url_json(value: object) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


HEADER = _b64url_json({"alg": "HS256", "typ": "JWT"})
PAYLOAD = _b64url_json({"sub": "1"})


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_jwt_segments_are_counted_as_compact_jose_counts_them() -> None:
    """REQ-PRIV-002: a JWS may have an empty signature (its final dot is part of it) but not
    an empty payload; a JWE may have an empty key but not an empty iv, ciphertext or tag."""
    unsecured = f"{HEADER}.{PAYLOAD}."
    assert [(f.kind, f.length) for f in find_credentials(unsecured)] == [(K.JWT, len(unsecured))]
    assert find_credentials(f"{HEADER}..signature") == ()
    jwe = f"{HEADER}..ivivivivivivivivivivivi.ciphertext.tagtagtagtag"
    assert [(f.kind, f.length) for f in find_credentials(jwe)] == [(K.JWT, len(jwe))]
    assert find_credentials(f"{HEADER}.key..ciphertext.tagtagtagtag") == ()
    # Five segments with an empty tag: read as the JWS of its first three, not dropped.
    cut = f"{HEADER}.payload.signature.more."
    (found,) = find_credentials(cut)
    assert (found.kind, found.length) == (K.JWT, len(f"{HEADER}.payload.signature"))


def _discord(digits: int) -> str:
    user_id = "1" + synthetic(string.digits, digits - 1, f"id{digits}")
    encoded = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"{encoded}.{synthetic(B64URL, 6, 't')}.{synthetic(B64URL, 38, 'h')}"


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_discord_token_id_has_17_to_20_digits_and_must_decode() -> None:
    """REQ-PRIV-002: the first part decodes to a user id of 17 to 20 digits, ends included;
    a first part that does not decode is no token (and no error)."""
    for digits in (17, 20):
        token = _discord(digits)
        assert [f.kind for f in find_credentials(token)] == [K.DISCORD_BOT_TOKEN], digits
    for first in ("M" + "a" * 22, "M" + "a" * 24):  # 25 characters are no base64 at all
        undecodable = f"{first}.{synthetic(B64URL, 6, 't')}.{synthetic(B64URL, 38, 'h')}"
        assert K.DISCORD_BOT_TOKEN not in {f.kind for f in find_credentials(undecodable)}


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_basic_credentials_need_not_be_utf8_and_the_password_follows_the_first_colon() -> None:
    """REQ-PRIV-002: Basic credentials are decoded leniently (bytes that are not UTF-8 do not
    hide them); the password is everything after the user's colon."""
    raw = base64.b64encode(b"\xff\xfeadmin:S3cr3t-pass").decode()
    found = find_credentials(f"Authorization: Basic {raw}")
    assert [f.kind for f in found] == [K.CREDENTIAL_HEADER]
    colons = base64.b64encode(b"user:x:password").decode()
    assert [f.kind for f in find_credentials(f"Authorization: Basic {colons}")] == [
        K.CREDENTIAL_HEADER
    ]


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_the_userinfo_ends_at_the_last_at_sign_of_the_authority() -> None:
    """REQ-PRIV-002: `user:p@ss@host`: the password may hold `@`; the whole userinfo is masked."""
    url = "https://user:p@ss9w0rd@host.example/"
    (found,) = find_credentials(url)
    assert found.kind == K.URL_USERINFO and url[found.start : found.start + found.length] == (
        "user:p@ss9w0rd"
    )


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_named_secret_parameter_needs_eight_characters_and_no_placeholder() -> None:
    """REQ-PRIV-002: `api_key=` with 8 characters is reported, 7 is a word; a placeholder
    such as `your…` is not, however mixed."""
    assert [f.kind for f in find_credentials("?api_key=aB3dE5gH")] == [K.SECRET_PARAMETER]
    assert find_credentials("?api_key=aB3dE5g") == ()
    assert find_credentials("?api_key=yourKey3dE5gH7") == ()


B64_SIG_32 = "ABC123" * 7 + "A="  # 44 characters: 32 bytes, and does not look generated
B64_SIG_64 = "ABC123" * 14 + "AB=="  # 88 characters: 64 bytes
HEX_SIG = "abc123" * 11 + "abc1"  # 70 hex digits: 35 bytes; 70 is not a multiple of 4
HEX_SIG_126 = "abc123" * 21  # 63 bytes as hex; as base64 it would be 94


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
@pytest.mark.parametrize(
    "value", [B64_SIG_32, B64_SIG_64, HEX_SIG, HEX_SIG.upper(), HEX_SIG_126, HEX_SIG_126.upper()]
)
def test_a_signature_is_checked_by_decoding_not_by_looks(value: str) -> None:
    """REQ-PRIV-002: under `sig=` a value that decodes, as base64 when its length is a multiple
    of 4 and else as hex of either case, to 32 to 64 bytes is a signature, though it does
    not look generated; under `token=` the same value is not reported."""
    assert not x.looks_generated(value)
    assert [f.kind for f in find_credentials(f"?sig={value}")] == [K.SECRET_PARAMETER]
    assert [f.kind for f in find_credentials(f"?Signature={value}")] == [K.SECRET_PARAMETER]
    assert find_credentials(f"?token={value}") == ()


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_signature_outside_32_to_64_bytes_is_not_one() -> None:
    """REQ-PRIV-002: 31 or 65 bytes are not a MAC's length."""
    assert find_credentials("?sig=" + "abc123" * 10 + "ab") == ()  # 62 hex: 31 bytes
    assert find_credentials("?sig=" + "abc123" * 21 + "abcd") == ()  # 130 hex: 65 bytes
