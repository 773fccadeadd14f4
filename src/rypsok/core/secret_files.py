"""Who else can read or replace a secret file: judged at `check` and `serve` (issue 15 item 5).

A secret given as `{ file = "path" }` (an engine's API key, an HTTP key, the TLS
private key, the Redis URL, the cache's HMAC key) is only as private as the file's
permissions. On POSIX systems, with `mode` the file's permission bits:

- writable by its group or by others: **refused**. Anyone who can write it can
  replace an HTTP key with their own, or the TLS key with one they hold.
- owned by a user other than root and readable by its group or others:
  **refused**. The operator who made it can make it owner-only (`chmod 600`),
  as `ssh` asks of a private key.
- owned by root, readable by its group only (mode 0640 or tighter): accepted,
  as PostgreSQL accepts its server key: the group is how a service user reads a
  file root owns.
- owned by root and readable by others (0644, 0444): accepted with a warning.
  This is how container runtimes mount secrets by default (Docker's 0444,
  Kubernetes' 0644 `defaultMode`), where rypsok runs as an unprivileged user
  that reads the file through the "others" bits; on a shared host it is a leak,
  and the warning says so.

The certificate (`http.tls_cert`) is public and not judged. A file that does
not exist is left to the resolver, which reports it. Symbolic links are
followed: what counts is the file that is read. On Windows there are no POSIX
permission bits (`os.stat` reports 0o666 or 0o444 whatever the ACLs say), so
nothing is judged there; docs/configuration.md says how to restrict the ACLs.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel

from rypsok.core.config import Config, SecretRef

# Public by nature: a certificate is sent to every client.
_NOT_SECRET = frozenset({"http.tls_cert"})
_GROUP_OR_OTHERS = 0o077
_WRITABLE_BY_GROUP_OR_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_READABLE_BY_OTHERS = stat.S_IROTH
_ROOT = 0


@dataclass(frozen=True, slots=True)
class SecretFileVerdicts:
    refusals: tuple[str, ...]  # each stops `check` and `serve` (exit 1)
    warnings: tuple[str, ...]  # logged at start-up


def judge_secret_files(config: Config, *, platform: str = os.name) -> SecretFileVerdicts:
    """Every `{ file = … }` secret of `config`, judged by its permissions (POSIX only)."""
    if platform == "nt":
        return SecretFileVerdicts((), ())
    refusals: list[str] = []
    warnings: list[str] = []
    for key, path in _secret_files(config, ""):
        verdict = _judge(key, path)
        if verdict is not None:
            (refusals if verdict[0] else warnings).append(verdict[1])
    return SecretFileVerdicts(tuple(refusals), tuple(warnings))


def _secret_files(node: object, where: str) -> Iterator[tuple[str, str]]:
    """(key, path) of each file reference under `node`, `where` being its key."""
    if isinstance(node, SecretRef):
        if node.file is not None and where not in _NOT_SECRET:
            yield where, node.file
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _secret_files(getattr(node, name), f"{where}.{name}" if where else name)
    elif isinstance(node, Mapping):
        for name, value in node.items():
            yield from _secret_files(value, f"{where}.{name}")
    elif isinstance(node, tuple | list):
        for index, value in enumerate(node):
            yield from _secret_files(value, f"{where}[{index}]")


def _judge(key: str, path: str) -> tuple[bool, str] | None:
    """(refused?, words) for a file others may read or write; None when it is private."""
    try:
        status = os.stat(path)
    except OSError:
        return None  # missing or unreadable: the resolver's message covers it
    mode = stat.S_IMODE(status.st_mode)
    if not mode & _GROUP_OR_OTHERS:
        return None
    shown = f"key '{key}': the secret file {path} (mode {mode:04o}"
    if mode & _WRITABLE_BY_GROUP_OR_OTHERS:
        return True, (
            f"{shown}) can be changed by other users, who could replace the secret; "
            f"make it writable by its owner only (chmod go-w {path})"
        )
    if status.st_uid != _ROOT:
        return True, (
            f"{shown}, owner uid {status.st_uid}) can be read by other users; "
            f"make it private to its owner (chmod 600 {path}), or owned by root with "
            "mode 0640 and the group of rypsok's user"
        )
    if mode & _READABLE_BY_OTHERS:
        return False, (
            f"{shown}, owned by root) can be read by every user of this system; that is "
            "how container runtimes mount secrets, but on a shared host use mode 0640 "
            "with the group of rypsok's user, or 0600"
        )
    return None
