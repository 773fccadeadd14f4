"""Extraction quality and speed: rypsok against trafilatura, in the same run.

    python -m bench extraction                  # rypsok only in the project venv
    /work/scratch-traf/bin/python -m bench extraction    # with trafilatura (scratch venv)
    python -m bench.extraction [--repeat N]     # the same, plus the fixture tables

trafilatura is never a dependency of rypsok: it is imported when the running
interpreter has it (a scratch venv with the project on PYTHONPATH or
installed with --no-deps), else its columns are skipped with a note.
Method and recorded results: docs/extraction.md.

Corpus (the development corpus ../shared/corpora/readability-pages, or
$RYPSOK_EXTRACTION_CORPUS): F1 with the metric of
../shared/tools/extraction_score.py (4-gram shingles, per-document
normalisation; the scorer module itself is loaded, so the figures are the
scorer's), pages/s of each extractor on the same decoded pages, and the
ratio. Each page is extracted `--repeat` times by both extractors
alternately and the best run of each counts, so a burst of load on the
shared machine hits both; pages/s is the page count over the sum of the
best times. trafilatura runs as the scorer runs it (`extract(html)`).
rypsok keeps what it read from CSS text (sheets split into rules, parsed
blocks, compiled selectors) in bounded per-process caches, so its timed runs
of a page reuse them, as a service fetching several pages of one site does;
the `rypsok-cold-css` row clears those caches before every run, which is
the figure for a first visit (the clearing itself is not timed: freeing the
previous run's entries is the benchmark's work, not a visit's).

Sizes: a 3 MB page of paragraphs, the realistic and script-heavy 5 MiB pages
and the hostile 30,000-attribute tag of bench/fetch.py, extraction alone,
best of `--repeat` (at most 3) runs.

Fixtures (python -m bench.extraction only): present recall and absent
precision on tests/fixtures/pages, and linearity on scaled articles.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.common import emit
from rypsok.core.fetch.css_visibility import clear_caches
from rypsok.core.fetch.decode import decode_body, media_type, sniff_kind
from rypsok.core.fetch.extract import ExtractionFailed, extract_html, extract_text

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "fixtures" / "pages"
SHARED = REPO.parent / "shared"
DEV_CORPUS = Path(os.environ.get("RYPSOK_EXTRACTION_CORPUS", SHARED / "corpora/readability-pages"))
SCORER = SHARED / "tools" / "extraction_score.py"
CORPUS_URL = "https://corpus.example/page.html"
THREE_MB = 3_000_000
SCALED_PAGES = ("news-article", "no-landmarks")
ARTICLE = re.compile(r"(<article\b[^>]*>)(.*?)(</article>)", re.DOTALL | re.IGNORECASE)
ENTRY = re.compile(r'(<div class="entrybody">)(.*?)(</div>\s*<div class="entryfooter">)', re.DOTALL)

Extractor = Callable[[str, str], str]
# rypsok timed as on a first visit to a site: the CSS engine's caches cleared per run.
COLD = "rypsok-cold-css"


@dataclass(frozen=True)
class Page:
    name: str
    kind: str
    text: str
    base_url: str
    present: list[str]
    absent: list[str]


@dataclass(frozen=True)
class Score:
    recall: float
    precision: float
    ms: float


def load_corpus() -> list[Page]:
    pages = []
    for sidecar in sorted(CORPUS.glob("*.expect.json")):
        name = sidecar.name.removesuffix(".expect.json")
        source = next(p for p in CORPUS.glob(f"{name}.*") if p != sidecar)
        expect = json.loads(sidecar.read_text(encoding="utf-8"))
        body = source.read_bytes()
        kind = sniff_kind(media_type(expect["content_type"]), body)
        text, _ = decode_body(body, expect["content_type"])
        pages.append(
            Page(name, str(kind), text, expect["base_url"], expect["present"], expect["absent"])
        )
    return pages


def normalize(text: str) -> str:
    return " ".join(text.split())


def rypsok_extractor(page_kind: str) -> Extractor:
    def run(text: str, url: str) -> str:
        try:
            if page_kind == "html":
                return extract_html(text, base_url=url).markdown
            if page_kind == "markdown":
                return extract_text(text, kind="markdown").markdown
            return extract_text(text, kind="text").markdown
        except ExtractionFailed:
            return ""

    return run


def trafilatura_extractor() -> Extractor | None:
    try:
        import trafilatura  # type: ignore[import-not-found]  # noqa: PLC0415 - optional, absent from the project venv
    except ImportError:
        return None

    def run(text: str, url: str) -> str:
        result: Any = trafilatura.extract(
            text,
            url=url,
            output_format="markdown",
            include_comments=False,
            include_tables=True,
            include_links=True,
            include_formatting=True,
        )
        return result or ""

    return run


def timed(extractors: list[Extractor], text: str, url: str, repeat: int) -> list[tuple[str, float]]:
    """Each extractor's output and best time in ms, the runs interleaved.

    Interleaving and the minimum keep the ratio fair on a shared, loaded
    machine: a burst of load hits both extractors, and the minimum is the run
    least disturbed by it (as `timeit` reports).
    """
    outputs = [extractor(text, url) for extractor in extractors]  # warm-up, and scored
    runs: list[list[float]] = [[] for _ in extractors]
    for _ in range(repeat):
        for extractor, times in zip(extractors, runs, strict=True):
            start = time.perf_counter()
            extractor(text, url)
            times.append(time.perf_counter() - start)
    return [(output, min(times) * 1000) for output, times in zip(outputs, runs, strict=True)]


def score(page: Page, output: str, ms: float) -> Score:
    flat = normalize(output)
    found = sum(normalize(s) in flat for s in page.present)
    # Whitespace-only or invisible strings are looked for in the raw output.
    leaked = sum((bool(normalize(s)) and normalize(s) in flat) or s in output for s in page.absent)
    recall = found / len(page.present) if page.present else 1.0
    precision = 1 - leaked / len(page.absent) if page.absent else 1.0
    return Score(recall, precision, ms)


def scaled(page: Page, factor: int) -> str:
    """The page with its article body repeated `factor` times."""
    pattern = ARTICLE if ARTICLE.search(page.text) else ENTRY
    match = pattern.search(page.text)
    if match is None:
        raise ValueError(f"{page.name}: no article to scale")
    head, body, tail = match.groups()
    start, end = match.span()
    return page.text[:start] + head + body * factor + tail + page.text[end:]


def quality_table(pages: list[Page], traf: Extractor | None, repeat: int) -> list[str]:
    lines = [
        "| page | kind | KB | rypsok recall | rypsok abs. precision | rypsok ms "
        "| trafilatura recall | trafilatura abs. precision | trafilatura ms | speed-up |",
        "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    totals: dict[str, list[float]] = {key: [] for key in ("rr", "rp", "rm", "tr", "tp", "tm")}
    for page in pages:
        compared = traf is not None and page.kind == "html"
        extractors = [rypsok_extractor(page.kind)] + ([traf] if traf and compared else [])
        results = timed(extractors, page.text, page.base_url, repeat)
        ours = score(page, *results[0])
        kb = len(page.text.encode()) / 1024
        row = f"| {page.name} | {page.kind} | {kb:.1f} | {ours.recall:.2f} | {ours.precision:.2f} "
        row += f"| {ours.ms:.2f} "
        if len(results) == 1:
            lines.append(row + "| – | – | – | – |")
            continue
        theirs = score(page, *results[1])
        totals["rr"].append(ours.recall)
        totals["rp"].append(ours.precision)
        totals["rm"].append(ours.ms)
        totals["tr"].append(theirs.recall)
        totals["tp"].append(theirs.precision)
        totals["tm"].append(theirs.ms)
        row += f"| {theirs.recall:.2f} | {theirs.precision:.2f} | {theirs.ms:.2f} "
        lines.append(row + f"| {theirs.ms / ours.ms:.1f}× |")
    if totals["rr"]:
        mean = {key: statistics.fmean(values) for key, values in totals.items()}
        lines.append(
            f"| **HTML mean** | | | **{mean['rr']:.3f}** | **{mean['rp']:.3f}** "
            f"| **{mean['rm']:.2f}** | **{mean['tr']:.3f}** | **{mean['tp']:.3f}** "
            f"| **{mean['tm']:.2f}** | **{mean['tm'] / mean['rm']:.1f}×** |"
        )
        lines.append("")
        lines.append(
            f"Throughput on the HTML pages: rypsok {1000 / mean['rm']:.0f} pages/s, "
            f"trafilatura {1000 / mean['tm']:.0f} pages/s."
        )
    return lines


def linearity_table(
    pages: list[Page], traf: Extractor | None, repeat: int, factors: list[int]
) -> list[str]:
    lines = [
        "| page | × | KB | rypsok ms | rypsok ms/KB | trafilatura ms | trafilatura ms/KB "
        "| speed-up |",
        "|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    by_name = {page.name: page for page in pages}
    for name in SCALED_PAGES:
        page = by_name[name]
        for factor in factors:
            text = scaled(page, factor)
            kb = len(text.encode()) / 1024
            runs = max(5, repeat // factor)
            extractors = [rypsok_extractor("html")] + ([traf] if traf else [])
            results = timed(extractors, text, page.base_url, runs)
            ours = results[0][1]
            row = f"| {name} | {factor} | {kb:.0f} | {ours:.2f} | {ours / kb:.4f} "
            if traf is None:
                lines.append(row + "| – | – | – |")
                continue
            theirs = results[1][1]
            lines.append(row + f"| {theirs:.2f} | {theirs / kb:.4f} | {theirs / ours:.1f}× |")
    return lines


# -- the development corpus: F1 and pages/s of both, same run -------------------------------


def corpus_markdown(html: str) -> str:
    """rypsok as extraction_score.py calls an extractor: page in, Markdown out."""
    return extract_html(html, base_url=CORPUS_URL).markdown


@dataclass(frozen=True)
class Timed:
    """An extractor as `best_times` runs it; `before` runs ahead of each timed run, untimed.

    The first-visit row clears the CSS caches in `before`: emptying them frees what
    the previous run read, which is the benchmark's own work, not a first visit's.
    """

    run: Callable[[str], str]
    before: Callable[[], None] | None = None


def load_scorer() -> ModuleType | None:
    if not SCORER.exists():
        return None
    spec = importlib.util.spec_from_file_location("extraction_score", SCORER)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trafilatura_plain() -> Callable[[str], str] | None:
    """trafilatura as the scorer's baseline runs it, or None when it is not installed."""
    try:
        import trafilatura  # noqa: PLC0415 - optional, absent from the project venv
    except ImportError:
        return None

    def run(html: str) -> str:
        result: Any = trafilatura.extract(html)
        return result or ""

    return run


def best_times(
    extractors: list[Timed], html: str, repeat: int
) -> tuple[list[str], list[float], list[bool]]:
    """Each extractor's output, best time (s) and failure, the runs interleaved."""
    outputs, failed = [], []
    for extractor in extractors:
        if extractor.before:
            extractor.before()
        try:
            outputs.append(extractor.run(html))
            failed.append(False)
        except Exception:
            outputs.append("")
            failed.append(True)
    best = [float("inf")] * len(extractors)
    for _ in range(repeat):
        for index, extractor in enumerate(extractors):
            if extractor.before:
                extractor.before()
            start = time.perf_counter()
            with contextlib.suppress(Exception):  # timed like a success
                extractor.run(html)
            best[index] = min(best[index], time.perf_counter() - start)
    return outputs, best, failed


def corpus_figures(repeat: int) -> dict[str, Any]:
    scorer = load_scorer()
    if scorer is None or not DEV_CORPUS.is_dir():
        return {"skipped": f"no corpus at {DEV_CORPUS} or no scorer at {SCORER}"}
    cases = scorer.load(DEV_CORPUS)
    traf = trafilatura_plain()
    extractors = [Timed(corpus_markdown), Timed(corpus_markdown, before=clear_caches)]
    extractors += [Timed(traf)] if traf else []
    names = ["rypsok", COLD] + (["trafilatura"] if traf else [])
    rows: dict[str, list[Any]] = {name: [] for name in names}
    spent = dict.fromkeys(names, 0.0)
    failures: dict[str, list[str]] = {name: [] for name in names}
    for case, html, truth in cases:
        outputs, times, failed = best_times(extractors, html, repeat)
        for name, output, seconds, fail in zip(names, outputs, times, failed, strict=True):
            rows[name].append(scorer.counts(truth, scorer.markdown_to_words(output)))
            spent[name] += seconds
            if fail:
                failures[name].append(case)
    figures: dict[str, Any] = {"pages": len(cases), "repeat": repeat, "corpus": str(DEV_CORPUS)}
    for name in names:
        precision, recall, f1 = scorer.summary(rows[name])
        figures[name] = {
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "pages_per_s": len(cases) / spent[name],
            "failed": failures[name],
        }
    if traf:
        for name, key in (("rypsok", "speed_ratio"), (COLD, "speed_ratio_cold")):
            figures[key] = figures[name]["pages_per_s"] / figures["trafilatura"]["pages_per_s"]
    return figures


def report_corpus(figures: dict[str, Any]) -> None:
    if "skipped" in figures:
        emit(f"corpus skipped: {figures['skipped']}")
        return
    emit(f"corpus {figures['corpus']}: {figures['pages']} pages, best of {figures['repeat']}")
    for name in ("rypsok", COLD, "trafilatura"):
        if name not in figures:
            emit("trafilatura: not importable here; run with a scratch venv to compare")
            continue
        row = figures[name]
        emit(
            f"{name:17s} P={row['precision']:.3f} R={row['recall']:.3f} F1={row['f1']:.3f}  "
            f"{row['pages_per_s']:.1f} pages/s  failed={len(row['failed'])}"
            + (f" ({', '.join(row['failed'])})" if row["failed"] else "")
        )
    if "speed_ratio" in figures:
        emit(f"speed ratio rypsok/trafilatura: {figures['speed_ratio']:.2f}x")
        emit(f"speed ratio {COLD}/trafilatura: {figures['speed_ratio_cold']:.2f}x")


# -- sizes: linear in page size, the 5 MiB and hostile pages ---------------------------------


def paragraphs_page(size: int) -> str:
    unit = "<p>A paragraph of an article, with a comma, and words enough to be kept as text.</p>"
    body = unit * (size // len(unit))
    return f"<!DOCTYPE html><html><head><title>Paragraphs</title></head><body>{body}</body></html>"


def size_figures(repeat: int) -> dict[str, Any]:
    from bench.fetch import (  # noqa: PLC0415 - the page builders of the fetch benchmark
        HOSTILE_ATTRIBUTES,
        PAGE_BYTES,
        hostile_page,
        realistic_page,
        script_heavy_page,
    )

    pages = {
        "3 MB of paragraphs": paragraphs_page(THREE_MB),
        "1 MB of paragraphs": paragraphs_page(THREE_MB // 3),
        "realistic 5 MiB": realistic_page(PAGE_BYTES).decode(),
        "script-heavy 5 MiB": script_heavy_page(PAGE_BYTES).decode(),
        f"hostile: one tag of {HOSTILE_ATTRIBUTES:,} attributes": hostile_page(
            HOSTILE_ATTRIBUTES
        ).decode(),
    }
    figures: dict[str, Any] = {}
    for label, html in pages.items():
        best = float("inf")
        outcome = "complete"
        for _ in range(max(1, min(repeat, 3))):
            start = time.perf_counter()
            try:
                outcome = "partial" if extract_html(html, base_url=CORPUS_URL).partial else ""
            except ExtractionFailed as failure:  # the hostile tag is cut with what follows it
                outcome = f"extraction_failed ({failure.args[0]})"
            best = min(best, time.perf_counter() - start)
        figures[label] = {"bytes": len(html.encode()), "seconds": best, "outcome": outcome}
    return figures


def report_sizes(figures: dict[str, Any]) -> None:
    for label, row in figures.items():
        emit(
            f"{label:40s} {row['bytes'] / 1e6:6.2f} MB  {row['seconds'] * 1000:8.1f} ms  "
            f"{row['seconds'] * 1e9 / row['bytes']:6.1f} ns/byte" + f"  {row['outcome']}"
        )


async def run(quick: bool) -> dict[str, Any]:
    """`python -m bench extraction`: the corpus comparison and the size figures."""
    repeat = 1 if quick else 5
    figures = {"corpus": corpus_figures(repeat), "sizes": size_figures(repeat)}
    report_corpus(figures["corpus"])
    emit()
    report_sizes(figures["sizes"])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30, help="timed runs per page")
    parser.add_argument("--scales", default="1,4,16,64", help="article repetitions")
    args = parser.parse_args(argv)
    traf = trafilatura_extractor()
    if traf is None:
        print("note: trafilatura is not importable here; its columns are skipped.")
        print("      Run with /tmp/extract-bench-venv/bin/python to compare.\n")
    else:
        import trafilatura  # noqa: PLC0415

        print(f"trafilatura {trafilatura.__version__}\n")
    emit("## Development corpus: F1 and pages/s\n")
    report_corpus(corpus_figures(max(1, args.repeat // 6)))
    emit("\n## Sizes\n")
    report_sizes(size_figures(args.repeat))
    pages = load_corpus()
    print("\n## Fixtures: quality and speed\n")
    print("\n".join(quality_table(pages, traf, args.repeat)))
    print("\n## Scaled pages: linearity\n")
    factors = [int(factor) for factor in args.scales.split(",")]
    print("\n".join(linearity_table(pages, traf, args.repeat, factors)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
