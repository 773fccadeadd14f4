"""The credential check's rule factory, called at test time (REQ-PRIV-002, REQ-TEST-019).

`rypsok.core.privacy.rules._rule` builds each entry of RULES, the table the
credential check scans with, and it runs only while the module is imported.
Its first mutation run (privacy.rules, fresh imports per mutant) left 4 of
its 11 mutants alive: a rule without its kind, its pattern, its extractor or
its flags. Each would break the check for every rule, yet the tests only
ever saw the table built before the mutant was active. These cases call the
factory itself, so a change to what it keeps fails here.
"""

from __future__ import annotations

import re

import pytest

from rypsok.core.privacy import rules
from rypsok.core.privacy.extractors import token
from rypsok.core.privacy.kinds import CredentialKind


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_rule_keeps_its_kind_pattern_flags_and_extractor() -> None:
    """REQ-PRIV-002: the factory keeps the kind, compiles the pattern with the given flags
    and keeps the extractor that judges each match."""
    extract = token()
    rule = rules._rule(CredentialKind.GITHUB_TOKEN, r"ghp_(?P<body>[a-z]{4})", extract, re.I)
    assert rule.kind is CredentialKind.GITHUB_TOKEN
    assert rule.extract is extract
    assert rule.pattern.pattern == r"ghp_(?P<body>[a-z]{4})"
    assert rule.pattern.flags & re.IGNORECASE
    assert rule.pattern.search("GHP_ABCD") is not None  # the flag is in force


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_a_rule_without_flags_is_case_sensitive() -> None:
    """REQ-PRIV-002: with no flags given, a rule matches its literal case only."""
    rule = rules._rule(CredentialKind.GITHUB_TOKEN, r"ghp_[a-z]{4}", token())
    assert not rule.pattern.flags & re.IGNORECASE
    assert rule.pattern.search("ghp_abcd") is not None
    assert rule.pattern.search("GHP_ABCD") is None


@pytest.mark.req("REQ-PRIV-002", "REQ-TEST-019")
def test_every_rule_of_the_table_is_complete() -> None:
    """REQ-PRIV-002: each rule of RULES has a kind, a compiled pattern and an extractor."""
    assert rules.RULES
    for rule in rules.RULES:
        assert isinstance(rule.kind, CredentialKind)
        assert isinstance(rule.pattern, re.Pattern)
        assert callable(rule.extract)
