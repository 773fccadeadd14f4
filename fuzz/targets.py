"""Fuzz targets: one per parser that reads external bytes (REQ-SEC-023, REQ-TEST-013).

Each target takes the fuzzer's bytes, turns them into the parser's input and
asserts the parser's contract: exactly one outcome (a value, or one of the
module's declared errors), the bounds it promises, nothing else raised. An
AssertionError or any undeclared exception is a crash. The same functions run
under atheris (`fuzz/run.py`, coverage-guided) and under Hypothesis
(`tests/properties/`), so the contract is written once.

Project code is reached only through its public entry points.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from ipaddress import ip_address

import httpx2

from rypsok.core import limits
from rypsok.core.boundary.invisible import remove_invisible
from rypsok.core.boundary.text import clean_text
from rypsok.core.config import Config, ConfigError, parse_config
from rypsok.core.egress.errors import DENIED_REASONS, EgressDenied
from rypsok.core.egress.policy import AgentProfile, EgressRules
from rypsok.core.egress.ranges import judge_address
from rypsok.core.engines.base import (
    Driver,
    EngineFailure,
    EngineResponse,
    EngineSettings,
    FailureClass,
    RawHit,
)
from rypsok.core.engines.registry import driver_classes, known_ids
from rypsok.core.fetch.decode import decode_body, encoding_name, media_type
from rypsok.core.fetch.extract import Extracted, ExtractionFailed, extract_html, extract_text
from rypsok.core.fetch.robots import parse_robots
from rypsok.core.headers import retry_after_ms
from rypsok.core.privacy import find_credentials, mask_credentials
from rypsok.core.search.urls import ResultUrl, UrlRejection, normalize_result_url

Target = Callable[[bytes], None]

_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_FIXED_CODE = re.compile(r"[a-z_]{1,40}")
_JOINERS = ("\u200c", "\u200d")
# The bound extraction promises on its output (two characters per input character
# plus a fixed slack, docs/extraction.md); far above what any page produces.
_OUTPUT_SLACK = 64 * 1024
_BASE_URL = "https://fuzz.example/dir/page.html"
_ENDPOINT = "https://provider.fuzz.example/api"
_STATUSES = (200, 200, 200, 200, 204, 301, 400, 401, 403, 404, 429, 500, 502, 503, 999)
_CONTENT_TYPES = (
    "application/json; charset=utf-8",
    "application/atom+xml; charset=utf-8",
    "text/html; charset=utf-8",
    "text/plain",
    None,
)


def _split(data: bytes) -> tuple[int, bytes]:
    """The first byte as a selector and the rest, so one input can steer a choice."""
    return (data[0], data[1:]) if data else (0, b"")


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _two_texts(data: bytes) -> tuple[str, str]:
    head, _, tail = data.partition(b"\n")
    return _text(head), _text(tail)


# -- the content boundary ----------------------------------------------------------------


def check_clean_text(raw: str, max_chars: int) -> None:
    """REQ-CTX-004: bounded, free of invisible and control characters, no edge joiner."""
    result = clean_text(raw, max_chars)
    text = result.text
    assert len(text) <= max_chars
    assert remove_invisible(text)[1] == 0
    assert not _CONTROLS.search(text)
    assert text == text.strip(" ")
    assert not text.startswith(_JOINERS) and not text.endswith(_JOINERS)
    text.encode("utf-8")  # scalar values only


def text_cleaner(data: bytes) -> None:
    selector, rest = _split(data)
    check_clean_text(_text(rest), selector * 4)


def _check_extracted(result: Extracted, source_chars: int, *, strip: str | None = None) -> None:
    # HTML output is stripped; text and Markdown keep their indentation, not blank lines.
    assert result.markdown.strip() and result.markdown == result.markdown.strip(strip)
    assert remove_invisible(result.markdown)[1] == 0
    assert not _CONTROLS.search(result.markdown)
    assert len(result.markdown) <= 2 * source_chars + _OUTPUT_SLACK
    assert result.invisible_removed >= 0


def check_content_cleaner(text: str, kind: str) -> None:
    """REQ-SEC-015: text and Markdown pages come out clean, or ExtractionFailed(code)."""
    try:
        result = extract_text(text, kind="markdown" if kind == "markdown" else "text")
    except ExtractionFailed as failure:
        assert len(failure.args) == 1 and _FIXED_CODE.fullmatch(failure.args[0])
        return
    _check_extracted(result, len(text), strip="\n")


def content_cleaner(data: bytes) -> None:
    selector, rest = _split(data)
    check_content_cleaner(_text(rest), "markdown" if selector % 2 else "text")


def check_html_pipeline(html: str, max_nodes: int, max_depth: int) -> None:
    """REQ-FETCH-009, REQ-SEC-014: parse plus extraction (with the style-sheet visibility
    rules) gives clean, bounded Markdown or ExtractionFailed with a fixed code."""
    try:
        result = extract_html(html, base_url=_BASE_URL, max_nodes=max_nodes, max_depth=max_depth)
    except ExtractionFailed as failure:
        assert len(failure.args) == 1 and _FIXED_CODE.fullmatch(failure.args[0])
        return
    _check_extracted(result, len(html))
    assert result.title is None or remove_invisible(result.title)[1] == 0


def html_pipeline(data: bytes) -> None:
    selector, rest = _split(data)
    # Small bounds as well as the production ones, so the partial paths are reached.
    if selector % 2:
        check_html_pipeline(_text(rest), limits.PARSED_NODES, limits.NESTING_DEPTH)
    else:
        check_html_pipeline(_text(rest), 16 + selector, 4 + selector % 32)


# -- decoding and header values ----------------------------------------------------------


def check_decode(body: bytes, content_type: str | None) -> None:
    """REQ-FETCH-006: any bytes under any Content-Type decode to text with a WHATWG name."""
    text, name = decode_body(body, content_type)
    assert isinstance(text, str)
    assert encoding_name(name) == name
    text.encode("utf-8", "surrogatepass")


def charset_decoding(data: bytes) -> None:
    head, _, body = data.partition(b"\n")
    check_decode(body, _text(head) if head else None)


def check_header_values(content_type: str, retry_after: str, date: str) -> None:
    """The charset label and media type of a Content-Type, and Retry-After with a Date."""
    essence = media_type(content_type)
    assert essence == essence.strip().lower()
    label = encoding_name(content_type)
    assert label is None or encoding_name(label) == label
    _, name = decode_body(b"plain ascii", content_type)
    assert encoding_name(name) == name
    wait = retry_after_ms({"retry-after": retry_after, "date": date})
    assert wait is None or 0 <= wait <= limits.RETRY_AFTER_MAX_MS


def header_values(data: bytes) -> None:
    first, rest = _two_texts(data)
    second, third = _two_texts(rest.encode("utf-8", "surrogatepass"))
    check_header_values(first, second, third)


# -- URLs, credentials and egress --------------------------------------------------------


def check_result_url(raw: str) -> None:
    """REQ-RANK-003: a safe ASCII URL within LIM-F9 that normalizes to itself, or a rejection."""
    outcome = normalize_result_url(raw)
    if isinstance(outcome, UrlRejection):
        return
    assert isinstance(outcome, ResultUrl)
    assert outcome.url.isascii() and len(outcome.url) <= limits.URL_MAX_CHARS
    assert outcome.url.startswith(("http://", "https://"))
    again = normalize_result_url(outcome.url)
    assert isinstance(again, ResultUrl) and again.url == outcome.url and again.key == outcome.key


def url_normalization(data: bytes) -> None:
    check_result_url(_text(data))


def check_credentials(text: str) -> None:
    """REQ-PRIV-002: findings in range, sorted, disjoint; masking replaces exactly them."""
    findings = find_credentials(text)
    previous_end = 0
    for finding in findings:
        assert finding.length >= 1 and finding.start >= previous_end
        previous_end = finding.start + finding.length
    assert previous_end <= len(text)
    expected, cursor = [], 0
    for finding in findings:
        expected += [text[cursor : finding.start], f"[masked:{finding.kind.value}]"]
        cursor = finding.start + finding.length
    assert mask_credentials(text, findings) == "".join([*expected, text[cursor:]])


def credential_check(data: bytes) -> None:
    check_credentials(_text(data))


def check_agent_url(url: str, allow_http: bool) -> None:
    """REQ-SEC-006: a URL is accepted with a judged host, or refused with a fixed reason."""
    try:
        parsed = AgentProfile(allow_http=allow_http).check(url)
    except EgressDenied as denied:
        assert str(denied) in DENIED_REASONS
        return
    assert isinstance(parsed, httpx2.URL)
    assert parsed.scheme in ("https", "http") and not parsed.userinfo
    host = parsed.raw_host.decode("ascii")
    try:
        literal = ip_address(host.strip("[]"))
    except ValueError:
        return
    assert judge_address(literal) is None  # an accepted literal is never a refused range


def egress_url(data: bytes) -> None:
    selector, rest = _split(data)
    check_agent_url(_text(rest), bool(selector % 2))


def check_egress_rule(text: str) -> None:
    """REQ-SEC-006: an allow or deny rule is a network or a lower-case name, or ValueError."""
    try:
        rules = EgressRules.from_strings(allow=[text], deny=[text])
    except ValueError:
        return
    for rule in (*rules.allow, *rules.deny):
        assert not isinstance(rule, str) or (rule.isascii() and rule == rule.lower())
    # A name the rule holds is never both allowed and not denied: deny wins.
    assert not rules.allows("fuzz.example", None) or rules.denies("fuzz.example", None)


def egress_rule(data: bytes) -> None:
    check_egress_rule(_text(data))


# -- robots.txt, configuration and provider answers ---------------------------------------


def check_robots(body: bytes, path: str) -> None:
    """REQ-FETCH-003: any answer parses; any path gets a verdict; robots.txt is allowed."""
    rules = parse_robots(body)
    assert isinstance(rules.allows(path if path.startswith("/") else "/" + path), bool)
    assert rules.allows("/robots.txt")


def robots(data: bytes) -> None:
    head, _, body = data.partition(b"\n")
    check_robots(body, _text(head))


def check_config(document: str) -> None:
    """REQ-CFG-001: a TOML document is a Config or a ConfigError naming a key, never a crash."""
    try:
        data = tomllib.loads(document)
    except tomllib.TOMLDecodeError:
        return  # load_config reports this as a ConfigError before parse_config
    try:
        config = parse_config(data, known_ids())
    except ConfigError as error:
        assert str(error)
        return
    assert isinstance(config, Config)


def config_parsing(data: bytes) -> None:
    check_config(_text(data))


def _driver(engine_id: str) -> Driver:
    cls = driver_classes()[engine_id]
    return cls(EngineSettings(endpoint=_ENDPOINT, api_key="fuzz-key-0123456789"))


def check_driver(engine_id: str, response: EngineResponse) -> None:
    """REQ-RUST-003: a provider answer gives ranked hits or an EngineFailure with a class."""
    try:
        hits = _driver(engine_id).parse(response)
    except EngineFailure as failure:
        assert isinstance(failure.failure_class, FailureClass)
        return
    assert isinstance(hits, list)
    for hit in hits:
        assert isinstance(hit, RawHit) and hit.rank >= 1
        assert isinstance(hit.url, str) and isinstance(hit.title, str)
    ranks = [hit.rank for hit in hits]
    assert ranks == sorted(ranks)


def response_of(selector: int, body: bytes) -> EngineResponse:
    status = _STATUSES[selector % len(_STATUSES)]
    content_type = _CONTENT_TYPES[(selector // len(_STATUSES)) % len(_CONTENT_TYPES)]
    headers: Mapping[str, str] = {} if content_type is None else {"content-type": content_type}
    return EngineResponse(status=status, headers=headers, body=body)


def _driver_target(engine_id: str) -> Target:
    def target(data: bytes) -> None:
        selector, rest = _split(data)
        check_driver(engine_id, response_of(selector, rest))

    target.__name__ = f"driver_{engine_id}"
    return target


TARGETS: dict[str, Target] = {
    "text_cleaner": text_cleaner,
    "content_cleaner": content_cleaner,
    "charset_decoding": charset_decoding,
    "html_pipeline": html_pipeline,
    "url_normalization": url_normalization,
    "credential_check": credential_check,
    "config_parsing": config_parsing,
    "egress_url": egress_url,
    "egress_rule": egress_rule,
    "robots": robots,
    "header_values": header_values,
    **{f"driver_{engine_id}": _driver_target(engine_id) for engine_id in sorted(known_ids())},
}
