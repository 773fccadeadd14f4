"""Properties of the credential check (issue 15, item 2): the contract on generated text.

test_privacy.py states the cases; these properties state what holds for any text:
the check is total and deterministic, masking leaves nothing to find and changes
nothing else, percent-encoding hides no format, and the generated-value rule for
credential-named parameters never fires on what its tests exclude while it never
misses a signature it can check by decoding. Fixed small budget, derandomized.
"""

from __future__ import annotations

import base64
import string
from urllib.parse import quote

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rypsok.core.privacy import (
    CredentialFinding,
    CredentialKind,
    find_credentials,
    mask_credentials,
)
from tests.core.test_privacy import KIND_CASES, VARIANT_CASES, Case

BUDGET = settings(max_examples=150, deadline=None, derandomize=True, database=None)
K = CredentialKind

# Text an agent may send, and text built from pieces of credential formats.
FRAGMENTS = [
    "?token=", "&key=", "&sig=", "#token=", "--token=", "password=", "key-", "dapi",
    "lin_api_", "dp.st.", "PMAK-", "ATATT3", "pplx-", "glsa_", "glc_eyJ", "sntryu_",
    "sntrys_eyJpYXQiO", "AC", "SK", ":", "ntn_", "secret_", "whsec_", "NRAK-", "NRAL",
    "EAAA", "sq0csp-", "Private-Lines: 2\n", "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----", "\n", " ", "%3D", "%2B", "=", "_", "-", ".",
    "0123456789abcdef", "Zq8", "[masked:jwt]",
]  # fmt: skip
any_text = st.text(alphabet=st.characters(exclude_categories=()), max_size=160)
format_pieces = st.lists(
    st.one_of(
        st.sampled_from(FRAGMENTS),
        st.text(alphabet=string.ascii_letters + string.digits + "+/=_-", max_size=24),
    ),
    max_size=24,
).map("".join)
texts = st.one_of(any_text, format_pieces)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(texts)
def test_the_check_is_total_and_deterministic(text: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: any text gets findings of the fixed vocabulary, the same
    ones every time, inside the text, sorted and disjoint; nothing is raised."""
    findings = find_credentials(text)
    assert find_credentials(text) == findings
    end = 0
    for finding in findings:
        assert isinstance(finding, CredentialFinding)
        assert finding.kind in set(CredentialKind)
        assert end <= finding.start
        end = finding.start + finding.length
    assert end <= len(text)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(texts)
def test_masked_text_has_nothing_left_and_keeps_the_rest(text: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: after masking there is nothing to find, and the length
    changes by exactly the markers for the spans replaced."""
    findings = find_credentials(text)
    masked = mask_credentials(text, findings)
    assert find_credentials(masked) == ()
    markers = sum(len(f"[masked:{f.kind.value}]") for f in findings)
    assert len(masked) == len(text) - sum(f.length for f in findings) + markers


ASCII_CASES = [
    case
    for case in [*KIND_CASES.values(), *VARIANT_CASES.values()]
    if case.value.isascii() and "\n" not in case.value and "%" not in case.value
]


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(st.sampled_from(ASCII_CASES), st.data())
def test_percent_encoding_hides_no_format(case: Case, data: st.DataObject) -> None:
    """REQ-TEST-013, REQ-PRIV-002: a value with any of its characters percent-encoded is
    still found, and its finding covers the encoded value."""
    encoded = "".join(f"%{ord(c):02X}" if data.draw(st.booleans()) else c for c in case.value)
    text = case.before + encoded + case.after
    start, end = len(case.before), len(case.before) + len(encoded)
    findings = find_credentials(text)
    assert any(f.start <= start and end <= f.start + f.length for f in findings)


def token_url(value: str) -> str:
    return f"https://svc.example.com/v1/items?page=2&token={value}&limit=5"


ONE_CLASS = st.sampled_from([string.ascii_lowercase, string.ascii_uppercase, string.digits])


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(ONE_CLASS.flatmap(lambda alphabet: st.text(alphabet=alphabet, max_size=80)))
def test_a_value_of_one_class_is_never_a_generated_token(value: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: words and numbers under `token=` are never reported."""
    assert find_credentials(token_url(value)) == ()


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(st.text(alphabet=string.ascii_letters + string.digits + "-_.~", max_size=15))
def test_a_value_shorter_than_16_is_never_a_generated_token(value: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: short ids under `token=` stay, whatever their characters."""
    assume(value and value[0] not in "-_.~")
    assert find_credentials(token_url(value)) == ()


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(
    st.lists(
        st.text(alphabet=string.ascii_lowercase + string.digits, min_size=1, max_size=5),
        min_size=4,
        max_size=8,
    ),
    st.sampled_from("-._~"),
)
def test_a_value_full_of_separators_is_never_a_generated_token(words: list[str], sep: str) -> None:
    """REQ-TEST-013, REQ-PRIV-002: slugs and version strings (>15 % separators) pass."""
    value = sep.join(words)
    assume(value.count(sep) > 0.15 * len(value))
    assert find_credentials(token_url(value)) == ()


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(st.binary(min_size=32, max_size=64), st.booleans(), st.sampled_from(["sig", "Signature"]))
def test_a_signature_is_found_by_decoding_whatever_its_bytes(
    mac: bytes, as_hex: bool, name: str
) -> None:
    """REQ-TEST-013, REQ-PRIV-002: base64 or hex of 32-64 bytes under `sig=` is always found."""
    value = mac.hex() if as_hex else base64.b64encode(mac).decode()
    assume(len(set(value)) >= 5)
    assume(any(c.isdigit() for c in value) and any(c.isalpha() for c in value))
    encoded = quote(value, safe="")
    prefix = f"https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&{name}="
    assert find_credentials(prefix + encoded) == (
        CredentialFinding(K.SECRET_PARAMETER, len(prefix), len(encoded)),
    )
