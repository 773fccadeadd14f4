"""The names and sealed values of everything rypsok keeps in Redis (issue 12, REQ-CACHE-007).

Every key is `<key_prefix><kind>:<HMAC-SHA256 of its parts under [cache] hmac_key>`,
so a dump of Redis shows neither a query, a caller, an engine nor a URL: a
reader without the HMAC key can at most confirm a guess it can already make
with the key, never list what was asked. Cache values are sealed with AES-GCM
under a key derived from the same secret, bound to their key name (a value
copied to another key does not open).

Kinds:

    c   one engine's answer for one caller and one request      (string, PX ttl_s)
    ci  the entries of one caller namespace, oldest first       (sorted set, bounds LIM-K3)
    s   one engine's spacing state: next start, factor, pauses  (hash)
    l   one caller's admitted calls of one tool, last minute    (sorted set)
    u   the URLs rypsok returned (strict mode, REQ-SEC-021)     (sorted set of HMAC names,
        one per deployment, bounded and trimmed to their lifetime)
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass

from rypsok.core.engines.base import RawHit, SearchParams

_NONCE_BYTES = 12
# Separate purposes of one operator secret: naming keys and sealing values.
_NAMING = b"rypsok cache key names v1"
_SEALING = b"rypsok cache value seal v1"


def params_material(engine: str, endpoint: str, params: SearchParams) -> list[object]:
    """Everything an engine's request depends on, in a fixed order (REQ-CACHE-003).

    The engine and its endpoint, then every field of `SearchParams`, the only
    input a driver's `build_request` has: the query as sent, category,
    language, time range, result count, region, safe search and contact.
    """
    return [
        engine,
        endpoint,
        params.query,
        params.category.value,
        params.language,
        params.time_range.value if params.time_range else None,
        params.results,
        params.region,
        params.safe_search.value,
        params.contact,
    ]


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """Key names under one prefix and one HMAC key."""

    prefix: str
    secret: bytes

    def _name(self, kind: str, parts: list[object]) -> str:
        material = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
        naming_key = hmac.new(self.secret, _NAMING, hashlib.sha256).digest()
        digest = hmac.new(naming_key, material.encode("utf-8", "surrogatepass"), hashlib.sha256)
        return f"{self.prefix}{kind}:{digest.hexdigest()}"

    def entry(self, namespace: str, engine: str, endpoint: str, params: SearchParams) -> str:
        return self._name("c", [namespace, *params_material(engine, endpoint, params)])

    def entry_index(self, namespace: str) -> str:
        return self._name("ci", [namespace])

    def spacing(self, engine: str, endpoint: str) -> str:
        return self._name("s", [engine, endpoint])

    def calls(self, caller: str, tool: str) -> str:
        return self._name("l", [caller, tool])

    def returned_urls(self) -> str:
        return self._name("u", ["returned urls"])

    def returned_url(self, url: str) -> str:
        """A member of `returned_urls()`: the URL's HMAC, never the URL."""
        return self._name("r", [url]).removeprefix(self.prefix)


class Sealer:
    """AES-GCM over cache values; the key name is the associated data."""

    def __init__(self, secret: bytes) -> None:
        # Imported here: only the Redis backend seals, and the import costs start-up time.
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

        self._aead = AESGCM(hmac.new(secret, _SEALING, hashlib.sha256).digest())

    def seal(self, key: str, plain: bytes) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        return nonce + self._aead.encrypt(nonce, plain, key.encode("ascii"))

    def open(self, key: str, sealed: bytes) -> bytes | None:
        """The plain value, or None when it was not sealed by this key for this name."""
        if len(sealed) <= _NONCE_BYTES:
            return None
        from cryptography.exceptions import InvalidTag  # noqa: PLC0415

        try:
            return self._aead.decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:],
                                      key.encode("ascii"))  # fmt: skip
        except InvalidTag:
            return None


def hits_to_bytes(hits: tuple[RawHit, ...]) -> bytes:
    rows = [[h.rank, h.url, h.title, h.snippet, h.date] for h in hits]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def hits_from_bytes(data: bytes) -> tuple[RawHit, ...] | None:
    """The hits of a stored value, or None when it is not one (never an exception)."""
    try:
        rows = json.loads(data)
        return tuple(
            RawHit(rank=int(r[0]), url=str(r[1]), title=str(r[2]), snippet=str(r[3]),
                   date=None if r[4] is None else str(r[4]))
            for r in rows
        )  # fmt: skip
    except (ValueError, TypeError, IndexError):
        return None
