"""The HTTP mode's start-up check of its keys, case by case (REQ-SEC-018, REQ-TEST-019).

`rypsok.mcp.http.plan._key_problems` decides which `[[http.keys]]` a listener
may serve with: a caller name that is plain and unique, at least one scope,
and a key that resolves, is 16 to 512 printable ASCII characters without
spaces and belongs to one caller only. These cases pin each rule at its edge
and the exact message that names the entry, so that the mutation run of
those functions (`python -m mutation.run --module http.plan`) sees every
change. The listener as served is tested in tests/mcp/test_http.py.
"""

from __future__ import annotations

import pytest

from rypsok.mcp.http.plan import MAX_KEY_CHARS, MIN_KEY_CHARS, check_http
from tests.support import config_from

GOOD = "k" * MIN_KEY_CHARS
OTHER = "o" * MIN_KEY_CHARS
OAUTH = {"issuer": "https://issuer.test", "audience": "https://rypsok.test/mcp"}


def _problems(
    monkeypatch: pytest.MonkeyPatch, *entries: tuple[str, str], **http: object
) -> list[str]:
    """check_http's key problems for entries of (caller, key value), each key by variable."""
    keys = []
    for index, (caller, value) in enumerate(entries):
        monkeypatch.setenv(f"RYPSOK_TEST_PLAN_KEY_{index}", value)
        keys.append({"caller": caller, "key": {"env": f"RYPSOK_TEST_PLAN_KEY_{index}"}})
    problems = check_http(config_from({"http": {"keys": keys, **http}}))
    return [p for p in problems if p.startswith(("http.keys", "http.oauth"))]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_a_good_key_set_has_no_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-SEC-018: two callers with their own keys of the shortest and longest lengths."""
    entries = (("agent", GOOD), ("a.b_c-9", "x" * MAX_KEY_CHARS))
    assert check_http(config_from({"http": {}})) != []  # no key at all is a problem
    assert _problems(monkeypatch, *entries) == []


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
@pytest.mark.parametrize("length", [MIN_KEY_CHARS - 1, MAX_KEY_CHARS + 1])
def test_a_key_just_outside_the_lengths_is_refused(
    monkeypatch: pytest.MonkeyPatch, length: int
) -> None:
    """REQ-SEC-018: 15 and 513 characters are refused, with the bounds in the message."""
    assert _problems(monkeypatch, ("agent", "k" * length)) == [
        "http.keys[0].key (caller 'agent'): a key must be 16 to 512 characters long"
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
@pytest.mark.parametrize(
    "value",
    [GOOD + " x", GOOD + "\u00e9", GOOD + "\x07", "\u00e9" * MIN_KEY_CHARS, " " + GOOD],
    ids=["inner-space", "one-non-ascii", "one-control", "all-non-ascii", "leading-space"],
)
def test_a_key_that_is_not_printable_ascii_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """REQ-SEC-018: one space, one non-ASCII or one control character refuses the key."""
    assert _problems(monkeypatch, ("agent", value)) == [
        "http.keys[0].key (caller 'agent'): a key must be printable ASCII without spaces"
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_an_unset_key_is_named_and_the_next_entries_are_still_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-018: an unset secret is one problem; every later entry is still judged, and
    each message names its own index."""
    monkeypatch.delenv("RYPSOK_TEST_PLAN_UNSET", raising=False)
    keys = [
        {"caller": "first", "key": {"env": "RYPSOK_TEST_PLAN_UNSET"}},
        {"caller": "second", "key": {"env": "RYPSOK_TEST_PLAN_SHORT"}},
    ]
    monkeypatch.setenv("RYPSOK_TEST_PLAN_SHORT", "short")
    assert check_http(config_from({"http": {"keys": keys}}))[:2] == [
        "http.keys[0].key (caller 'first'): the referenced secret is unset or empty",
        "http.keys[1].key (caller 'second'): a key must be 16 to 512 characters long",
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_the_same_key_for_two_callers_is_refused_at_the_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-018: a key given twice is refused where it comes again, and only there; a
    third caller's own key is fine."""
    problems = _problems(monkeypatch, ("a", GOOD), ("b", GOOD), ("c", OTHER))
    assert problems == ["http.keys[1].key (caller 'b'): the same key is given to another caller"]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_caller_names_must_be_plain_and_unique(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-SEC-018: a caller name used twice, and one that is not plain, are refused with the
    index of the entry; the messages say the rule."""
    problems = _problems(monkeypatch, ("same", GOOD), ("same", OTHER), ("-bad", "b" * 16))
    assert problems == [
        "http.keys[1].caller: the caller name 'same' is used twice",
        "http.keys[2].caller: use 1-64 letters, digits, '.', '_' or '-', starting with "
        "a letter or digit",
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_a_key_without_a_scope_is_refused_with_its_other_problems(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """REQ-SEC-018: a key that admits nothing is a problem, reported beside the key's own."""
    monkeypatch.setenv("RYPSOK_TEST_PLAN_NOSCOPE", "short")
    keys = [{"caller": "idle", "key": {"env": "RYPSOK_TEST_PLAN_NOSCOPE"}, "scopes": []}]
    assert check_http(config_from({"http": {"keys": keys}}))[:2] == [
        "http.keys[0].scopes (caller 'idle'): a key without a scope admits nothing; name at "
        "least one of search, fetch, status, metrics",
        "http.keys[0].key (caller 'idle'): a key must be 16 to 512 characters long",
    ]


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_no_key_and_no_oauth_is_refused_with_the_two_ways_named() -> None:
    """REQ-SEC-018: without keys or OAuth the listener has no way to authenticate."""
    assert check_http(config_from({"http": {}}))[0] == (
        "http.keys: the http transport needs at least one [[http.keys]] entry (caller and key) "
        "or an [http.oauth] table, on every bind, loopback included"
    )


@pytest.mark.req("REQ-SEC-018", "REQ-TEST-019")
def test_oauth_alone_is_enough_and_its_problems_come_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """REQ-SEC-018: an [http.oauth] table without keys needs no key; with keys as well,
    both are judged, the OAuth problems first."""
    alone = check_http(config_from({"http": {"oauth": OAUTH}}))
    assert alone == ["http.oauth.jwks_url, http.oauth.jwks_file: give exactly one of them"]
    both = _problems(monkeypatch, ("agent", "short"), oauth=OAUTH)
    assert both == [
        "http.oauth.jwks_url, http.oauth.jwks_file: give exactly one of them",
        "http.keys[0].key (caller 'agent'): a key must be 16 to 512 characters long",
    ]
