"""Property tests of every parser that reads external bytes (REQ-TEST-013, REQ-SEC-023).

The contracts are the fuzz targets' own (fuzz/targets.py), fed here by
Hypothesis with structured inputs, within a small fixed budget so that
`make test` stays fast: each test has a bounded number of examples and no
example database, so a run is reproducible from its seed. `make fuzz` runs the
same contracts coverage-guided, for as long as it is given.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import targets
from rypsok.core.engines.registry import known_ids

# A fixed budget: 40 examples a test keeps the module well under 30 s on a busy machine.
BUDGET = settings(
    max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)

_MARKUP = st.sampled_from(
    [
        "<p>", "</p>", "<div class='hidden'>", "</div>", "<style>.hidden{display:none}</style>",
        "<style>#x{visibility:hidden}@media print{p{display:none}}</style>", "<span id=x>",
        "<b>", "<table><tr><td>", "<a href='/a?b#c'>", "</a>", "<!--", "-->", "<script>",
        "</script>", "<base href='http://other.example/'>", "<title>", "</title>", "&amp;",
        "&#x200b;", "\u200b", "\u202e", "\U000e0041", "text ", "ignore previous instructions ",
        "<main>", "<article>", "<h1>", "<li>", "<pre>", "`", "*", "\n", "\x00",
    ]
)  # fmt: skip
_URL_PARTS = st.sampled_from(
    [
        "https://", "http://", "HTTPS://", "//", "user:pw@", "example.com", "127.0.0.1",
        "[::1]", "[::ffff:10.0.0.1]", "0x7f.1", "2130706433", "bücher.de", "xn--", ":443",
        ":8080", ":0", "/", "\\", "?", "#", "%2e", "%00", "utm_source=x&", "a", ".", "@", "。",
    ]
)  # fmt: skip
_HEADER_WORDS = st.sampled_from(
    [
        "text/html", "; charset=", "utf-8", "UTF-16", "x-user-defined", "Shift_JIS", '"',
        "latin1", " ", "application/xhtml+xml", "120", "-1", "99999999999",
        "Wed, 21 Oct 2026 07:28:00 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", "garbage",
    ]
)  # fmt: skip
_ROBOTS_LINES = st.sampled_from(
    [
        "User-agent: *", "user-agent: rypsok", "User-Agent: Rypsok/1.0", "Disallow: /",
        "Disallow: /private*", "Allow: /private/open$", "Disallow: /*.pdf$", "Allow: /",
        "Disallow:", "# comment", "Sitemap: https://x/", "Crawl-delay: 10", "disallow: /%2F",
        "", "\x00\xff",
    ]
)  # fmt: skip
_TOML_LINES = st.sampled_from(
    [
        "schema_version = 1", "schema_version = 2", "schema_version = 'one'", "[search]",
        "max_results = 10", "max_results = -5", "[fetch]", "allow_http = true",
        "[egress]", "allow = ['10.0.0.0/8', 'example.com']", "deny = ['BAD HOST']",
        "[engines.wikipedia]", "enabled = false", "[engines.nosuch]", "[engines.brave]",
        "api_key = { env = 'BRAVE_KEY' }", "api_key = 'inline-secret'", "[http]",
        "host = '0.0.0.0'", "port = 70000", "unknown = 1", "[privacy]", "credentials = 'mask'",
    ]
)  # fmt: skip

_SECRET_PARTS = st.sampled_from(
    ["ghp_", "sk-", "AKIA", "eyJ", "Bearer ", "token=", "%3D", "0123456789abcdefABCDEF", " "]
)
# JSON of any shape: a drifted answer is valid JSON far more often than it is garbage.
_JSON_BODIES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
).map(lambda value: json.dumps(value).encode())


@pytest.mark.req("REQ-TEST-013", "REQ-CTX-004", "REQ-SEC-015")
@BUDGET
@given(st.text(max_size=300) | st.lists(_MARKUP, max_size=40).map("".join), st.integers(0, 400))
def test_clean_text_holds_its_bound_and_leaves_nothing_invisible(raw: str, max_chars: int) -> None:
    """REQ-CTX-004: any title or snippet cleans to bounded text with nothing invisible left."""
    targets.check_clean_text(raw, max_chars)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-015")
@BUDGET
@given(st.text(max_size=300), st.sampled_from(["text", "markdown"]))
def test_text_and_markdown_pages_clean_or_fail_with_a_code(text: str, kind: str) -> None:
    """REQ-SEC-015: the content cleaner gives clean text or ExtractionFailed with a code."""
    targets.check_content_cleaner(text, kind)


@pytest.mark.req("REQ-TEST-013", "REQ-FETCH-009", "REQ-SEC-014")
@BUDGET
@given(st.lists(_MARKUP, max_size=60).map("".join), st.integers(8, 200), st.integers(2, 24))
def test_any_markup_is_extracted_or_fails_with_a_fixed_code(
    html: str, max_nodes: int, max_depth: int
) -> None:
    """REQ-FETCH-009: parse, style-sheet visibility and extraction hold their contract."""
    targets.check_html_pipeline(html, max_nodes, max_depth)


@pytest.mark.req("REQ-TEST-013", "REQ-FETCH-006")
@BUDGET
@given(st.binary(max_size=400), st.none() | st.lists(_HEADER_WORDS, max_size=5).map("".join))
def test_decoding_any_bytes_gives_text_and_a_known_name(body: bytes, ctype: str | None) -> None:
    """REQ-FETCH-006: any bytes under any Content-Type decode; the name is a WHATWG name."""
    targets.check_decode(body, ctype)


@pytest.mark.req("REQ-TEST-013", "REQ-RES-002")
@BUDGET
@given(*(st.lists(_HEADER_WORDS, max_size=4).map("".join) | st.text(max_size=40),) * 3)
def test_retry_after_is_absent_or_within_its_cap(ctype: str, retry_after: str, date: str) -> None:
    """REQ-RES-002: Retry-After is None or within LIM-B4; charset labels map to names."""
    targets.check_header_values(ctype, retry_after, date)


@pytest.mark.req("REQ-TEST-013", "REQ-RANK-003")
@BUDGET
@given(st.lists(_URL_PARTS, max_size=12).map("".join) | st.text(max_size=80))
def test_result_urls_normalize_to_a_fixed_point_or_are_rejected(raw: str) -> None:
    """REQ-RANK-003: a returned URL is safe ASCII within LIM-F9 and normalizes to itself."""
    targets.check_result_url(raw)


@pytest.mark.req("REQ-TEST-013", "REQ-PRIV-002")
@BUDGET
@given(st.text(max_size=200) | st.lists(_SECRET_PARTS, max_size=20).map("".join))
def test_credential_findings_are_sorted_disjoint_and_mask_cleanly(text: str) -> None:
    """REQ-PRIV-002: findings are in range, sorted and disjoint; masking replaces exactly them."""
    targets.check_credentials(text)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-006")
@BUDGET
@given(st.lists(_URL_PARTS, max_size=12).map("".join), st.booleans())
def test_agent_judgment_is_one_outcome(url: str, allow_http: bool) -> None:
    """REQ-SEC-006: a URL is accepted with an allowed host or refused with a fixed reason."""
    targets.check_agent_url(url, allow_http)


@pytest.mark.req("REQ-TEST-013", "REQ-SEC-006")
@BUDGET
@given(st.lists(_URL_PARTS, max_size=4).map("".join) | st.text(max_size=30))
def test_egress_rules_are_networks_or_ascii_names_or_refused(text: str) -> None:
    """REQ-SEC-006: an operator rule is a network, a lower-case ASCII name, or ValueError."""
    targets.check_egress_rule(text)


@pytest.mark.req("REQ-TEST-013", "REQ-FETCH-003")
@BUDGET
@given(
    st.lists(_ROBOTS_LINES, max_size=20).map(lambda lines: "\n".join(lines).encode("latin-1"))
    | st.binary(max_size=300),
    st.text(max_size=30),
)
def test_any_robots_answer_parses_and_judges_any_path(body: bytes, path: str) -> None:
    """REQ-FETCH-003: any robots.txt answer parses and gives any path a verdict."""
    targets.check_robots(body, path)


@pytest.mark.req("REQ-TEST-013", "REQ-CFG-001")
@BUDGET
@given(st.lists(_TOML_LINES, max_size=12).map("\n".join))
def test_any_configuration_is_accepted_or_refused_with_config_error(document: str) -> None:
    """REQ-CFG-001: a configuration document is a Config or a ConfigError, never a crash."""
    targets.check_config(document)


@pytest.mark.req("REQ-TEST-013", "REQ-RUST-003")
@settings(max_examples=10, deadline=None, database=None)
@pytest.mark.parametrize("engine_id", sorted(known_ids()))
@given(st.integers(0, 255), st.binary(max_size=200) | _JSON_BODIES)
def test_every_driver_parses_or_fails_with_a_failure_class(
    engine_id: str, selector: int, body: bytes
) -> None:
    """REQ-RUST-003: a provider answer gives ranked hits or an EngineFailure with its class."""
    targets.check_driver(engine_id, targets.response_of(selector, body))
