"""The credential check's scan, merge and masks at their edges (REQ-PRIV-002, REQ-TEST-019).

The first mutation run of rypsok.core.privacy.scan killed 150 of its 165
mutants; these tests pin down what the survivors changed unnoticed: the
refusal of a finding outside its text, findings that touch without
overlapping, and a text with a `%` but no ASCII escape, whose percent-decoded
reading must be the text itself or nothing.
"""

from __future__ import annotations

import pytest

from rypsok.core.privacy import (
    CredentialFinding,
    CredentialKind,
    find_credentials,
    mask_credentials,
    scan,
)
from tests.core.test_privacy import KIND_CASES

TOKEN = KIND_CASES[CredentialKind.GITHUB_TOKEN].value  # a synthetic ghp_ token


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_finding_outside_its_text_is_refused_in_words() -> None:
    """REQ-PRIV-002: masking with a finding that ends past the text is a caller's error."""
    with pytest.raises(ValueError) as refused:
        mask_credentials("short", [CredentialFinding(CredentialKind.JWT, 2, 10)])
    assert str(refused.value) == "a finding lies outside the text it is applied to"


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_touching_candidates_stay_two_findings_and_overlapping_ones_merge() -> None:
    """REQ-PRIV-002: findings never overlap: candidates that share characters become one
    finding named by the most specific rule; candidates that only touch stay apart."""
    touching = scan._merge([scan._Candidate(0, 5, 3), scan._Candidate(5, 9, 1)])
    assert [(f.start, f.length) for f in touching] == [(0, 5), (5, 4)]
    overlapping = scan._merge([scan._Candidate(0, 6, 3), scan._Candidate(5, 9, 1)])
    assert [(f.kind, f.start, f.length) for f in overlapping] == [(scan.RULES[1].kind, 0, 9)]


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_percent_sign_without_an_ascii_escape_adds_no_reading() -> None:
    """REQ-PRIV-002: `%zz` or `%C3` decodes nothing, so nothing but the text as given is
    scanned: a token glued to a word stays unreported, as it is without the `%`."""
    glued = "x" + TOKEN
    assert find_credentials(glued) == ()
    assert find_credentials(glued + " %zz %C3") == ()
    assert scan._percent_decoded(glued + " %zz") is None
    decoded = scan._percent_decoded("%41b")
    assert decoded is not None and decoded.text == "Ab" and decoded.origins == (0, 3, 4)
