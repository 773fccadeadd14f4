"""Media type check and charset decoding of fetched bodies (REQ-PAGE-005, REQ-PAGE-007)."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rypsok.core.fetch.decode import decode_body, encoding_name, media_type, sniff_kind

JAPANESE = (
    "日本語のテキストです。これは文字コードの検出を確かめるための文章であり、句読点も含みます。"
)
RUSSIAN = "Привет, это длинный текст на русском языке о погоде, политике и экономике. "
ARABIC = "مرحبا بكم في موقعنا الإخباري، هذه مقالة طويلة عن الاقتصاد والسياسة والطقس. "
FRENCH = "Café déjà vu, naïve façade — voilà un résumé des œuvres complètes. "


def _page(text: str, head: str = "") -> str:
    return (
        f"<!DOCTYPE html><html><head>{head}<title>t</title></head><body><p>{text}</p></body></html>"
    )


# -- declared charsets -----------------------------------------------------------------------


@pytest.mark.req("REQ-PAGE-007")
def test_header_charset_is_honoured() -> None:
    """REQ-PAGE-007: the charset parameter of Content-Type decides when there is no BOM."""
    body = FRENCH.encode("cp1252")
    text, charset = decode_body(body, 'text/html; charset="ISO-8859-1"')
    assert (text, charset) == (FRENCH, "windows-1252")


@pytest.mark.req("REQ-PAGE-007")
def test_header_charset_wins_over_the_meta_declaration() -> None:
    """REQ-PAGE-007: the transport-level declaration comes before the document's own."""
    body = _page(RUSSIAN, '<meta charset="windows-1252">').encode("koi8-r")
    text, charset = decode_body(body, "text/html; charset=KOI8-R")
    assert charset == "KOI8-R"
    assert RUSSIAN in text


@pytest.mark.req("REQ-PAGE-007")
@pytest.mark.parametrize(
    ("bom", "codec", "name"),
    [
        (codecs.BOM_UTF8, "utf-8", "UTF-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16LE"),
        (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16BE"),
    ],
)
def test_byte_order_mark_decides_before_the_header(bom: bytes, codec: str, name: str) -> None:
    """REQ-PAGE-007: a BOM is the strongest declaration, as in browsers; it is not kept."""
    text, charset = decode_body(bom + FRENCH.encode(codec), "text/html; charset=iso-8859-1")
    assert (text, charset) == (FRENCH, name)


@pytest.mark.req("REQ-PAGE-007")
@pytest.mark.parametrize(
    "meta",
    [
        '<meta charset="Shift_JIS">',
        "<meta charset=shift_jis>",
        '<META HTTP-EQUIV="Content-Type" CONTENT="text/html; charset=Shift_JIS">',
        "<meta http-equiv='content-type' content='text/html;charset=x-sjis'>",
    ],
)
def test_meta_declaration_in_the_first_two_kilobytes(meta: str) -> None:
    """REQ-PAGE-007: `<meta charset>` and the http-equiv form are read when the header has none."""
    text, charset = decode_body(_page(JAPANESE, meta).encode("shift_jis"), "text/html")
    assert charset == "Shift_JIS"
    assert JAPANESE in text


@pytest.mark.req("REQ-PAGE-007")
def test_xml_declaration_names_the_charset_of_xhtml() -> None:
    """REQ-PAGE-007: an XML declaration's encoding is a declaration too."""
    body = ('<?xml version="1.0" encoding="windows-1251"?>' + _page(RUSSIAN)).encode("cp1251")
    assert decode_body(body, "application/xhtml+xml") == (
        '<?xml version="1.0" encoding="windows-1251"?>' + _page(RUSSIAN),
        "windows-1251",
    )


@pytest.mark.req("REQ-PAGE-007")
def test_meta_after_two_kilobytes_or_in_a_comment_is_not_a_declaration() -> None:
    """REQ-PAGE-007: only the prescan window counts, and a commented-out meta does not."""
    late = ("<!-- " + "x" * 2100 + " -->" + '<meta charset="koi8-r">' + RUSSIAN).encode("cp1251")
    assert decode_body(late, None)[1] == "windows-1251"  # detected, not the late label
    commented = ('<!-- <meta charset="koi8-r"> -->' + RUSSIAN).encode("cp1251")
    assert decode_body(commented, None)[1] == "windows-1251"


@pytest.mark.req("REQ-PAGE-007")
def test_meta_declaring_utf16_means_utf8() -> None:
    """REQ-PAGE-007: a page readable as ASCII to find its meta is not UTF-16 (WHATWG)."""
    body = _page("Grüße", '<meta charset="utf-16">').encode("utf-8")
    assert decode_body(body, "text/html") == (_page("Grüße", '<meta charset="utf-16">'), "UTF-8")


# -- detection for undeclared legacy encodings ------------------------------------------------


@pytest.mark.req("REQ-PAGE-007")
@pytest.mark.parametrize(
    ("text", "codec", "name"),
    [
        (JAPANESE, "shift_jis", "Shift_JIS"),
        (JAPANESE, "euc_jp", "EUC-JP"),
        (RUSSIAN, "cp1251", "windows-1251"),
        (ARABIC, "cp1256", "windows-1256"),
        (FRENCH, "cp1252", "windows-1252"),
        ("Über die Brücke gehen wir schön und fröhlich mit Käse. " * 3, "cp1252", "windows-1252"),
    ],
)
def test_undeclared_legacy_encoding_is_detected(text: str, codec: str, name: str) -> None:
    """REQ-PAGE-007: without a declaration a legacy encoding is detected; ties go to the common."""
    decoded, charset = decode_body(_page(text * 3).encode(codec), "text/html")
    assert charset == name
    assert text in decoded


@pytest.mark.req("REQ-PAGE-007")
def test_undeclared_utf8_and_iso_2022_jp() -> None:
    """REQ-PAGE-007: valid UTF-8 is UTF-8; 7-bit ISO-2022-JP is recognised by its escapes."""
    assert decode_body(_page(JAPANESE).encode("utf-8"), None) == (_page(JAPANESE), "UTF-8")
    body = _page(JAPANESE).encode("iso2022_jp")
    assert decode_body(body, "text/html") == (_page(JAPANESE), "ISO-2022-JP")


@pytest.mark.req("REQ-PAGE-007")
def test_decoding_errors_are_replaced_never_fatal() -> None:
    """REQ-PAGE-007: invalid sequences become U+FFFD; a cut last character stays UTF-8."""
    text, charset = decode_body(b"ok \xff\xfe\xc3 done", "text/plain; charset=utf-8")
    assert charset == "UTF-8"
    assert text.startswith("ok ") and text.endswith(" done") and "\ufffd" in text
    cut = "café".encode()[:-1]
    assert decode_body(cut, None) == ("caf\ufffd", "UTF-8")
    assert decode_body(b"", None) == ("", "UTF-8")


# -- hostile labels ---------------------------------------------------------------------------


@pytest.mark.req("REQ-PAGE-007", "REQ-SEC-014")
@pytest.mark.parametrize(
    "label",
    [
        "utf-7",
        "UTF-7",
        "csUnicode11UTF7",
        "utf-32",
        "iso-2022-kr",
        "hz-gb-2312",
        "rot13",
        "rot_13",
        "base64",
        "zlib",
        "hex",
        "undefined",
        "unicode_escape",
        "raw_unicode_escape",
        "punycode",
        "idna",
        "x-user-defined",
        "",
        "\x00",
        "utf-8\x00evil",
        "x" * 100_000,
    ],
)
def test_hostile_charset_labels_are_ignored(label: str) -> None:
    """REQ-PAGE-007, REQ-SEC-014: labels outside the WHATWG table never reach a codec.

    UTF-7 would let `+ADw-script+AD4-` become `<script>` after decoding, which no
    browser does; the body is decoded as if unlabelled instead.
    """
    body = b"<p>+ADw-script+AD4-alert(1)+ADw-/script+AD4- caf\xc3\xa9</p>"
    for content_type in (f"text/html; charset={label}", "text/html"):
        meta = f'<meta charset="{label}">'.encode("utf-8", "surrogateescape")
        text, charset = decode_body(meta + body, content_type)
        assert charset == "UTF-8"
        assert "<script>" not in text
        assert "+ADw-script+AD4-" in text and "café" in text
    assert encoding_name(label) is None


@pytest.mark.req("REQ-PAGE-007")
def test_whatwg_labels_map_to_browser_decoders() -> None:
    """REQ-PAGE-007: labels are case-insensitive and mapped as browsers map them."""
    assert encoding_name(" LATIN1 ") == "windows-1252"
    assert encoding_name("us-ascii") == "windows-1252"
    assert encoding_name("sjis") == "Shift_JIS"
    assert encoding_name("gb2312") == "GBK"
    assert encoding_name("ks_c_5601-1987") == "EUC-KR"
    assert encoding_name("iso-8859-9") == "windows-1254"
    # Windows-31J and Windows-949 decode the vendor extensions browsers accept.
    assert decode_body("①".encode("cp932"), "text/html; charset=shift_jis")[0] == "①"
    assert decode_body("똠".encode("cp949"), "text/html; charset=euc-kr")[0] == "똠"


# -- media types and sniffing -----------------------------------------------------------------


@pytest.mark.req("REQ-PAGE-005")
@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/html", "text/html"),
        ("TEXT/HTML; charset=utf-8", "text/html"),
        ("  application/xhtml+xml ;q=1", "application/xhtml+xml"),
        ("text/plain;charset=utf-8", "text/plain"),
        ("application/pdf", "application/pdf"),
        (None, ""),
        ("", ""),
        ("html", ""),
        ("text/html/extra", ""),
        ("text /html", ""),
        ("text/ht<ml>", ""),
        ("x" * 128 + "/html", ""),
        ("text/\u00e9", ""),
    ],
)
def test_media_type_is_the_validated_essence(content_type: str | None, expected: str) -> None:
    """REQ-PAGE-005: `type/subtype`, lower case, RFC token syntax, bounded; else empty."""
    assert media_type(content_type) == expected


@pytest.mark.req("REQ-FETCH-008", "REQ-PAGE-005")
@pytest.mark.parametrize(
    ("kind_of_type", "expected"),
    [
        ("text/html", "html"),
        ("application/xhtml+xml", "html"),
        ("text/plain", "text"),
        ("text/markdown", "markdown"),
        ("text/x-markdown", "markdown"),
        ("application/pdf", None),
        ("application/octet-stream", None),
        ("application/json", None),
        ("text/xml", None),
        ("text/csv", None),
        ("image/svg+xml", None),
        ("text/javascript", None),
    ],
)
def test_only_html_xhtml_text_and_markdown_are_eligible(
    kind_of_type: str, expected: str | None
) -> None:
    """REQ-FETCH-008, REQ-PAGE-005: the header's type decides; any other type is refused."""
    assert sniff_kind(kind_of_type, b"<!DOCTYPE html><p>markup</p>") == expected


@pytest.mark.req("REQ-PAGE-005")
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<!DOCTYPE html><html><p>x", "html"),
        (b"\xef\xbb\xbf  \n<HTML lang=en>", "html"),
        (b"<!-- generated --><div>x</div>", "html"),
        (b"<p>x</p>", "html"),
        (b"Plain words, <b>not</b> at the start.", "text"),
        (b"# A heading\n\nSome *markdown*.", "text"),
        ("Grüße aus Köln".encode(), "text"),
        (codecs.BOM_UTF16_LE + "text".encode("utf-16-le"), "text"),
        (b"%PDF-1.7\n1 0 obj", None),
        (b"\x89PNG\r\n\x1a\n....", None),
        (b"PK\x03\x04zipdata", None),
        (b"text then \x00\x01 binary", None),
        (b"", "text"),
    ],
)
def test_sniffing_only_tells_html_from_text(body: bytes, expected: str | None) -> None:
    """REQ-PAGE-005: with no usable type, sniffing yields html, text, or refusal of binary."""
    for unknown in ("", "unknown/unknown", "application/unknown", "*/*"):
        assert sniff_kind(unknown, body) == expected


@pytest.mark.req("REQ-PAGE-005")
def test_declared_type_is_never_upgraded_by_sniffing() -> None:
    """REQ-PAGE-005: text/plain holding markup stays text; octet-stream stays refused."""
    assert sniff_kind("text/plain", b"<!DOCTYPE html><script>x</script>") == "text"
    assert sniff_kind("application/octet-stream", b"<!DOCTYPE html><p>x</p>") is None


# -- properties -------------------------------------------------------------------------------

_CHARSETS = {
    "UTF-8", "UTF-16LE", "UTF-16BE", "windows-1252", "Shift_JIS", "EUC-JP", "ISO-2022-JP",
    "gb18030", "GBK", "Big5", "EUC-KR", "KOI8-R", "KOI8-U", "IBM866", "macintosh",
    "x-mac-cyrillic", "windows-874", "ISO-8859-8-I",
    *(f"windows-{n}" for n in range(1250, 1259)),
    *(f"ISO-8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)),
}  # fmt: skip


@pytest.mark.req("REQ-PAGE-007", "REQ-TEST-013", "REQ-SEC-014")
@settings(max_examples=150, deadline=None, database=None)
@given(
    body=st.binary(max_size=600),
    content_type=st.one_of(st.none(), st.text(max_size=60), st.just("text/html; charset=")),
    meta=st.sampled_from(["", "<meta charset='utf-7'>", "<meta charset=koi8-r>", "<meta charset"]),
)
def test_decoding_never_fails(body: bytes, content_type: str | None, meta: str) -> None:
    """REQ-PAGE-007, REQ-TEST-013: any bytes and any header decode to text with a known charset."""
    text, charset = decode_body(meta.encode() + body, content_type)
    assert isinstance(text, str)
    assert charset in _CHARSETS
    kind = sniff_kind(media_type(content_type), body)
    assert kind in (None, "html", "text", "markdown")
