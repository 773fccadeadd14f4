"""Scanning a text with the rules: candidates, merged findings, masks, percent-decoding."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from rypsok.core.privacy.extractors import Span
from rypsok.core.privacy.kinds import MASK_OPENING, CredentialFinding
from rypsok.core.privacy.rules import RULES, Rule


def find_credentials(text: str) -> tuple[CredentialFinding, ...]:
    """Every credential in `text`, sorted by start, overlapping candidates merged."""
    candidates = list(_candidates(text))
    decoded = _percent_decoded(text)
    if decoded is not None:
        candidates.extend(decoded.to_original(candidate) for candidate in _candidates(decoded.text))
    return _merge(candidates)


def mask_credentials(text: str, findings: Sequence[CredentialFinding]) -> str:
    """`text` with each finding replaced by `[masked:<kind>]`; nothing of a value stays.

    Findings may come in any order; where two overlap, one marker covers both.
    """
    pieces: list[str] = []
    cursor = 0
    for finding in sorted(findings, key=lambda finding: finding.start):
        end = finding.start + finding.length
        if end > len(text):
            raise ValueError("a finding lies outside the text it is applied to")
        if finding.start < cursor:
            cursor = max(cursor, end)
            continue
        pieces.append(text[cursor : finding.start])
        pieces.append(f"{MASK_OPENING}{finding.kind}]")
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


@dataclass(frozen=True, slots=True)
class _Candidate:
    start: int
    end: int
    rank: int  # index of the rule: lower is more specific and names a merged finding


def _candidates(text: str) -> Iterator[_Candidate]:
    for rank, rule in enumerate(RULES):
        for start, end in _spans(rule, text):
            yield _Candidate(start, end, rank)


def _spans(rule: Rule, text: str) -> Iterator[Span]:
    position = 0
    while (match := rule.pattern.search(text, position)) is not None:
        span = rule.extract(match)
        if span is None:
            # A rejected match may hide an accepted one that starts inside it.
            position = match.start() + 1
            continue
        yield span
        position = max(span[1], match.start() + 1)


def _merge(candidates: list[_Candidate]) -> tuple[CredentialFinding, ...]:
    """One finding per group of overlapping candidates, covering all of them."""
    findings: list[CredentialFinding] = []
    group: list[_Candidate] = []
    group_end = -1
    for candidate in sorted(candidates, key=lambda c: (c.start, c.rank)):
        if group and candidate.start >= group_end:
            findings.append(_finding(group, group_end))
            group = []
        group_end = max(group_end, candidate.end) if group else candidate.end
        group.append(candidate)
    if group:
        findings.append(_finding(group, group_end))
    return tuple(findings)


def _finding(group: list[_Candidate], end: int) -> CredentialFinding:
    namer = min(group, key=lambda c: (c.rank, c.start - c.end))
    start = group[0].start
    return CredentialFinding(RULES[namer.rank].kind, start, end - start)


# -- the percent-decoded reading of a URL -------------------------------------------------

# Only ASCII escapes: every detected format is ASCII, and a decoded byte >= 0x80 is
# part of a UTF-8 sequence that cannot belong to one.
_ASCII_ESCAPE = re.compile(r"%([0-7][0-9A-Fa-f])")


@dataclass(frozen=True, slots=True)
class _DecodedText:
    text: str
    origins: tuple[int, ...]  # where each decoded character starts in the original, then its end

    def to_original(self, candidate: _Candidate) -> _Candidate:
        return _Candidate(
            self.origins[candidate.start], self.origins[candidate.end], candidate.rank
        )


def _percent_decoded(text: str) -> _DecodedText | None:
    if "%" not in text:
        return None
    pieces: list[str] = []
    origins: list[int] = []
    cursor = 0
    for escape in _ASCII_ESCAPE.finditer(text):
        pieces.append(text[cursor : escape.start()])
        origins.extend(range(cursor, escape.start()))
        pieces.append(chr(int(escape.group(1), 16)))
        origins.append(escape.start())
        cursor = escape.end()
    if cursor == 0:
        return None
    pieces.append(text[cursor:])
    origins.extend(range(cursor, len(text) + 1))
    return _DecodedText("".join(pieces), tuple(origins))
