"""Media type check and charset decoding of a fetched body (REQ-PAGE-005, REQ-PAGE-007).

These are the two pipeline stages between the byte limit and the parser
(REQ-PAGE-001). They are pure functions of the response header and the bytes
already read; nothing here can fail on external input.

Media type (REQ-FETCH-008, REQ-PAGE-005). `media_type` takes the
`type/subtype` of the Content-Type header, lower-cased and syntactically
validated (RFC 9110 tokens of at most 127 characters each, RFC 6838), so that
it can be named in an unsupported_content error (REQ-SEC-001); anything else
is the empty string. `sniff_kind` maps it to the three kinds the extractor
knows: HTML and XHTML are "html", text/plain is "text", text/markdown is
"markdown"; every other type is None (unsupported_content). Sniffing happens
only when the header gives no usable type (missing, malformed, or one of the
"unknown" types of the WHATWG MIME Sniffing standard), and it only tells HTML
from text: a body that starts with an HTML tag is "html", a body with binary
bytes or a PDF signature is None, and anything else is "text". A declared
type is never overridden: text/plain stays text even when it holds markup,
as in a browser, and application/octet-stream stays unsupported.

Charset (REQ-PAGE-007), in the order a browser uses (WHATWG HTML, "encoding
sniffing"):

1. a byte order mark. It comes before the header, as in every browser: a
   BOM is a property of the bytes themselves, and a server that labels a
   UTF-8 file with a BOM as ISO-8859-1 is misconfigured, not the file;
2. the `charset` parameter of the Content-Type header;
3. `<meta charset>` or `<meta http-equiv="Content-Type" content="...;
   charset=...">` (or an XML declaration) in the first 2,048 bytes;
4. detection: strictly valid UTF-8 is UTF-8; a 7-bit body with ISO-2022-JP
   escapes is ISO-2022-JP; otherwise charset-normalizer guesses among the
   legacy encodings of the WHATWG Encoding standard, looking at the first
   64 KiB only (it costs up to ~35 ms there, and a second on 5 MB); a tie is
   broken towards the encoding most used on the web; when it finds nothing,
   windows-1252, the browsers' default for an unlabelled legacy page.

Only labels of the WHATWG Encoding standard are honoured, mapped to the
Python codec closest to what a browser decodes (Shift_JIS is Windows-31J,
EUC-KR is Windows-949, GBK is decoded as GB18030, ISO-8859-1 and US-ASCII
are windows-1252). Any other label, however it is spelled, is ignored and the
next step decides, exactly as a browser does. This matters for hostile
labels:

* UTF-7 is refused: no browser decodes it, because it lets a page carry
  markup that exists only after decoding (`+ADw-script+AD4-` is
  `<script>`), and a parser that honoured it would see a different document
  than every other tool; UTF-32 is likewise not a web encoding;
* the ISO-2022-KR/CN and HZ labels are the WHATWG "replacement" encoding,
  refused for the same reason; here they are ignored rather than turning the
  whole page into one U+FFFD;
* a Python-only codec name (`rot13`, `base64`, `zlib`, `undefined`,
  `unicode_escape`, ...) never reaches `bytes.decode`, so a label can neither
  raise nor run a transformation that is not a text encoding.

A meta declaration of UTF-16 means UTF-8 (the page was readable as ASCII to
find it), as in the standard.
Decoding replaces invalid sequences with U+FFFD and never raises; a body cut
inside its last UTF-8 sequence is still UTF-8.
"""

from __future__ import annotations

import codecs
import re
from typing import Final, Literal

Kind = Literal["html", "text", "markdown"]

UTF8: Final = "UTF-8"
WINDOWS_1252: Final = "windows-1252"

# WHATWG encoding name -> Python codec that decodes like a browser.
_CODECS: Final[dict[str, str]] = {
    UTF8: "utf-8",
    "IBM866": "cp866",
    "ISO-8859-2": "iso8859_2",
    "ISO-8859-3": "iso8859_3",
    "ISO-8859-4": "iso8859_4",
    "ISO-8859-5": "iso8859_5",
    "ISO-8859-6": "iso8859_6",
    "ISO-8859-7": "iso8859_7",
    "ISO-8859-8": "iso8859_8",
    "ISO-8859-8-I": "iso8859_8",
    "ISO-8859-10": "iso8859_10",
    "ISO-8859-13": "iso8859_13",
    "ISO-8859-14": "iso8859_14",
    "ISO-8859-15": "iso8859_15",
    "ISO-8859-16": "iso8859_16",
    "KOI8-R": "koi8_r",
    "KOI8-U": "koi8_u",
    "macintosh": "mac_roman",
    "windows-874": "cp874",
    "windows-1250": "cp1250",
    "windows-1251": "cp1251",
    WINDOWS_1252: "cp1252",
    "windows-1253": "cp1253",
    "windows-1254": "cp1254",
    "windows-1255": "cp1255",
    "windows-1256": "cp1256",
    "windows-1257": "cp1257",
    "windows-1258": "cp1258",
    "x-mac-cyrillic": "mac_cyrillic",
    "GBK": "gb18030",
    "gb18030": "gb18030",
    "Big5": "big5hkscs",
    "EUC-JP": "euc_jp",
    "ISO-2022-JP": "iso2022_jp",
    "Shift_JIS": "cp932",
    "EUC-KR": "cp949",
    "UTF-16BE": "utf-16-be",
    "UTF-16LE": "utf-16-le",
}


def _labels() -> dict[str, str]:
    """Label (lower case) -> WHATWG name; the labels of the Encoding standard."""
    table: dict[str, str] = {name.lower(): name for name in _CODECS}
    groups: dict[str, tuple[str, ...]] = {
        UTF8: ("unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf8", "x-unicode20utf8"),
        "IBM866": ("866", "cp866", "csibm866"),
        "ISO-8859-2": ("csisolatin2", "iso-ir-101", "l2", "latin2"),
        "ISO-8859-3": ("csisolatin3", "iso-ir-109", "l3", "latin3"),
        "ISO-8859-4": ("csisolatin4", "iso-ir-110", "l4", "latin4"),
        "ISO-8859-5": ("csisolatincyrillic", "cyrillic", "iso-ir-144"),
        "ISO-8859-6": ("arabic", "asmo-708", "csiso88596e", "csiso88596i", "csisolatinarabic"),
        "ISO-8859-7": (
            "csisolatingreek",
            "ecma-118",
            "elot_928",
            "greek",
            "greek8",
            "sun_eu_greek",
        ),
        "ISO-8859-8": ("csiso88598e", "csisolatinhebrew", "hebrew", "iso-ir-138", "visual"),
        "ISO-8859-8-I": ("csiso88598i", "logical"),
        "ISO-8859-10": ("csisolatin6", "iso-ir-157", "l6", "latin6"),
        "ISO-8859-14": ("iso-ir-199", "l8", "latin8"),
        "ISO-8859-15": ("csisolatin9", "l9", "latin-9"),
        "ISO-8859-16": ("iso-ir-226", "l10", "latin10"),
        "KOI8-R": ("cskoi8r", "koi", "koi8", "koi8_r"),
        "KOI8-U": ("koi8-ru",),
        "macintosh": ("csmacintosh", "mac", "x-mac-roman"),
        "windows-874": ("dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620"),
        WINDOWS_1252: (
            *("ansi_x3.4-1968", "ascii", "cp819", "csisolatin1", "ibm819", "iso-8859-1"),
            *("iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1"),
            *("latin1", "us-ascii", "x-cp1252"),
        ),
        "windows-1254": (
            *("csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9", "iso88599"),
            *("iso_8859-9", "iso_8859-9:1989", "l5", "latin5"),
        ),
        "x-mac-cyrillic": ("x-mac-ukrainian",),
        "GBK": (
            *("chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80"),
            *("iso-ir-58", "x-gbk"),
        ),
        "Big5": ("big5-hkscs", "cn-big5", "csbig5", "x-x-big5"),
        "EUC-JP": ("cseucpkdfmtjapanese", "x-euc-jp"),
        "ISO-2022-JP": ("csiso2022jp",),
        "Shift_JIS": (
            "csshiftjis",
            "ms932",
            "ms_kanji",
            "shift-jis",
            "sjis",
            "windows-31j",
            "x-sjis",
        ),
        "EUC-KR": (
            *("cseuckr", "csksc56011987", "iso-ir-149", "korean", "ks_c_5601-1987"),
            *("ks_c_5601-1989", "ksc5601", "ksc_5601", "windows-949"),
        ),
        "UTF-16BE": ("unicodefffe",),
        "UTF-16LE": (
            *("csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16"),
        ),
    }
    for name, labels in groups.items():
        table.update(dict.fromkeys(labels, name))
    # ISO-8859-n and windows-125n have the same four spellings each.
    for number in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15):
        name = f"ISO-8859-{number}"
        for spelling in (f"iso8859-{number}", f"iso8859{number}", f"iso_8859-{number}"):
            table[spelling] = name
    for number in range(1250, 1259):
        table[f"cp{number}"] = table[f"x-cp{number}"] = (
            WINDOWS_1252 if number == 1252 else f"windows-{number}"
        )
    return table


_LABELS: Final = _labels()

# Detection candidates (Python codec names), most used on the web first: a tie
# between two decodings goes to the earlier one. UTF-16 is never detected
# without a BOM, as in browsers; ISO-2022-JP is found by its escapes.
_DETECTABLE: Final = (
    *("cp1252", "cp1251", "cp932", "gb18030", "euc_jp", "cp949", "big5hkscs", "cp1250"),
    *("cp1256", "cp1254", "cp1253", "cp1255", "cp874", "cp1257", "cp1258", "iso8859_2"),
    *("iso8859_5", "iso8859_7", "iso8859_15", "koi8_r", "koi8_u", "cp866", "mac_roman"),
)
# Python codec -> WHATWG name; the later name wins (gb18030 over GBK).
_NAME_OF_CODEC: Final = {codecs.lookup(codec).name: name for name, codec in _CODECS.items()}
_DETECTION_SAMPLE: Final = 64 * 1024
_PRESCAN_BYTES: Final = 2_048

_BOMS: Final = (
    (codecs.BOM_UTF8, UTF8),
    (codecs.BOM_UTF16_BE, "UTF-16BE"),
    (codecs.BOM_UTF16_LE, "UTF-16LE"),
)

# Content-Type parameters: `; charset=value` or `; charset="value"`.
_CHARSET_PARAM: Final = re.compile(r";\s*charset\s*=\s*\"?\s*([^\s\";,]+)", re.IGNORECASE)
_HEADER_SCAN_CHARS: Final = 1_024
_COMMENT: Final = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_META_CHARSET: Final = re.compile(
    rb"<meta\b[^>]*?\bcharset\s*=\s*[\"']?\s*([^\s\"'/>;]+)", re.IGNORECASE
)
_XML_DECLARATION: Final = re.compile(rb"<\?xml\b[^>]*?\bencoding\s*=\s*[\"']([^\"']+)[\"']")
_ISO_2022_JP_ESCAPES: Final = (b"\x1b$B", b"\x1b$@", b"\x1b(J")

# RFC 9110 token characters; RFC 6838 caps each name at 127 characters.
_MEDIA_TYPE: Final = re.compile(r"[A-Za-z0-9!#$&^_.+-]{1,127}/[A-Za-z0-9!#$&^_.+-]{1,127}")
_HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
_MARKDOWN_TYPES: Final = frozenset({"text/markdown", "text/x-markdown"})
_UNKNOWN_TYPES: Final = frozenset({"", "unknown/unknown", "application/unknown", "*/*"})

# WHATWG MIME sniffing: the HTML signatures and the binary data bytes.
_SNIFF_BYTES: Final = 1_445
_HTML_SIGNATURE: Final = re.compile(
    rb"<(?:!doctype html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body"
    rb"|br|p)[ \t\n\x0c\r>]|<!--",
    re.IGNORECASE,
)
_BINARY_BYTE: Final = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_BINARY_SIGNATURES: Final = (
    b"%PDF-",
    b"PK\x03\x04",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"\x1f\x8b",
)


def media_type(content_type: str | None) -> str:
    """The `type/subtype` of a Content-Type header, lower case; "" when absent or invalid."""
    if not content_type:
        return ""
    essence = content_type[:_HEADER_SCAN_CHARS].split(";", 1)[0].strip()
    if _MEDIA_TYPE.fullmatch(essence) is None:
        return ""
    return essence.lower()


def sniff_kind(media_type: str, body: bytes) -> Kind | None:
    """The extractor kind for an eligible type (REQ-FETCH-008), else None.

    The header decides; sniffing only runs for an unknown type and only tells
    HTML from text (REQ-PAGE-005).
    """
    if media_type in _HTML_TYPES:
        return "html"
    if media_type == "text/plain":
        return "text"
    if media_type in _MARKDOWN_TYPES:
        return "markdown"
    if media_type in _UNKNOWN_TYPES:
        return _sniff(body)
    return None


def _sniff(body: bytes) -> Kind | None:
    head = body[:_SNIFF_BYTES]
    unicode_bom = head.startswith((codecs.BOM_UTF16_BE, codecs.BOM_UTF16_LE))
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    if head.startswith(_BINARY_SIGNATURES):
        return None
    if unicode_bom:
        return "text"  # UTF-16 text; its HTML would be named by the header
    if _HTML_SIGNATURE.match(head.lstrip(b" \t\n\x0c\r")):
        return "html"
    if _BINARY_BYTE.search(head):
        return None
    return "text"


def decode_body(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode a fetched body; return the text and the WHATWG name of the charset used."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return _decode(body[len(bom) :], name), name
    name = _header_charset(content_type) or _declared_in_document(body) or _detect(body)
    return _decode(body, name), name


def _decode(body: bytes, name: str) -> str:
    try:
        return body.decode(_CODECS[name], errors="replace")
    except (LookupError, UnicodeError, ValueError):  # pragma: no cover - replace never raises
        return body.decode("cp1252", errors="replace")


def encoding_name(label: str) -> str | None:
    """The WHATWG encoding of a charset label, or None for an unknown or refused label."""
    return _LABELS.get(label.strip().lower())


def _header_charset(content_type: str | None) -> str | None:
    if not content_type:
        return None
    match = _CHARSET_PARAM.search(content_type[:_HEADER_SCAN_CHARS])
    return encoding_name(match.group(1)) if match else None


def _declared_in_document(body: bytes) -> str | None:
    """The charset of an XML declaration or a meta element in the first 2 KB."""
    prefix = body[:_PRESCAN_BYTES]
    declaration = _XML_DECLARATION.match(prefix)
    if declaration:
        name = encoding_name(declaration.group(1).decode("latin-1"))
        if name is not None:
            return name
    # Latin-1 keeps byte offsets and cannot fail; a commented-out meta does not count.
    visible = _COMMENT.sub("", prefix.decode("latin-1")).encode("latin-1")
    for match in _META_CHARSET.finditer(visible):
        name = encoding_name(match.group(1).decode("latin-1"))
        if name is not None:
            return _meta_override(name)
    return None


def _meta_override(name: str) -> str:
    # A page whose meta could be read as ASCII is not UTF-16 (WHATWG HTML).
    if name.startswith("UTF-16"):
        return UTF8
    return name


def _detect(body: bytes) -> str:
    """Detection for an undeclared charset: ISO-2022-JP, UTF-8, else a legacy guess."""
    if body.isascii() and any(escape in body for escape in _ISO_2022_JP_ESCAPES):
        return "ISO-2022-JP"  # 7-bit, so it would pass for UTF-8 below
    if _is_utf8(body):
        return UTF8
    # Imported on first use: most pages declare their charset, and the import
    # alone costs ~16 ms of start-up.
    from charset_normalizer import from_bytes  # noqa: PLC0415

    matches = from_bytes(body[:_DETECTION_SAMPLE], cp_isolation=list(_DETECTABLE))
    best = matches.best()
    if best is None:
        return WINDOWS_1252
    # Codecs that give the same text, or score the same, are equivalent: take the
    # most common one (French text scores alike as windows-1250 and windows-1252).
    equivalent = {
        codecs.lookup(codec).name
        for match in matches
        if (match.chaos, match.coherence) == (best.chaos, best.coherence)
        for codec in (match.encoding, *match.could_be_from_charset)
    }
    for codec in _DETECTABLE:
        if codecs.lookup(codec).name in equivalent:
            return _NAME_OF_CODEC[codecs.lookup(codec).name]
    return WINDOWS_1252


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        # A body cut inside its last character is still UTF-8.
        return error.reason == "unexpected end of data" and error.start >= len(body) - 3
    return True
