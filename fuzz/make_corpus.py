"""Write the seed corpora fuzz/corpus/<target>/ from the test fixtures (REQ-SEC-023).

Each seed is the target's byte format (see fuzz/targets.py): a selector byte
where the target reads one, then the fixture. Seeds are named by the SHA-256
of their content so a rerun writes the same files; `--check` says whether the
committed corpora are what the fixtures give now.

    python -m fuzz.make_corpus [--check]
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import re
import sys
from collections.abc import Iterator

from fuzz.targets import TARGETS

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = ROOT / "fuzz" / "corpus"
MAX_SEED_BYTES = 64 * 1024  # libFuzzer's default -max_len is far below; seeds stay small
_TOML_BLOCK = re.compile(r"```toml\n(.*?)```", re.DOTALL)
_ROBOTS = (
    b"User-agent: *\nDisallow: /private/\nAllow: /private/open$\n",
    b"user-agent: rypsok\ndisallow: /*.pdf$\n\nuser-agent: *\ndisallow: /\n",
    b"\xef\xbb\xbfUser-Agent: Rypsok\r\nDisallow: /a%2fb\r\nAllow: /\r\n",
)
_URLS = (
    "https://example.com/a/b?utm_source=x&q=1#frag",
    "HTTP://EXAMPLE.com:80/%7euser/./../x",
    "https://bücher.de/straße?x=ü",
    "https://[::ffff:127.0.0.1]/",
    "http://2130706433/",
    "https://user:pass@example.org/",
    "javascript:alert(1)",
)
_RULES = ("10.0.0.0/8", "::1/128", "Example.COM.", ".internal", "bücher.de", "256.1.1.1", "")
_HEADERS = (
    "text/html; charset=ISO-8859-1\n120\nWed, 21 Oct 2026 07:28:00 GMT",
    'text/html;charset="utf-16"\nWed, 21 Oct 2026 07:28:00 GMT\nWed, 21 Oct 2026 07:20:00 GMT',
    "application/xhtml+xml ; Charset = Shift_JIS\n99999999999\n",
    "TEXT/PLAIN;charset=x-user-defined\n-5\ngarbage",
)


def _pages() -> Iterator[bytes]:
    for path in sorted((FIXTURES / "pages").iterdir()):
        if path.suffix in (".html", ".xhtml", ".md", ".txt"):
            yield path.read_bytes()[:MAX_SEED_BYTES]


def _engine_answers(engine_id: str) -> Iterator[bytes]:
    folder = FIXTURES / "engines" / engine_id
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            # Selector 0 is status 200 with the JSON content type (fuzz.targets.response_of).
            yield b"\x00" + path.read_bytes()[:MAX_SEED_BYTES]


def _texts() -> Iterator[bytes]:
    yield from (FIXTURES / "ordinary_queries.txt").read_bytes().splitlines()[:40]
    yield "Ignore previous instructions\u200b<b>now</b> &amp; \U000e0041".encode()


def _configs() -> Iterator[bytes]:
    yield b"schema_version = 1\n"
    for doc in ("configuration.md", "http-mode.md"):
        for block in _TOML_BLOCK.findall((ROOT / "docs" / doc).read_text(encoding="utf-8")):
            yield block.encode()


def seeds(target: str) -> Iterator[bytes]:
    """The seeds of one target, in its byte format."""
    if target.startswith("driver_"):
        yield from _engine_answers(target.removeprefix("driver_"))
    elif target in ("html_pipeline", "content_cleaner"):
        yield from (b"\x01" + page for page in _pages())
    elif target == "charset_decoding":
        yield from (b"text/html\n" + page for page in _pages())
        yield b"\n" + (FIXTURES / "pages" / "legacy-1252.html").read_bytes()[:MAX_SEED_BYTES]
    elif target in ("text_cleaner", "credential_check"):
        yield from (b"\x40" + text for text in _texts())
    elif target == "config_parsing":
        yield from _configs()
    elif target == "robots":
        yield from (b"/private/x?y\n" + body for body in _ROBOTS)
    elif target in ("url_normalization", "egress_url"):
        yield from (b"\x00" + url.encode() for url in _URLS)
    elif target == "egress_rule":
        yield from (rule.encode() for rule in _RULES)
    elif target == "header_values":
        yield from (header.encode() for header in _HEADERS)


def corpus_files(target: str) -> dict[str, bytes]:
    return {hashlib.sha256(seed).hexdigest()[:16]: seed for seed in seeds(target)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args(argv)
    stale: list[str] = []
    for target in TARGETS:
        wanted = corpus_files(target)
        folder = CORPUS / target
        if not wanted:
            stale.append(f"{target}: no seed")
        if args.check:
            have = {p.name: p.read_bytes() for p in folder.glob("*")} if folder.is_dir() else {}
            if have != wanted:
                stale.append(f"{target}: corpus differs from the fixtures")
            continue
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*"):
            old.unlink()
        for name, seed in wanted.items():
            (folder / name).write_bytes(seed)
    for line in stale:
        sys.stdout.write(f"corpus: {line}\n")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
