"""Answers of the bench engines: a simple JSON format, deterministic, overlapping URLs.

Format (what `bench.drivers.BenchDriver.parse` reads):

    {"results": [{"url": ..., "title": ..., "snippet": ..., "date": "YYYY-MM-DD"}, ...]}

Engine `i` answers 10 to 20 results drawn from a shared pool of URLs, so the
engines overlap the way real ones do and fusion has duplicates to merge.
Snippets carry a little markup, as provider snippets do (search-match spans),
so the boundary's cleaning does real work. No rypsok import: the fake server
process stays light.
"""

from __future__ import annotations

import json

URL_POOL = 48
_WORDS = (
    "quantum", "entanglement", "measurement", "protocol", "network", "latency",
    "distributed", "consensus", "algorithm", "retrieval", "ranking", "fusion", "engine",
    "index", "crawler", "python", "asyncio", "event", "loop", "socket", "buffer", "parser",
    "schema",
)  # fmt: skip


def result_count(index: int) -> int:
    """10 to 20 results, varying by engine."""
    return 10 + (index * 7) % 11


def _text(seed: int, words: int) -> str:
    return " ".join(_WORDS[(seed * 31 + k * 17) % len(_WORDS)] for k in range(words))


def bench_body(index: int, *, count: int | None = None, snippet_words: int = 28) -> bytes:
    """The answer of bench engine `index` (same for every query)."""
    results = []
    for position in range(count if count is not None else result_count(index)):
        k = (index * 5 + position * 3) % URL_POOL
        snippet = _text(k + position, snippet_words)
        half = len(snippet) // 2
        results.append(
            {
                "url": f"https://site{k % 9}.example.org/articles/{k}?ref=bench",
                "title": f"Article {k}: {_text(k, 6)}",
                "snippet": f'{snippet[:half]}<span class="searchmatch">match</span>'
                f"{snippet[half:]}",
                "date": f"2024-{1 + k % 12:02d}-{1 + k % 28:02d}",
            }
        )
    return json.dumps({"results": results}, separators=(",", ":")).encode()
