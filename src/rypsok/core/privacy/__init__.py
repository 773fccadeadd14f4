"""The credential check: high-confidence credential formats in a query or a URL.

Contract (REQ-PRIV-002, REQ-SEARCH-006, REQ-LIFE-001):

- `find_credentials(text)` returns every span of `text` that holds a credential in
  one of the formats named by `CredentialKind`, sorted by `start` and never
  overlapping. Positions and lengths count Unicode scalar values (LIM-U1), which is
  what a Python `str` indexes.
- `mask_credentials(text, findings)` replaces each finding by `[masked:<kind>]` and
  keeps every other character as it was.
- A finding names a kind and a position, never the value: not in its fields, not in
  its `repr` (REQ-PRIV-004, REQ-ERR-004). The value stays in the caller's text.
- The caller decides what a finding means under the operator's mode (LIM-P1); this
  module only detects and masks.

What counts as high-confidence: a registered prefix with a fixed alphabet and length
(`ghp_…`, `AKIA…`), a structure that is checked, not guessed (a JWT header that
decodes to JSON with `alg`, a Discord token whose first part decodes to a numeric
id), a private-key block with base64 key material (a header followed by prose is a
question), a password in a URL's userinfo, a value in a field that names itself a
secret (`AccountKey=`, `Authorization: Bearer`, `?api_key=`), or a value that looks
generated (long, mixed, random by a runs test) under a parameter name that says
credential (`?token=`, `?key=`, `?sig=`). Documentation placeholders
(`AKIAXXXXXXXXXXXXXXXX`, `…EXAMPLE`, `user:password@`, `<token>`) are not credentials
and pass. Personal data is not detected. `docs/credential-check.md` lists the formats
and what is left out.

A URL may carry a credential percent-encoded (`?next=https%3A%2F%2Fu%3Ap%40h`), so
the text is also read with its ASCII percent-escapes decoded; positions still refer
to the text as given.

Bounded work: every pattern starts at a literal or behind a boundary that a run of
its own characters cannot satisfy, and repeats only through possessive or
unambiguous quantifiers, so a scan is linear in the length of the text.

The check is split by concern, each module importing only the ones above it:
`kinds` (the vocabulary and the finding), `values` (what a value must look like:
placeholders, filler, entropy, the runs test, base64 and JOSE decoding),
`extractors` (from a pattern match to the span to report), `rules` (the
patterns, most specific first) and `scan` (finding, merging, masking and the
percent-decoded reading).
"""

from rypsok.core.privacy.kinds import CredentialFinding, CredentialKind, CredentialMode
from rypsok.core.privacy.scan import find_credentials, mask_credentials

__all__ = [
    "CredentialFinding",
    "CredentialKind",
    "CredentialMode",
    "find_credentials",
    "mask_credentials",
]
