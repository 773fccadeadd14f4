"""REQ-PERF-003 and the fetch figures: extraction throughput, large pages, memory.

Parts, each printed as a table (docs/performance.md, "Fetch and memory"):

* corpus: extraction throughput (pages/s, MB/s) on tests/fixtures/pages, read
  as data: `decode_body` then `extract_html`/`extract_text`, and the same plus
  the instruction check the pipeline runs on the result. In process.
* web_fetch: a full `web_fetch` (max_chars 100,000) of a realistic 1 MB page
  and a realistic page just under LIM-F3 from the fake server (robots.txt
  answers 404: allow all): wall and CPU time (the process, all threads),
  outcome, p50 over the runs, in a fresh child whose first call (a small
  page) has read robots.txt and opened the connection.
* memory: peak RSS (the `ru_maxrss` high-water mark, reset per batch through
  /proc/self/clear_refs) of a fresh child per scenario, each started as
  `rypsok serve` starts (its imports, the configuration, `Services`, the MCP
  server) and warmed by one small fetch, whose RSS is the fixed base:
  - LIM-C3 = 8 concurrent fetches of a realistic page just under LIM-F3 with
    one astral character, so that its decoded `str` takes 4 bytes per
    character (the worst case of CPython's string layout);
  - 3 × LIM-C3 concurrent fetches of a script-heavy page just under LIM-F3
    (cheap to extract). The fake server's record of when each body was sent and the
    child's record of when each call ended give the most bodies held at once;
  - one hostile page: a start tag with 30,000 attributes.
  All fetches come from one host, 127.0.0.1, so LIM-C4 is raised to its
  operator maximum of 8 to let 8 fetches run at once, as 8 hosts would. Each
  child also records the longest stall of its event loop (a task that sleeps
  5 ms in a loop).
* documents: the extraction step alone, as `FetchPipeline._extract_sync` runs
  it (`decode_body`, `extract_html`, `looks_like_instruction` on the result),
  on the largest documents the default bounds admit, a fresh child each: wall
  and CPU time (the LIM-F5 verdict) and the working set (peak RSS above the
  body, malloc trimmed before); then the bounded parse alone, whose tree
  gives the parse cost per element and per attribute.
* the parse time of one start tag with n attributes (in process).

Last, the REQ-PERF-003 ceiling derived from the limits table and the measured
per-document working set, against the measured peaks. Nothing here asserts a
figure. Run `python -m bench fetch`.

Every child runs under the allocator settings `rypsok serve` runs under
(`rypsok.entry.ALLOCATOR`, whatever MALLOC_ variables this process has), and
the memory scenarios run once more under glibc's defaults for comparison; the
ceiling is checked against the shipped ones.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import anyio

from bench.common import emit, median, percentile, production_logging, table
from bench.extraction import CORPUS
from bench.fakeserver import REPO, FakeServer
from rypsok.core import limits
from rypsok.core.boundary.instructions import looks_like_instruction
from rypsok.core.fetch import extract, parse
from rypsok.core.fetch.decode import decode_body, media_type, sniff_kind
from rypsok.entry import ALLOCATOR
from rypsok.mcp.heap import serving_heap

MIB = 1024 * 1024
PAGE_BYTES = limits.FETCH_MAX_BYTES - 1024  # just under LIM-F3
ONE_MB = 1_000_000
NODES = limits.PARSED_NODES  # LIM-F10
DEPTH = limits.NESTING_DEPTH  # LIM-F11
IN_FLIGHT = limits.FETCHES_IN_FLIGHT  # LIM-C3
PARSE_TASKS = limits.PARSE_TASKS  # LIM-C5 (CPUs)
CEILING_S = limits.FETCH_CEILING_MS / 1000  # LIM-F5
MAX_CHARS = 100_000
PILE_UP = 3 * IN_FLIGHT
HOSTILE_ATTRIBUTES = 30_000
HTML = "text/html; charset=utf-8"
PAGE_URL = "https://bench.example/articles/long-read"


# -- pages ------------------------------------------------------------------------------------

_VOCAB = (
    "harbour", "council", "tunnel", "freight", "traffic", "residents", "evidence", "study",
    "district", "century", "railway", "engineers", "budget", "report", "committee", "market",
    "river", "bridge", "quarter", "museum", "archive", "survey", "planning", "water", "energy",
    "school", "network", "station", "policy", "history", "climate", "region", "village",
    "project", "design", "public", "private", "national", "local", "early", "later", "major",
    "minor", "first", "second", "several", "many", "most", "other", "new", "old", "long",
    "short", "the", "the", "the", "of", "of", "and", "and", "a", "in", "in", "to", "to", "was",
    "were", "is", "for", "on", "with", "by", "as", "that", "from", "at", "which", "its",
    "their", "after", "before", "during", "between", "under", "over", "about", "into",
)  # fmt: skip


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_VOCAB) for _ in range(rng.randint(12, 24))]
    if rng.random() < 0.5:
        words[rng.randint(2, len(words) - 2)] += ","
    return " ".join(words).capitalize() + "."


def _linked(rng: random.Random, sentence: str) -> str:
    words = sentence.split(" ")
    for _ in range(rng.randint(0, 2)):
        k = rng.randrange(len(words))
        word = words[k].strip(",.")
        if word:
            words[k] = words[k].replace(
                word, f'<a href="/wiki/{word.capitalize()}_{rng.randint(1, 999)}" '
                f'title="{word.capitalize()}">{word}</a>', 1,
            )  # fmt: skip
    if rng.random() < 0.2:
        k = rng.randrange(len(words))
        words[k] = f"<i>{words[k]}</i>" if rng.random() < 0.5 else f"<b>{words[k]}</b>"
    return " ".join(words)


def _section(rng: random.Random, number: int) -> str:
    heading = " ".join(rng.choice(_VOCAB) for _ in range(3)).capitalize()
    parts = [
        f'<h2><span class="mw-headline" id="s{number}">{heading}</span>'
        f'<span class="mw-editsection">[<a href="/w/index.php?title=Long_read&amp;action=edit'
        f'&amp;section={number}" title="Edit section">edit</a>]</span></h2>'
    ]
    for p in range(rng.randint(4, 7)):
        sentences = " ".join(_linked(rng, _sentence(rng)) for _ in range(rng.randint(3, 6)))
        cite = number * 10 + p
        parts.append(
            f'<p>{sentences}<sup class="reference" id="cite_ref-{cite}">'
            f'<a href="#cite_note-{cite}">[{cite}]</a></sup></p>'
        )
    if number % 3 == 0:
        items = "".join(f"<li>{_linked(rng, _sentence(rng))}</li>" for _ in range(5))
        parts.append(f"<ul>{items}</ul>")
    if number % 5 == 0:
        rows = "".join(
            "<tr>" + "".join(f"<td>{rng.choice(_VOCAB)} {rng.randint(1, 99)}</td>" for _ in "1234")
            + "</tr>" for _ in range(5)
        )  # fmt: skip
        parts.append(
            '<table class="wikitable"><tr><th>Year</th><th>Item</th><th>Value</th>'
            f"<th>Note</th></tr>{rows}</table>"
        )
    if number % 4 == 0:
        parts.append(
            f'<figure class="thumb"><img src="/media/figure-{number}.jpg" alt="{heading}" '
            f'width="320" height="200"><figcaption>{_sentence(rng)}</figcaption></figure>'
        )
    return "".join(parts)


def _chrome_links(rng: random.Random, count: int) -> str:
    return "".join(
        f'<li><a href="/portal/{rng.choice(_VOCAB)}-{k}">{rng.choice(_VOCAB).capitalize()}</a></li>'
        for k in range(count)
    )


def realistic_page(size: int, *, astral: bool = False, script_bytes: int = 40_000) -> bytes:
    """A long article as a content site serves it, just under `size` bytes.

    Site chrome (navigation, sidebar, footer, inline script and style), then
    sections of paragraphs with links, emphasis and citations, lists, tables
    and figures: about 70% of the bytes are article text. With `astral`, one
    emoji in the first paragraph makes the decoded `str` 4 bytes per character.
    """
    rng = random.Random(5)  # noqa: S311 (deterministic text, not secrets)
    script = "window.__config = " + json.dumps(
        {f"k{k}": _sentence(rng) for k in range(script_bytes // 120)}
    ) + ";"  # fmt: skip
    style = "".join(f".c{k}{{margin:{k % 9}px;color:#{k:06x}}}" for k in range(300))
    head = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Long read: the harbour tunnel | The Bench Gazette</title>"
        f"<style>{style}</style><script>{script}</script></head><body>"
        f'<header class="site-header"><nav><ul>{_chrome_links(rng, 40)}</ul></nav></header>'
        f'<div class="layout"><aside class="sidebar"><ul>{_chrome_links(rng, 60)}</ul></aside>'
        '<main id="content"><article><h1>Long read: the harbour tunnel</h1>'
    )
    if astral:
        head += "<p>Reader favourite \U0001f600 of the year.</p>"
    tail = (
        f'</article></main></div><footer class="site-footer"><ul>{_chrome_links(rng, 30)}</ul>'
        "<p>Copyright The Bench Gazette</p></footer></body></html>"
    )
    budget = size - len(head.encode()) - len(tail.encode())
    sections: list[str] = []
    used, number = 0, 1
    while True:
        section = _section(rng, number)
        cost = len(section.encode())
        if used + cost > budget:
            break
        sections.append(section)
        used += cost
        number += 1
    filler = budget - used  # a last short paragraph brings the page to `size` bytes
    if filler > 8:
        sections.append("<p>" + ("x " * ((filler - 7) // 2)).ljust(filler - 7) + "</p>")
    body = (head + "".join(sections) + tail).encode()
    assert len(body) <= size, (len(body), size)
    return body


def script_heavy_page(size: int) -> bytes:
    """A short article in a page that is mostly inline JSON, as single-page apps ship."""
    rng = random.Random(7)  # noqa: S311
    article = "".join(f"<p>{_linked(rng, _sentence(rng))}</p>" for _ in range(30))
    head = (
        '<!doctype html><html><head><meta charset="utf-8"><title>App page</title>'
        '<script id="__DATA__" type="application/json">'
    )
    tail = (
        f"</script></head><body><main><article><h1>App page</h1>{article}</article></main>"
        "</body></html>"
    )
    record = json.dumps({"id": 1, "text": _sentence(rng)}) + ","
    count = (size - len(head) - len(tail) - 2) // len(record)
    body = (head + "[" + record * count + "{}]" + tail).encode()
    assert len(body) <= size
    return body


def _document(body: str, head: str = "") -> bytes:
    """An HTML document: html, head, title and body are 4 elements."""
    page = (
        f"<!doctype html><html><head><title>Worst case</title>{head}</head>"
        f"<body>{body}</body></html>"
    )
    data = page.encode()
    assert len(data) <= PAGE_BYTES, len(data)
    return data


def paragraphs_page() -> bytes:
    """LIM-F10 small elements: 199,996 short paragraphs."""
    return _document("".join(f"<p>w{i % 10} w, x.</p>" for i in range(NODES - 4)))


def links_page() -> bytes:
    """LIM-F10 elements in one paragraph, half of them links: the most Markdown per node."""
    count = NODES - 6  # html head title body main p
    return _document(
        "<main><p>" + "".join(f'w <a href="/{i}">l</a> ' for i in range(count)) + "</p></main>"
    )


def attributes_page() -> bytes:
    """Elements of 26 boolean attributes each: within LIM-F10, LIM-F3 is the only bound."""
    unit = "<i " + " ".join("abcdefghijklmnopqrstuvwxyz") + ">x</i>"
    return _document("<p>" + unit * ((PAGE_BYTES - 200) // len(unit)) + "</p>")


def nested_page() -> bytes:
    """LIM-F10 elements in chains just inside LIM-F11: body > div × 253 > p, repeated."""
    chain = DEPTH - 3  # html (1) > body (2) > divs (3 ..) > p at depth DEPTH
    unit = "<div>" * chain + "<p>deep text, here.</p>" + "</div>" * chain
    return _document(unit * ((NODES - 4) // (chain + 1)))


def hostile_page(attributes: int) -> bytes:
    """One start tag with `attributes` distinct attributes (libxml2 compares each to all)."""
    names = " ".join(f"a{k:x}" for k in range(attributes))
    return _document(
        f"<main><p {names}>A paragraph of text with enough words to be kept.</p></main>"
    )


# -- measuring memory -------------------------------------------------------------------------


def _status_mib(field: str) -> float:
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return math.nan


def rss_mib() -> float:
    """The resident set size now (VmRSS), MiB."""
    return _status_mib("VmRSS:")


def peak_mib() -> float:
    """The RSS high-water mark of this process's own memory (VmHWM), MiB.

    Not `ru_maxrss`: the kernel carries the high-water mark of the forked copy
    of the parent across exec into it, so a child's `ru_maxrss` is at least the
    parent's RSS at spawn (about 94 MiB for this benchmark's parent, more under
    `make bench`). VmHWM belongs to the address space exec created.
    """
    hwm = _status_mib("VmHWM:")
    if math.isnan(hwm):  # no /proc: the same mark from getrusage (KiB on Linux)
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return hwm


def reset_peak() -> bool:
    """Reset the high-water mark to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def trim() -> None:
    """Collect garbage and give freed heap pages back to the system (glibc)."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


# -- child processes --------------------------------------------------------------------------


# The allocator of a process as shipped, and glibc's own defaults for comparison.
SHIPPED: dict[str, str] = dict(ALLOCATOR)
GLIBC_DEFAULTS: dict[str, str] = {}


def _child(spec: dict[str, Any], allocator: dict[str, str] = SHIPPED) -> dict[str, Any]:
    """Run `python -m bench.fetch child` with `spec` under these malloc settings; its answer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    done = subprocess.run(
        [sys.executable, "-m", "bench.fetch", "child"],
        input=json.dumps(spec).encode(),
        capture_output=True,
        cwd=REPO,
        env={**env, **allocator},
        check=False,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {spec.get('mode')} failed: {done.stderr.decode()[-2000:]}")
    answer: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return answer


def _child_main() -> int:
    spec = json.loads(sys.stdin.read())
    answer = _extract_child(spec) if spec["mode"] == "extract" else anyio.run(_fetch_child, spec)
    sys.stdout.write(json.dumps(answer) + "\n")
    return 0


def _tree_cost(body: bytes, content_type: str) -> dict[str, Any]:
    """The decoded str, then the bounded parse alone: the tree that extraction works on."""
    base = rss_mib()
    text, _ = decode_body(body, content_type)
    with_str = rss_mib()
    reset_peak()
    started = time.perf_counter()
    tree = parse.parse_bounded(text, max_nodes=NODES, max_depth=DEPTH)
    parse_s = time.perf_counter() - started
    tree_mib = max(rss_mib(), peak_mib()) - with_str
    elements = attributes = 0
    for element in tree.root.iter():
        elements += 1
        attributes += len(element.attrib)
    out = {
        "str_bytes": sys.getsizeof(text),
        "chars": len(text),
        "str_mib": with_str - base,
        "parse_s": parse_s,
        "tree_mib": tree_mib,
        "elements": elements,
        "attributes": attributes,
        "parse_partial": tree.partial,
    }
    del tree, text
    trim()
    return out


def _extract_child(spec: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's extraction step on one document: times and memory."""
    body = Path(spec["file"]).read_bytes()
    content_type = spec["content_type"]
    kind = sniff_kind(media_type(content_type), body)
    out: dict[str, Any] = {"bytes": len(body), "kind": kind}
    trim()
    out["rss_with_body_mib"] = rss_mib()
    if spec.get("parse_only"):
        # A child of its own: memory freed by one pass would hide part of the next.
        out.update(_tree_cost(body, content_type))
        return out
    # The step as FetchPipeline._extract_sync runs it: decode, extract, instruction check.
    base = rss_mib()
    reset_peak()
    cpu, wall = time.process_time(), time.perf_counter()
    text, _ = decode_body(body, content_type)
    decoded = time.perf_counter()
    if kind == "html":
        extracted = extract.extract_html(text, base_url=spec["url"])
    else:
        extracted = extract.extract_text(text, kind="text")
    extracted_at = time.perf_counter()
    instruction_like = looks_like_instruction(extracted.markdown)
    checked = time.perf_counter()
    out.update(
        cpu_s=time.process_time() - cpu,
        wall_s=checked - wall,
        decode_s=decoded - wall,
        extract_s=extracted_at - decoded,
        instruction_s=checked - extracted_at,
        working_set_mib=peak_mib() - base,
        markdown_chars=len(extracted.markdown),
        markdown_bytes=sys.getsizeof(extracted.markdown),
        partial=extracted.partial,
        instruction_like=instruction_like,
    )
    return out


def _started_services(port: int, fetch: dict[str, Any]) -> Any:
    """`Services` as `rypsok serve` starts it: its imports, configuration, MCP server."""
    production_logging()
    # What `rypsok serve` imports (bench.coldstart.SERVE_IMPORTS): the idle base counts them.
    import mcp.server.stdio  # noqa: PLC0415, F401

    import rypsok.cli  # noqa: PLC0415
    import rypsok.mcp.stdio  # noqa: PLC0415, F401
    from rypsok.core.config import parse_config  # noqa: PLC0415
    from rypsok.core.engines import registry  # noqa: PLC0415
    from rypsok.core.services import Services  # noqa: PLC0415
    from rypsok.mcp.server import build_server  # noqa: PLC0415

    config = parse_config(
        {
            "schema_version": 1,
            "egress": {"allow": ["127.0.0.1/32"]},
            "fetch": {"allow_http": True, "ports": [port], **fetch},
        },
        known_engines=registry.known_ids(),
    )
    services = Services(config)
    build_server(services)
    return services


async def _fetch_child(spec: dict[str, Any]) -> dict[str, Any]:
    """web_fetch calls through `Services`: per call and per batch, times, outcomes, memory."""
    port = spec["port"]
    services = _started_services(port, spec.get("fetch", {}))
    base = f"http://127.0.0.1:{port}"
    trim()
    out: dict[str, Any] = {"idle_rss_mib": rss_mib(), "idle_peak_mib": peak_mib()}
    stall = [0.0]

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await anyio.sleep(0.005)
            now = time.perf_counter()
            stall[0] = max(stall[0], now - last - 0.005)
            last = now

    async def call(path: str, tag: str, into: list[dict[str, Any]]) -> None:
        started, cpu = time.monotonic(), time.process_time()
        answer = await services.call(
            "web_fetch", {"url": f"{base}{path}?q={tag}", "max_chars": MAX_CHARS}
        )
        ended = time.monotonic()
        payload = answer.payload
        error = payload.get("error") or {}
        reason = (error.get("detail") or {}).get("reason")
        into.append(
            {
                "tag": tag,
                "started": started,
                "ended": ended,
                "wall_s": ended - started,
                "cpu_s": time.process_time() - cpu,
                "outcome": f"{error['kind']}:{reason}" if error else payload["outcome"],
                "chars": len(payload.get("content") or ""),
                "truncated": bool(payload.get("truncated")),
            }
        )

    warm: list[dict[str, Any]] = []
    await call(spec["warm"], "warm", warm)
    trim()
    out["warm_rss_mib"], out["warm_peak_mib"], out["warm_call"] = rss_mib(), peak_mib(), warm[0]
    out["peak_reset"] = reset_peak()
    batches = []
    # The batches run under the collector settings a transport serves with (mcp/heap.py):
    # start-up frozen, young collections every 10,000 objects; the ceiling holds as served.
    heap = contextlib.ExitStack()
    heap.enter_context(serving_heap())
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        for batch in spec["batches"]:
            for run in range(batch["repeat"]):
                reset_peak()
                if tracemalloc.is_tracing():  # PYTHONTRACEMALLOC=1 in the environment
                    tracemalloc.reset_peak()
                stall[0] = 0.0
                calls: list[dict[str, Any]] = []
                cpu, started = time.process_time(), time.monotonic()
                async with anyio.create_task_group() as inner:
                    for k in range(batch["concurrent"]):
                        inner.start_soon(call, batch["path"], f"{batch['label']}-{run}-{k}", calls)
                batches.append(
                    {
                        "label": batch["label"],
                        "run": run,
                        "wall_s": time.monotonic() - started,
                        "cpu_s": time.process_time() - cpu,
                        "peak_mib": peak_mib(),
                        "rss_after_mib": rss_mib(),
                        "stall_s": stall[0],
                        "threads": threading.active_count(),
                        "traced_peak_mib": tracemalloc.get_traced_memory()[1] / MIB
                        if tracemalloc.is_tracing()
                        else None,
                        "calls": sorted(calls, key=lambda c: c["tag"]),
                    }
                )
        group.cancel_scope.cancel()
    heap.close()
    await services.aclose()
    out["batches"] = batches
    return out


# -- the parts --------------------------------------------------------------------------------


def _corpus() -> list[tuple[str, bytes, str, str]]:
    pages = []
    for sidecar in sorted(CORPUS.glob("*.expect.json")):
        name = sidecar.name.removesuffix(".expect.json")
        source = next(p for p in CORPUS.glob(f"{name}.*") if p != sidecar)
        expect = json.loads(sidecar.read_text(encoding="utf-8"))
        pages.append((name, source.read_bytes(), expect["content_type"], expect["base_url"]))
    return pages


def _extract_page(body: bytes, content_type: str, url: str, check: bool) -> bool:
    """Decode and extract one page as the pipeline does; False if nothing was extracted."""
    kind = sniff_kind(media_type(content_type), body)
    text, _ = decode_body(body, content_type)
    try:
        if kind == "html":
            markdown = extract.extract_html(text, base_url=url).markdown
        else:
            plain: Literal["text", "markdown"] = "markdown" if kind == "markdown" else "text"
            markdown = extract.extract_text(text, kind=plain).markdown
    except extract.ExtractionFailed:
        return False
    if check:
        looks_like_instruction(markdown)
    return True


def corpus_throughput(rounds: int) -> dict[str, Any]:
    pages = _corpus()
    total = sum(len(body) for _, body, _, _ in pages)

    def one_round(check: bool) -> tuple[float, float, int]:
        cpu, wall = time.process_time(), time.perf_counter()
        failed = sum(not _extract_page(b, t, u, check) for _, b, t, u in pages)
        return time.perf_counter() - wall, time.process_time() - cpu, failed

    one_round(True)  # warm-up
    rows, figures = [], {}
    for label, check in (("decode + extract", False), ("+ instruction check (pipeline)", True)):
        samples = [one_round(check) for _ in range(rounds)]
        wall, cpu = median([w for w, _, _ in samples]), median([c for _, c, _ in samples])
        failed = samples[-1][2]
        figures[label] = {
            "rounds": rounds,
            "wall_s_p50": wall,
            "cpu_s_p50": cpu,
            "pages_per_s": len(pages) / wall,
            "mb_per_s": total / 1e6 / wall,
            "failed": failed,
        }
        rows.append(
            [label, len(pages), f"{total / 1e3:.1f}", wall * 1000, cpu * 1000,
             len(pages) / wall, total / 1e6 / wall, failed]
        )  # fmt: skip
    emit(
        table(
            f"Extraction throughput on tests/fixtures/pages, in process ({rounds} rounds, median)",
            ["stage", "pages", "KB", "wall ms", "CPU ms", "pages/s", "MB/s", "failed"],
            rows,
        )
    )
    return {"pages": len(pages), "bytes": total, **figures}


def _outcomes(calls: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for c in calls:
        key = c["outcome"] + ("/truncated" if c["truncated"] else "")
        counts[key] = counts.get(key, 0) + 1
    return ",".join(f"{k}:{v}" for k, v in sorted(counts.items()))


def _bodies_held(calls: list[dict[str, Any]], sent: dict[str, float]) -> int:
    """Most calls at once that had their body (the server had sent it) and had not ended."""
    events = []
    for c in calls:
        if c["tag"] in sent:
            events += [(sent[c["tag"]], 1), (c["ended"], -1)]
    held = most = 0
    for _, step in sorted(events):
        held += step
        most = max(most, held)
    return most


def fetch_timing(server: FakeServer, runs_5m: int, runs_1m: int) -> dict[str, Any]:
    server.reset()
    # The call to /warm has read robots.txt and opened the connection: no run is discarded.
    answer = _child(
        {
            "mode": "fetch",
            "port": server.port,
            "warm": "/warm",
            "batches": [
                {"label": "5 MiB", "path": "/page-5m", "repeat": runs_5m, "concurrent": 1},
                {"label": "1 MB", "path": "/page-1m", "repeat": runs_1m, "concurrent": 1},
            ],
        }
    )
    sent = {tag: done for _, tag, _, done in server.stats().records}
    rows, figures = [], {}
    for label, size in (("1 MB", ONE_MB), ("5 MiB", PAGE_BYTES)):
        batches = [b for b in answer["batches"] if b["label"] == label]
        calls = [b["calls"][0] for b in batches]
        walls = [c["wall_s"] * 1000 for c in calls]
        cpus = [c["cpu_s"] * 1000 for c in calls]
        after = [(c["ended"] - sent[c["tag"]]) * 1000 for c in calls if c["tag"] in sent]
        f = {
            "bytes": size,
            "runs": len(calls),
            "wall_ms": {"p50": percentile(walls, 50), "min": min(walls), "max": max(walls)},
            "cpu_ms_p50": percentile(cpus, 50),
            "after_body_ms_p50": percentile(after, 50),
            "outcomes": _outcomes(calls),
            "chars_returned": calls[0]["chars"],
            # Only the first batch of the process has a clean peak: later ones reuse
            # (and count) what the allocator kept from earlier calls.
            "peak_mib_first_run": batches[0]["peak_mib"] if label == "5 MiB" else None,
            "stall_ms_max": max(b["stall_s"] for b in batches) * 1000,
        }
        figures[label] = f
        rows.append(
            [label, f"{size:,}", len(calls), f["wall_ms"]["p50"], f["wall_ms"]["min"],
             f["wall_ms"]["max"], f["cpu_ms_p50"], f["after_body_ms_p50"], f["stall_ms_max"],
             f["peak_mib_first_run"] or "-", f["outcomes"], f["chars_returned"]]
        )  # fmt: skip
    emit(
        table(
            "web_fetch of a realistic page, one call at a time, max_chars 100,000 (ms; after = "
            "last byte sent to call end; stall = the event loop's longest; peak = peak RSS of "
            "the process's first large call, MiB)",
            ["page", "bytes", "n", "wall p50", "min", "max", "CPU p50", "after p50",
             "stall", "peak", "outcome", "chars"],
            rows,
        )
    )  # fmt: skip
    figures["idle_rss_mib"] = answer["idle_rss_mib"]
    figures["warm_rss_mib"] = answer["warm_rss_mib"]
    return figures


# LIM-C4 at its maximum: 8 fetches at once from the one test host, as from 8 hosts.
WIDE = {"fetches_per_host": IN_FLIGHT}
# The first two under the shipped allocator settings and under glibc's defaults, which
# raise the mmap threshold to the largest block freed (so after the first 5 MiB body or
# 20 MiB str large blocks come from a heap that fragments) and give threads arenas of their own.
C3 = f"{IN_FLIGHT} concurrent realistic 5 MiB, astral"
PILE = f"{PILE_UP} concurrent script-heavy 5 MiB"
C3_DEFAULTS = f"{C3}, glibc defaults"
PILE_DEFAULTS = f"{PILE}, glibc defaults"
HOSTILE = f"hostile: one tag of {HOSTILE_ATTRIBUTES:,} attributes"
_C3_SPEC = {
    "fetch": WIDE,
    "batches": [{"label": "c3", "path": "/astral-5m", "repeat": 1, "concurrent": IN_FLIGHT}],
}
_PILE_SPEC = {
    "fetch": WIDE,
    "batches": [{"label": "pile", "path": "/script-5m", "repeat": 1, "concurrent": PILE_UP}],
}
MEMORY_SCENARIOS: tuple[tuple[str, dict[str, Any], dict[str, str]], ...] = (
    (C3, _C3_SPEC, SHIPPED),
    (C3_DEFAULTS, _C3_SPEC, GLIBC_DEFAULTS),
    (PILE, _PILE_SPEC, SHIPPED),
    (PILE_DEFAULTS, _PILE_SPEC, GLIBC_DEFAULTS),
    (HOSTILE, {"batches": [
        {"label": "hostile", "path": "/hostile", "repeat": 1, "concurrent": 1}]}, SHIPPED),
)  # fmt: skip


def memory_scenarios(server: FakeServer) -> dict[str, Any]:
    rows, figures = [], {}
    for label, spec, env in MEMORY_SCENARIOS:
        server.reset()
        answer = _child({"mode": "fetch", "port": server.port, "warm": "/warm", **spec}, env)
        sent = {tag: done for _, tag, _, done in server.stats().records}
        entry: dict[str, Any] = {
            "env": env,
            "idle_rss_mib": answer["idle_rss_mib"],
            "warm_rss_mib": answer["warm_rss_mib"],
            "warm_peak_mib": answer["warm_peak_mib"],
        }
        figures[label] = entry
        batch = answer["batches"][0]
        calls = batch["calls"]
        entry.update(
            peak_mib=batch["peak_mib"],
            rss_after_mib=batch["rss_after_mib"],
            wall_s=batch["wall_s"],
            cpu_s=batch["cpu_s"],
            stall_ms=batch["stall_s"] * 1000,
            call_wall_s=sorted(c["wall_s"] for c in calls),
            outcomes=_outcomes(calls),
            bodies_held=_bodies_held(calls, sent),
            traced_peak_mib=batch["traced_peak_mib"],
        )
        rows.append(
            [label, entry["warm_rss_mib"], entry["peak_mib"],
             entry["peak_mib"] - entry["warm_rss_mib"], entry["rss_after_mib"],
             entry["bodies_held"], entry["wall_s"], max(entry["call_wall_s"]),
             entry["stall_ms"], entry["outcomes"]]
        )  # fmt: skip
    idle = figures[C3]
    emit(
        f"Idle process (imports of `rypsok serve`, Services, MCP server): RSS "
        f"{idle['idle_rss_mib']:.1f} MiB after start-up, {idle['warm_rss_mib']:.1f} MiB after "
        f"one small fetch (the base below; high-water mark {idle['warm_peak_mib']:.1f} MiB)"
    )
    emit(
        table(
            "Peak RSS of a fresh process per scenario (MiB; base = RSS after start-up and one "
            "small fetch; held = bodies held at once; wall and slowest call, s; loop stall, ms)",
            ["scenario", "base", "peak", "peak-base", "after", "held", "wall",
             "slowest", "stall", "outcomes"],
            rows,
        )
    )  # fmt: skip
    return figures


# name, file, build, content type, parse alone, in --quick
DOCUMENTS: tuple[tuple[str, str, Callable[[], bytes], str, bool, bool], ...] = (
    ("realistic 5 MiB", "page-5m.html", lambda: realistic_page(PAGE_BYTES), HTML, True, False),
    ("realistic 5 MiB, astral", "astral-5m.html",
     lambda: realistic_page(PAGE_BYTES, astral=True), HTML, True, True),
    ("script-heavy 5 MiB", "script-5m.html", lambda: script_heavy_page(PAGE_BYTES), HTML, True,
     True),
    ("200k paragraphs", "paragraphs.html", paragraphs_page, HTML, True, False),
    ("200k elements, half links", "links.html", links_page, HTML, True, False),
    ("26 attributes per element", "attributes.html", attributes_page, HTML, True, True),
    (f"200k elements at depth {DEPTH}", "nested.html", nested_page, HTML, True, False),
)  # fmt: skip


def documents(work: Path, quick: bool) -> dict[str, Any]:
    rows, tree_rows, figures = [], [], {}
    for name, file, _, content_type, components, in_quick in DOCUMENTS:
        if quick and not in_quick:
            continue
        spec = {"mode": "extract", "file": str(work / file), "content_type": content_type}
        out = _child({**spec, "url": PAGE_URL})
        if components:
            out.update(_child({**spec, "parse_only": True}))
        figures[name] = out
        rows.append(
            [name, out["bytes"] / MIB, out["markdown_chars"] / 1e6, out["decode_s"],
             out["extract_s"], out["instruction_s"], out["wall_s"], out["cpu_s"],
             out["working_set_mib"], "yes" if out["partial"] else "no"]
        )  # fmt: skip
        if "tree_mib" in out:
            parts = out["elements"] + out["attributes"]
            tree_rows.append(
                [name, out["elements"], out["attributes"], out["str_bytes"] / MIB,
                 out["parse_s"], out["tree_mib"], out["tree_mib"] * MIB / out["elements"],
                 out["tree_mib"] * MIB / parts]
            )  # fmt: skip
    emit(
        table(
            "The extraction step alone (decode, extract, instruction check), a fresh process per "
            "document (s; working set = peak RSS above the body, MiB)",
            ["document", "MiB", "md Mchars", "decode", "extract", "instr", "wall", "CPU",
             "working set", "partial"],
            rows,
        )
    )  # fmt: skip
    emit()
    emit(
        table(
            "The bounded parse alone: str and tree (MiB; tree = peak RSS above body and str; "
            "bytes per element, and per element or attribute)",
            ["document", "elements", "attributes", "str MiB", "parse s", "tree MiB",
             "B/element", "B/(el+attr)"],
            tree_rows,
        )
    )  # fmt: skip
    return figures


def hostile_scaling(quick: bool) -> dict[str, Any]:
    """Parse time of one start tag with n attributes, through the pipeline's bounded parse."""
    rows, measured = [], []
    for count in (5_000, 10_000, 20_000) if quick else (5_000, 10_000, 20_000, 40_000):
        text = hostile_page(count).decode()
        started = time.perf_counter()
        parse.parse_bounded(text, max_nodes=NODES, max_depth=DEPTH)
        seconds = time.perf_counter() - started
        measured.append({"attributes": count, "bytes": len(text), "parse_s": seconds})
        rows.append([f"{count:,}", f"{len(text):,}", seconds])
    # Quadratic: extrapolate from the largest to a tag that fills LIM-F3.
    last = measured[-1]
    fill = PAGE_BYTES / (last["bytes"] / last["attributes"])
    projected = last["parse_s"] * (fill / last["attributes"]) ** 2
    rows.append([f"{fill:,.0f} (n², extrapolated)", f"{PAGE_BYTES:,}", projected])
    emit(
        table(
            "One start tag with n attributes: the bounded parse (s), the GIL held throughout",
            ["attributes", "bytes", "parse s"],
            rows,
        )
    )
    return {"measured": measured, "fills_lim_f3": {"attributes": fill, "parse_s": projected}}


def ceiling(memory: dict[str, Any], docs: dict[str, Any], timing: dict[str, Any]) -> dict[str, Any]:
    """REQ-PERF-003: base + bodies + LIM-C5 × per-document working set, against the peaks.

    Bodies: LIM-C3 × LIM-F3, plus one LIM-F3 while a finished body is joined
    from its chunks (the event loop joins one at a time).
    """
    base = memory[C3]["warm_rss_mib"]
    f3 = limits.FETCH_MAX_BYTES / MIB
    out: dict[str, Any] = {"base_mib": base, "lim_f3_mib": f3, "parse_tasks": PARSE_TASKS}
    rows = []

    def check(label: str, bodies: int, tasks: int, doc: str, peak: float | None) -> None:
        if doc not in docs:
            return
        per_doc = docs[doc]["working_set_mib"]
        derived = base + (bodies + 1) * f3 + tasks * per_doc
        ratio = None if peak is None else peak / derived
        out[label] = {
            "document": doc,
            "bodies": bodies,
            "tasks": tasks,
            "per_doc_mib": per_doc,
            "derived_mib": derived,
            "peak_mib": peak,
            "peak_over_derived": ratio,
        }
        verdict = "-" if ratio is None else ("within" if ratio <= 1 else "over")
        rows.append([label, base, (bodies + 1) * f3, tasks, per_doc, derived,
                     "-" if peak is None else f"{peak:.2f}",
                     "-" if ratio is None else f"{ratio:.2f}", verdict])  # fmt: skip

    check(
        "one realistic 5 MiB fetch", 1, 1, "realistic 5 MiB", timing["5 MiB"]["peak_mib_first_run"]
    )
    check(C3, IN_FLIGHT, PARSE_TASKS, "realistic 5 MiB, astral", memory[C3]["peak_mib"])
    check(C3_DEFAULTS, IN_FLIGHT, PARSE_TASKS, "realistic 5 MiB, astral",
          memory[C3_DEFAULTS]["peak_mib"])  # fmt: skip
    for label in (PILE, PILE_DEFAULTS):
        held = memory[label]["bodies_held"]
        check(label, IN_FLIGHT, PARSE_TASKS, "script-heavy 5 MiB", memory[label]["peak_mib"])
        check(f"{label}, {held} bodies counted", held, PARSE_TASKS, "script-heavy 5 MiB",
              memory[label]["peak_mib"])  # fmt: skip
    for doc in ("200k paragraphs", "200k elements, half links", "26 attributes per element"):
        check(f"the formula at: {doc}", IN_FLIGHT, PARSE_TASKS, doc, None)
    emit(
        table(
            "REQ-PERF-003: base + (LIM-C3 + 1) × LIM-F3 + LIM-C5 × per-document working set, "
            "against the measured peak RSS (MiB)",
            [
                "scenario",
                "base",
                "bodies",
                "C5",
                "per doc",
                "derived",
                "peak",
                "peak/derived",
                "target: within",
            ],
            rows,
        )
    )
    return out


# -- the benchmark ----------------------------------------------------------------------------


def _write_pages(work: Path) -> dict[str, dict[str, Any]]:
    for _, file, build, _, _, _ in DOCUMENTS:
        (work / file).write_bytes(build())
    (work / "page-1m.html").write_bytes(realistic_page(ONE_MB))
    (work / "hostile.html").write_bytes(hostile_page(HOSTILE_ATTRIBUTES))
    served = {
        "/page-1m": "page-1m.html",
        "/page-5m": "page-5m.html",
        "/astral-5m": "astral-5m.html",
        "/script-5m": "script-5m.html",
        "/hostile": "hostile.html",
    }
    routes = {
        path: {"file": str(work / file), "content_type": HTML} for path, file in served.items()
    }
    routes["/warm"] = {"file": str(CORPUS / "news-article.html"), "content_type": HTML}
    return routes  # /robots.txt is not a route: 404, allow all


async def run(quick: bool = False) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="fetchbench-"))
    try:
        routes = _write_pages(work)
        malloc = SHIPPED
        emit(
            f"LIM-C3 {IN_FLIGHT}, LIM-C5 {PARSE_TASKS} (CPUs), LIM-F3 "
            f"{limits.FETCH_MAX_BYTES:,} B, LIM-F5 {CEILING_S:.0f} s, LIM-F10 {NODES:,}, "
            f"LIM-F11 {DEPTH}; allocator environment (as rypsok serve): {malloc}"
        )
        emit()
        results: dict[str, Any] = {"corpus": corpus_throughput(5 if quick else 30)}
        emit()
        with FakeServer(routes) as server:
            results["web_fetch"] = fetch_timing(server, 2 if quick else 3, 2 if quick else 3)
            emit()
            results["memory"] = memory_scenarios(server)
        emit()
        results["documents"] = docs = documents(work, quick)
        emit()
        results["hostile_tag"] = hostile_scaling(quick)
        emit()
        results["ceiling"] = ceiling(results["memory"], docs, results["web_fetch"])
        worst = max(docs.items(), key=lambda item: item[1]["wall_s"])
        c3 = results["memory"][C3]
        emit()
        emit(
            f"LIM-F5 ({CEILING_S:.0f} s): slowest extraction step {worst[1]['wall_s']:.2f} s "
            f"({worst[0]}), {worst[1]['wall_s'] / CEILING_S:.0%} of the ceiling for a call "
            f"alone; {IN_FLIGHT} concurrent realistic 5 MiB calls: {c3['outcomes']}, the "
            f"slowest after {max(c3['call_wall_s']):.1f} s"
        )
        results["lim_f5"] = {"worst_document": worst[0], "wall_s": worst[1]["wall_s"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        sys.exit(_child_main())
    sys.exit("run it as `python -m bench fetch [--quick]`")
