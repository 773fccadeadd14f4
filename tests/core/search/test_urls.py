"""Result URL normalization: the returned URL, the comparison key and the rejections."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core import limits
from rypsok.core.search import urls
from rypsok.core.search.urls import (
    TRACKING_PARAMETER_PREFIXES,
    TRACKING_PARAMETERS,
    ResultUrl,
    UrlRejection,
    normalize_result_url,
)

# The documented list (docs/ranking.md), written out so that shortening the
# module's list fails here instead of shrinking the test.
DOCUMENTED_TRACKING = [
    "gclid",
    "gclsrc",
    "gbraid",
    "wbraid",
    "dclid",
    "srsltid",
    "_ga",
    "_gl",
    "fbclid",
    "igshid",
    "msclkid",
    "twclid",
    "ref_src",
    "ttclid",
    "li_fat_id",
    "yclid",
    "_openstat",
    "mc_cid",
    "mc_eid",
    "_hsenc",
    "_hsmi",
    "__hstc",
    "__hssc",
    "__hsfp",
    "mkt_tok",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "utm_id",
    "utm_source_platform",
]


def accepted(raw: str) -> ResultUrl:
    result = normalize_result_url(raw)
    assert isinstance(result, ResultUrl), f"{raw!r} was rejected: {result}"
    return result


def returned(raw: str) -> str:
    return accepted(raw).url


def key(raw: str) -> str:
    return accepted(raw).key


# --- tracking parameters ------------------------------------------------------


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize("name", DOCUMENTED_TRACKING)
def test_each_tracking_parameter_is_removed_and_the_others_keep_their_order(name: str) -> None:
    """REQ-RANK-003: a known tracking parameter is removed; the rest stay as written, in order."""
    url = f"https://a.example/p?z=1&{name}=abc&b=2&a=3#top"
    assert returned(url) == "https://a.example/p?z=1&b=2&a=3#top"


@pytest.mark.req("REQ-RANK-003")
def test_the_tracking_list_is_the_documented_one() -> None:
    """REQ-RANK-003: the module's tracking list is exactly the documented, conservative list."""
    documented_names = {name for name in DOCUMENTED_TRACKING if not name.startswith("utm_")}
    assert documented_names == TRACKING_PARAMETERS
    assert TRACKING_PARAMETER_PREFIXES == ("utm_",)


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://a.example/?utm_source=x", "https://a.example/"),
        ("https://a.example/?utm_source=x&fbclid=y#f", "https://a.example/#f"),
        ("https://a.example/?gclid", "https://a.example/"),
        ("https://a.example/?utm%5Fsource=x&a=1", "https://a.example/?a=1"),
        ("https://a.example/?a=1&&utm_term=x&b=2", "https://a.example/?a=1&&b=2"),
        ("https://a.example/?a=%C3%A4&gclid=1", "https://a.example/?a=%C3%A4"),
        ("https://a.example/?", "https://a.example/?"),
    ],
)
def test_tracking_removal_edges(raw: str, expected: str) -> None:
    """REQ-RANK-003: names match after percent-decoding; an emptied query loses its `?`."""
    assert returned(raw) == expected


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "query",
    [
        "ref=main",  # GitHub uses it for a branch
        "source=web",
        "si=abc",
        "feature=share",
        "UTM_SOURCE=x",  # matching is case-sensitive
        "xutm_source=1",
        "gclid_x=1",
        "q=utm_source",
    ],
)
def test_parameters_that_may_select_content_are_kept(query: str) -> None:
    """REQ-RANK-003: only listed tracking parameters go; lookalikes and content params stay."""
    assert returned(f"https://a.example/p?{query}") == f"https://a.example/p?{query}"


# --- hosts --------------------------------------------------------------------


@pytest.mark.req("REQ-RANK-003", "REQ-TEST-007")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            "https://bücher.example/straße?q=ä",
            "https://xn--bcher-kva.example/stra%C3%9Fe?q=%C3%A4",
        ),
        ("https://BÜCHER.Example/", "https://xn--bcher-kva.example/"),
        ("https://straße.example/", "https://xn--strae-oqa.example/"),  # nontransitional
        ("https://пример.испытание/", "https://xn--e1afmkfd.xn--80akhbyknj4f/"),
        ("https://例え.テスト/", "https://xn--r8jz45g.xn--zckzah/"),
        ("https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"),
        ("https://ｅｘａｍｐｌｅ．ｃｏｍ/", "https://example.com/"),  # full-width
        ("https://example。com/", "https://example.com/"),  # ideographic full stop
        ("https://ex%61mple.com/", "https://example.com/"),  # percent-encoded host
        ("https://b%C3%BCcher.example/", "https://xn--bcher-kva.example/"),
        ("https://EXAMPLE.com/Path", "https://example.com/Path"),
        ("https://r3---sn-abc.example/", "https://r3---sn-abc.example/"),
        ("https://a_b.example/", "https://a_b.example/"),
        ("https://a.example./", "https://a.example./"),  # the root dot is kept
    ],
)
def test_hosts_are_written_in_ascii(raw: str, expected: str) -> None:
    """REQ-RANK-003, REQ-TEST-007: non-ASCII and mapped hosts are returned in IDNA ASCII form."""
    assert returned(raw) == expected


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://127.0.0.1/", "http://127.0.0.1/"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://0177.0.0.1/", "http://127.0.0.1/"),
        ("http://1.2.3.4./", "http://1.2.3.4/"),
        ("http://0x.0/", "http://0.0.0.0/"),
        ("http://" + "0" * 60 + "1.0.0.1/", "http://1.0.0.1/"),  # octal, leading zeros
        ("http://93.184.215.14:8080/x", "http://93.184.215.14:8080/x"),
        ("http://[::1]/", "http://[::1]/"),
        ("http://[0:0:0:0:0:0:0:1]:443/", "http://[::1]:443/"),
        ("http://[2001:DB8:0:0:1:0:0:1]/", "http://[2001:db8::1:0:0:1]/"),
        ("http://[1:0:2:3:4:5:6:7]/", "http://[1:0:2:3:4:5:6:7]/"),
        ("http://[::ffff:192.0.2.1]/", "http://[::ffff:c000:201]/"),
    ],
)
def test_address_hosts_are_accepted_in_canonical_form(raw: str, expected: str) -> None:
    """REQ-RANK-003: IPv4 in any WHATWG notation is dotted-decimal, IPv6 compressed lower-case."""
    assert returned(raw) == expected


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "http://a..b/",
        "http://.a.example/",
        "http://a.example../",
        "http://./",
        "http://" + "a" * 64 + ".example/",
        "http://" + ".".join(["a" * 63] * 4) + "/",  # 255 octets
        "http://a b.example/",
        "http://a%20b.example/",
        "http://a<b.example/",
        "http://a%2Fb.example/",
        "http://evil.example／.good.example/",  # full-width solidus maps to `/`
        "http://a!b.example/",
        "http://%ff.example/",  # not UTF-8
        "http://ex%00ample.com/",
        "http://💩.la/",  # IDNA 2008 disallows emoji
        "http://\u0301a.example/",  # leading combining mark
        "http://xn--a.example/",  # not valid Punycode
        "http://xn--abc-.example/",
        "http://example.123/",
        "http://1.2.3.4.5/",
        "http://256.0.0.1/",
        "http://0x100000000/",
        "http://0x" + "f" * 40 + "/",  # a number, far too large
        "http://a.09/",  # ends in a number that is not valid octal
        "http://[::1/",
        "http://[::g]/",
        "http://[fe80::1%25eth0]/",
        "http://[::1]x/",
        "http://[1.2.3.4]/",
    ],
)
def test_hosts_web_fetch_would_refuse_are_rejected(raw: str) -> None:
    """REQ-RANK-003: empty labels, bad IDNA, forbidden characters and bad addresses are BAD_HOST."""
    assert normalize_result_url(raw) is UrlRejection.BAD_HOST


@pytest.mark.req("REQ-RANK-003")
def test_label_and_name_length_bounds() -> None:
    """REQ-RANK-003: a 63-octet label and a 253-octet name are accepted, one more is not."""
    assert returned("http://" + "a" * 63 + ".example/") == "http://" + "a" * 63 + ".example/"
    name = ".".join(["a" * 63] * 3 + ["a" * 61])
    assert len(name) == 253
    assert returned(f"http://{name}./") == f"http://{name}./"
    assert normalize_result_url(f"http://{name}a/") is UrlRejection.BAD_HOST


# --- reading hostile input ----------------------------------------------------


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("HTTPS://example.com/A", "https://example.com/A"),
        ("  https://example.com/a \n", "https://example.com/a"),
        ("\x00\x1fhttps://example.com/\x01", "https://example.com/"),
        ("ht\ttp://exa\nmple.com/pa\rth?q\t=1", "http://example.com/path?q=1"),
        ("http://evil.example\\@good.example/", "http://evil.example/@good.example/"),
        ("http://a.example\\b\\c", "http://a.example/b/c"),
        ("http:\\\\a.example\\b", "http://a.example/b"),
        ("http:a.example/b", "http://a.example/b"),
        ("http:///a.example/b", "http://a.example/b"),
        ("http://a.example/x@y/z", "http://a.example/x@y/z"),
        ("http://a.example?q=1", "http://a.example?q=1"),
        ("http://a.example:/p", "http://a.example/p"),
        ("http://a.example:0080/p", "http://a.example:80/p"),
        ("https://a.example:443/p", "https://a.example:443/p"),
        ("http://a.example/a/../b/./c", "http://a.example/a/../b/./c"),
        ("http://a.example/p?q=a\\b#f\\g", "http://a.example/p?q=a\\b#f\\g"),
        ("http://a.example/p#a#b?c", "http://a.example/p#a#b?c"),
    ],
)
def test_hostile_input_is_read_as_whatwg_reads_it(raw: str, expected: str) -> None:
    """REQ-RANK-003: tabs/newlines dropped, `\\` as `/`, scheme case folded, rest unchanged."""
    assert returned(raw) == expected


@pytest.mark.req("REQ-RANK-003", "REQ-TEST-007")
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://a.example/a b", "https://a.example/a%20b"),
        ("https://a.example/a\x01b\x7fc", "https://a.example/a%01b%7Fc"),
        ("https://a.example/a\u200bb", "https://a.example/a%E2%80%8Bb"),  # zero-width space
        ("https://a.example/a\u00adb", "https://a.example/a%C2%ADb"),  # soft hyphen
        ("https://a.example/a\ufeffb", "https://a.example/a%EF%BB%BFb"),  # BOM
        ("https://a.example/a\u202eb", "https://a.example/a%E2%80%AEb"),  # bidi override
        ("https://a.example/\u00a0", "https://a.example/%C2%A0"),  # no-break space
        ("https://a.example/\U0001f600", "https://a.example/%F0%9F%98%80"),
        ("https://a.example/\ud800", "https://a.example/%EF%BF%BD"),  # lone surrogate
        ('https://a.example/"<>`{}^', "https://a.example/%22%3C%3E%60%7B%7D%5E"),
        ("https://a.example/'|[]", "https://a.example/'|[]"),
        ("https://a.example/?q=a b\"'<>`{}", "https://a.example/?q=a%20b%22%27%3C%3E`{}"),
        ("https://a.example/?q=\u200b\x00x", "https://a.example/?q=%E2%80%8B%00x"),
        ("https://a.example/#a b\"<>`'{}", "https://a.example/#a%20b%22%3C%3E%60'{}"),
        ("https://a.example/#\u00e4", "https://a.example/#%C3%A4"),
    ],
)
def test_unsafe_characters_are_percent_encoded(raw: str, expected: str) -> None:
    """REQ-RANK-003, REQ-TEST-007: spaces, controls, invisible and non-ASCII chars are escaped."""
    assert returned(raw) == expected


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "https://a.example/%2F%2f%41%e2%82%ac?x=%26%3D#%20",
        "https://a.example/%zz/%/%4",
        "https://a.example/100%25?p=%",
    ],
)
def test_existing_escapes_are_untouched(raw: str) -> None:
    """REQ-RANK-003: existing percent-escapes, even malformed ones, are returned as they are."""
    assert returned(raw) == raw


# --- rejections ----------------------------------------------------------------


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "javascript:alert(1)",
        "JavaScript://example.com/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "ftp://example.com/file",
        "mailto:someone@example.com",
        "file:///etc/passwd",
        "ws://example.com/",
        "example.com:80/path",
    ],
)
def test_schemes_other_than_http_are_rejected(raw: str) -> None:
    """REQ-RANK-003: only http and https URLs are results."""
    assert normalize_result_url(raw) is UrlRejection.NOT_HTTP


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw", ["", "   ", "//example.com/", "/relative/path", "example.com/x", "1http://a.example/"]
)
def test_urls_without_a_scheme_are_malformed(raw: str) -> None:
    """REQ-RANK-003: a relative or scheme-less URL is MALFORMED (drivers resolve relative links)."""
    assert normalize_result_url(raw) is UrlRejection.MALFORMED


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    ["http://", "https:", "http:///", "http://?q=1", "http://#f", "http://:80/", "http://[]/"],
)
def test_urls_without_a_host_are_rejected(raw: str) -> None:
    """REQ-RANK-003: an http URL with no host is BAD_HOST."""
    assert normalize_result_url(raw) is UrlRejection.BAD_HOST


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "http://user:secret@a.example/",
        "http://user@a.example/",
        "http://@a.example/",
        "http://a.example@evil.example/",
        "http://a.example:80@evil.example/",
    ],
)
def test_userinfo_is_rejected(raw: str) -> None:
    """REQ-RANK-003: a URL with credentials is BAD_HOST (web_fetch refuses it, REQ-FETCH-007)."""
    assert normalize_result_url(raw) is UrlRejection.BAD_HOST


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "http://a.example:65536/",
        "http://a.example:8x/",
        "http://a.example:-1/",
        "http://a.example: 80/",
        "http://a.example:\u0663/",  # Arabic-Indic digit three
        "http://a.example:" + "9" * 5000 + "/",
    ],
)
def test_bad_ports_are_malformed(raw: str) -> None:
    """REQ-RANK-003: a port that is not ASCII digits up to 65535 is MALFORMED."""
    assert normalize_result_url(raw) is UrlRejection.MALFORMED


@pytest.mark.req("REQ-CTX-006", "REQ-RANK-003")
def test_urls_longer_than_lim_f9_are_rejected() -> None:
    """REQ-CTX-006, REQ-RANK-003: a URL of LIM-F9 chars is kept, one char more is TOO_LONG."""
    prefix = "https://a.example/"
    at_limit = prefix + "a" * (limits.URL_MAX_CHARS - len(prefix))
    assert limits.URL_MAX_CHARS == 2_048
    assert returned(at_limit) == at_limit
    assert normalize_result_url(at_limit + "a") is UrlRejection.TOO_LONG


@pytest.mark.req("REQ-CTX-006", "REQ-RANK-003")
def test_the_length_bound_applies_to_the_returned_form() -> None:
    """REQ-CTX-006, REQ-RANK-003: the bound counts the escaped form, not removed trackers."""
    encoded_over = "https://a.example/" + "ä" * 400  # 418 chars, 2,418 once escaped
    assert normalize_result_url(encoded_over) is UrlRejection.TOO_LONG
    tracked = "https://a.example/p?utm_source=" + "x" * 3_000
    assert returned(tracked) == "https://a.example/p"
    assert normalize_result_url("https://a.example/" + "a" * 40_000) is UrlRejection.TOO_LONG


# --- comparison key -----------------------------------------------------------


@pytest.mark.req("REQ-RANK-002")
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("HTTPS://EXAMPLE.COM/a", "https://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("http://example.com:0080/a", "http://example.com/a"),
        ("https://example.com/a#section", "https://example.com/a"),
        ("https://example.com/a#", "https://example.com/a"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?q=1", "https://example.com/?q=1"),
        ("https://example.com/%7Euser/%41", "https://example.com/~user/A"),
        ("https://example.com/%7e%2d%2E%5f", "https://example.com/~-._"),
        ("https://example.com/%c3%a4?q=%c3%a4", "https://example.com/%C3%A4?q=%C3%A4"),
        ("https://example.com/a%2fb", "https://example.com/a%2Fb"),
        ("https://example.com/?q=%3d", "https://example.com/?q=%3D"),
        ("https://example.com/ä", "https://example.com/%c3%a4"),
        ("https://example.com/?utm_source=x&a=1", "https://example.com/?a=1"),
        ("https://bücher.example/", "https://xn--bcher-kva.example/"),
    ],
)
def test_key_rules_merge_equivalent_urls(first: str, second: str) -> None:
    """REQ-RANK-002: case, default port, fragment, trackers, escape spelling do not split keys."""
    assert key(first) == key(second)


@pytest.mark.req("REQ-RANK-002")
def test_key_form() -> None:
    """REQ-RANK-002: the key is the normalized URL without fragment; the returned URL keeps all."""
    result = accepted("HTTPS://Example.COM:443/%7eA/b%2f?Q=%c3%a4&utm_id=1#Frag")
    assert result.url == "https://example.com:443/%7eA/b%2f?Q=%c3%a4#Frag"
    assert result.key == "https://example.com/~A/b%2F?Q=%C3%A4"


@pytest.mark.req("REQ-RANK-002")
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("http://example.com/", "https://example.com/"),
        ("https://www.example.com/", "https://example.com/"),
        ("https://example.com/?a=1&b=2", "https://example.com/?b=2&a=1"),
        ("https://example.com/a/", "https://example.com/a"),
        ("https://example.com/A", "https://example.com/a"),
        ("https://example.com/?q=A", "https://example.com/?q=a"),
        ("https://example.com/a%2Fb", "https://example.com/a/b"),
        ("https://example.com/?q=a+b", "https://example.com/?q=a%20b"),
        ("https://example.com/a/../b", "https://example.com/b"),
        ("https://example.com/?", "https://example.com/"),
        ("http://example.com:443/", "http://example.com/"),
        ("https://example.com:8443/", "https://example.com/"),
        ("https://example.com./", "https://example.com/"),
        ("https://example.com/?ref=x", "https://example.com/"),
    ],
)
def test_key_non_rules_keep_distinct_resources_apart(first: str, second: str) -> None:
    """REQ-RANK-002: no scheme merging, no www stripping, no param sorting, no slash dropping."""
    assert key(first) != key(second)


# --- properties (REQ-TEST-013) ------------------------------------------------

_TRICKY = (
    "aZ09-._~:/?#[]@!$&'()*+,;=%\\ \"<>`{}^|\t\n\r\x00\x1f\x7f"
    "\u00a0\u00ad\u200b\u200d\u202e\ufeffäßİ\u0301\U0001f600ｅ．。／＠"
)
_UNRESERVED = "ABCXYZabcxyz0189-._~"
_GOOD_HOSTS = st.sampled_from(
    [
        "example.com",
        "EXAMPLE.com.",
        "www.example.com",
        "bücher.example",
        "xn--bcher-kva.example",
        "ｅｘａｍｐｌｅ．ｃｏｍ",
        "ex%61mple.com",
        "0x7f.1",
        "1.2.3.4",
        "[::1]",
        "[::ffff:1.2.3.4]",
    ]
)
_BAD_HOSTS = st.sampled_from(["", "a..b", "user@host", "a%ffb", "[::1", "example.123"])
_HOSTS = st.one_of(
    _GOOD_HOSTS,
    _GOOD_HOSTS,
    _BAD_HOSTS,
    st.text(alphabet="abcäß.-_%41", min_size=1, max_size=20),
    st.text(alphabet=_TRICKY, max_size=20),
)
_STRUCTURED_URLS = st.builds(
    lambda scheme, slashes, host, port, path, query, fragment: (
        f"{scheme}{slashes}{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(["http:", "https:", "HTTP:", "hTtPs:", "https:", "http:", "ftp:", "data:", ""]),
    st.sampled_from(["//", "//", "//", "", "/", "\\\\", "///", "/\\"]),
    _HOSTS,
    st.one_of(st.just(""), st.just(""), st.integers(-1, 70_000).map(lambda port: f":{port}")),
    st.text(alphabet=_TRICKY, max_size=40).map(lambda path: "/" + path),
    st.one_of(
        st.just(""),
        st.lists(
            st.sampled_from(["utm_source=x", "a=1", "gclid", "", "b=%zz", "q=ä ö"]), max_size=4
        ).map(lambda params: "?" + "&".join(params)),
    ),
    st.one_of(st.just(""), st.text(alphabet=_TRICKY, max_size=10).map(lambda f: "#" + f)),
)
# Mostly structured, so that most examples get past the scheme and the host.
_ANY_URL = st.one_of(
    _STRUCTURED_URLS,
    _STRUCTURED_URLS.map(lambda url: url.replace("/", "\\", 1)),
    st.text(max_size=120),
)


@pytest.mark.req("REQ-TEST-013", "REQ-RANK-003", "REQ-CTX-006")
@settings(max_examples=200, deadline=None)
@given(_ANY_URL)
def test_property_returned_urls_are_safe_ascii_within_bounds(raw: str) -> None:
    """REQ-TEST-013, REQ-RANK-003, REQ-CTX-006: never raises; output is printable ASCII ≤ LIM-F9."""
    result = normalize_result_url(raw)
    if isinstance(result, UrlRejection):
        return
    for text in (result.url, result.key):
        assert text.isascii()
        assert all(0x20 < ord(character) < 0x7F for character in text)
        assert text.startswith(("http://", "https://"))
    assert len(result.url) <= limits.URL_MAX_CHARS
    assert "#" not in result.key


@pytest.mark.req("REQ-TEST-013", "REQ-RANK-002", "REQ-RANK-003")
@settings(max_examples=200, deadline=None)
@given(_ANY_URL)
def test_property_normalization_is_idempotent(raw: str) -> None:
    """REQ-TEST-013, REQ-RANK-002, REQ-RANK-003: normalizing a returned URL changes nothing."""
    result = normalize_result_url(raw)
    if isinstance(result, UrlRejection):
        return
    again = normalize_result_url(result.url)
    assert again == result
    assert normalize_result_url(result.key) == ResultUrl(url=result.key, key=result.key)


@pytest.mark.req("REQ-TEST-013", "REQ-RANK-002")
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_TRICKY, max_size=30), st.text(alphabet=_UNRESERVED, max_size=30))
def test_property_escape_spelling_never_splits_a_key(anything: str, unreserved: str) -> None:
    """REQ-TEST-013, REQ-RANK-002: hex case and escaped unreserved characters share one key."""
    lower = "".join(f"%{byte:02x}" for byte in anything.encode("utf-8"))
    assert key("https://a.example/" + lower) == key("https://a.example/" + lower.upper())
    escaped = "".join(f"%{ord(character):02x}" for character in unreserved)
    assert key(f"https://a.example/{unreserved}?{unreserved}") == key(
        f"https://a.example/{escaped}?{escaped}"
    )


# --- fast paths give the full reading's answer (performance §16) ------------------------------

_HOST_PIECES = st.sampled_from(
    ["a", "z", "site0", "example", "org", "0", "9", "0x7f", "_", "-", "xn--", "xn--bcher-kva",
     "A", "É", "%41", "%", ".", "..", "1", "255", "ａ", "a" * 63, "b" * 64]
)  # fmt: skip


@pytest.mark.req("REQ-RANK-003")
@settings(max_examples=3000, deadline=None)
@given(st.lists(_HOST_PIECES, min_size=1, max_size=8).map("".join))
def test_the_plain_host_fast_path_agrees_with_the_full_reading(host: str) -> None:
    """REQ-RANK-003: a host the fast path takes is one the full reading returns unchanged."""
    assert urls._domain_or_ipv4_host(host) == urls._read_host(host)


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize("length", [252, 253, 254])
def test_the_plain_host_fast_path_keeps_the_name_bound(length: int) -> None:
    """REQ-RANK-003: the 253-octet bound holds on the fast path, with and without a root dot."""
    host = ("a" * 62 + ".") * 4
    host = host[: length - 1].rstrip(".") + "z"
    for candidate in (host, host + "."):
        assert urls._domain_or_ipv4_host(candidate) == urls._read_host(candidate)
    assert (urls._domain_or_ipv4_host(host) is None) == (len(host) > 253)


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "url", "key"),
    [
        ("https://a.example/p%7e%41?q=%7a&b=%2f", "https://a.example/p%7e%41?q=%7a&b=%2f",
         "https://a.example/p~A?q=z&b=%2F"),
        ("https://a.example/plain?x=1", "https://a.example/plain?x=1",
         "https://a.example/plain?x=1"),
        ("https://a.example/\tp\na\rth?q=1", "https://a.example/path?q=1",
         "https://a.example/path?q=1"),
        ("https://A.Example:443", "https://a.example:443", "https://a.example/"),
    ],
)  # fmt: skip
def test_the_steps_skipped_on_text_without_their_characters_still_apply_with_them(
    raw: str, url: str, key: str
) -> None:
    """REQ-RANK-002, REQ-RANK-003: escapes and tab/newline removal where present, else nothing."""
    assert normalize_result_url(raw) == ResultUrl(url=url, key=key)


# --- the already-canonical fast path (performance §20.2) ------------------------------------

# Printable ASCII and a few characters each step of the full reading changes.
_NEAR_CANONICAL = (
    "".join(map(chr, range(0x21, 0x7F))) + " \t\x00\x7f\u00e4\u200b\U0001f600" + "aaaa////%%%%"
)
_NEAR_CANONICAL_URLS = st.builds(
    lambda scheme, separator, host, port, path, query, fragment: (
        f"{scheme}{separator}{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(["https", "http", "https", "http", "HTTPS", "ftp"]),
    st.sampled_from(["://", "://", "://", ":/", ":///", ":\\\\", "://\\"]),
    st.lists(_HOST_PIECES, min_size=1, max_size=6).map("".join),
    st.sampled_from(["", "", "", ":", ":443", ":8080", ":0080"]),
    st.one_of(
        st.just(""),
        st.text(alphabet=_NEAR_CANONICAL, max_size=30).map(lambda path: "/" + path),
        st.text(alphabet=_NEAR_CANONICAL, max_size=30),
    ),
    st.one_of(
        st.just(""),
        st.lists(
            st.sampled_from(
                ["a=1", "q=x%20y", "utm_source=x", "gclid", "%67clid=1", "ref=z", "", "b='", "c=?"]
            ),
            max_size=4,
        ).map(lambda params: "?" + "&".join(params)),
        st.text(alphabet=_NEAR_CANONICAL, max_size=20).map(lambda query: "?" + query),
    ),
    st.one_of(st.just(""), st.text(alphabet=_NEAR_CANONICAL, max_size=12).map("#".__add__)),
)


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003")
@settings(max_examples=1500, deadline=None)
@given(st.one_of(_NEAR_CANONICAL_URLS, _ANY_URL))
def test_the_canonical_fast_path_agrees_with_the_full_reading(raw: str) -> None:
    """REQ-RANK-002, REQ-RANK-003: a URL the fast path takes gets the full reading's url and key."""
    fast = urls._already_canonical(raw)
    assert fast is None or fast == urls._read_url(raw)
    assert normalize_result_url(raw) == urls._read_url(raw)


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("https://en.wikipedia.org/wiki/Quantum_mechanics",
         "https://en.wikipedia.org/wiki/Quantum_mechanics"),
        ("https://www.wikidata.org/wiki/Q72", "https://www.wikidata.org/wiki/Q72"),
        ("https://docs.rs/reqwest/latest/reqwest/", "https://docs.rs/reqwest/latest/reqwest/"),
        ("https://www.python-httpx.org/?r=12", "https://www.python-httpx.org/?r=12"),
        ("https://curl.se", "https://curl.se/"),
        ("https://curl.se?x=1#top", "https://curl.se/?x=1"),
        ("https://a.example/p(1)?q=a+b&c=[d]#frag#2", "https://a.example/p(1)?q=a+b&c=[d]"),
        ("https://a.example/%7eA?q=%c3%a4", "https://a.example/~A?q=%C3%A4"),
        ("http://a.example.", "http://a.example./"),
    ],
)  # fmt: skip
def test_urls_as_engines_return_them_take_the_fast_path(raw: str, key: str) -> None:
    """REQ-RANK-002, REQ-RANK-003: the common form is answered by one match, with the same key."""
    assert urls._already_canonical(raw) == ResultUrl(url=raw, key=key) == urls._read_url(raw)


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize(
    "raw",
    [
        "HTTPS://a.example/", "https://A.example/", "https:/a.example/", "https://a.example:443/",
        "https://a.example\\p", "https://a.example/a\\b", "https://a.example/^",
        "https://a.ex ample/", "https://a.example/?q='", "https://a.example/#`",
        "https://a.example/ä", "https://xn--bcher-kva.example/",
        "https://1.2.3.4/", "https://a..example/", "https://a.example/?utm_source=x",
        "https://a.example/?%75tm_source=x", "https://u@a.example/", "https://[::1]/",
        "https://a.example/" + "p" * limits.URL_MAX_CHARS,
    ],
)  # fmt: skip
def test_urls_a_step_would_change_are_left_to_the_full_reading(raw: str) -> None:
    """REQ-RANK-003: the fast path declines every URL whose reading changes it or refuses it."""
    assert urls._already_canonical(raw) is None


# --- escapes already in normal form (performance §22.2) -------------------------------------

_HEX = "0123456789ABCDEFabcdef"
_ESCAPE_HEAVY = st.lists(
    st.one_of(
        st.builds(lambda a, b: f"%{a}{b}", st.sampled_from(_HEX), st.sampled_from(_HEX)),
        st.sampled_from(["%", "%%", "%4", "%C3%BC", "%E2%80%93", "%2F", "%7E", "%41", "a", "/"]),
        st.text(alphabet="%#?&=/aZ09-._~\u00e4", max_size=4),
    ),
    max_size=12,
).map("".join)


@pytest.mark.req("REQ-RANK-002")
@settings(max_examples=1500, deadline=None)
@given(_ESCAPE_HEAVY)
def test_escapes_in_normal_form_are_kept_without_a_replacement_pass(component: str) -> None:
    """REQ-RANK-002: the shortcut gives what the replacement of every escape gives."""
    assert urls._normalize_escapes(component) == urls._ESCAPE.sub(urls._normalize_escape, component)


@pytest.mark.req("REQ-RANK-002")
def test_the_kept_escapes_are_the_upper_case_escapes_of_reserved_characters() -> None:
    """REQ-RANK-002: each of the 256 escapes, in every case, is kept exactly when unchanged."""
    for code in range(256):
        for escape in {f"%{code:02X}", f"%{code:02x}", f"%{code:02X}"[:2] + f"{code:02x}"[1]}:
            kept = urls._escapes_kept(escape, len(escape))
            assert kept == (urls._normalize_escapes(escape) == escape), escape
            character = chr(code)
            unreserved = character.isascii() and (character.isalnum() or character in "-._~")
            assert kept == (escape.upper() == escape and not unreserved)
            assert kept == (escape == urls._ESCAPE.sub(urls._normalize_escape, escape))


@pytest.mark.req("REQ-RANK-002", "REQ-RANK-003")
@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("https://en.wikipedia.org/wiki/Z%C3%BCrich", "https://en.wikipedia.org/wiki/Z%C3%BCrich"),
        ("https://a.example/%E2%80%93?q=%2F#%7e", "https://a.example/%E2%80%93?q=%2F"),
        ("https://a.example/%e2%80%93", "https://a.example/%E2%80%93"),
        ("https://a.example/a?q=%7E", "https://a.example/a?q=~"),
        ("https://a.example?q=%41", "https://a.example/?q=A"),
        ("https://a.example/%4?%", "https://a.example/%4?%"),
    ],
)  # fmt: skip
def test_escaped_urls_take_the_fast_path_with_the_full_readings_key(raw: str, key: str) -> None:
    """REQ-RANK-002, REQ-RANK-003: escapes kept or normalized, the key is the full reading's."""
    assert urls._already_canonical(raw) == ResultUrl(url=raw, key=key) == urls._read_url(raw)


def _hosts_near_the_bounds() -> list[str]:
    """Hosts at and around 253 octets (254 with the root dot) and 63-octet labels."""
    hosts = []
    for label in (62, 63, 64):
        for length in (252, 253, 254, 255):
            labels, total = [], 0
            while total < length:
                labels.append("a" * label)
                total += label + 1
            name = ".".join(labels)[:length].rstrip(".")
            name = name[:-1] + "b" if name[-1] != "b" else name
            hosts += [name, name + ".", name + "..", "x" + name, "1" + name[1:]]
    return [*hosts, "a", "a.", "1", "a.1", "a-.b", "_a.b", "a..b", ".a", "a.b_c", "xn--a.b"]


@pytest.mark.req("REQ-RANK-003")
@pytest.mark.parametrize("host", _hosts_near_the_bounds())
def test_the_fast_path_reads_the_host_as_the_plain_name_check_does(host: str) -> None:
    """REQ-RANK-003: the one match accepts exactly the hosts `_is_plain_name` accepts."""
    raw = f"https://{host}/p"
    taken = urls._already_canonical(raw) is not None
    assert taken == urls._is_plain_name(host)
    if taken:
        assert urls._already_canonical(raw) == urls._read_url(raw)
