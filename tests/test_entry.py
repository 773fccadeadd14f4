"""The entry point starts `serve` under the allocator settings the memory ceiling assumes."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Callable

import pytest

from rypsok.entry import ALLOCATOR, wants_allocator
from tests.support import SERVE, child_env

GLIBC_LINUX = sys.platform.startswith("linux") and os.confstr("CS_GNU_LIBC_VERSION").startswith(
    "glibc"
)
needs_glibc = pytest.mark.skipif(not GLIBC_LINUX, reason="glibc's settings exist on glibc only")


def _without_malloc(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}


def _environ_of(pid: int) -> dict[str, str]:
    raw = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
    pairs = (entry.decode(errors="replace").partition("=") for entry in raw.split(b"\0") if entry)
    return {name: value for name, _, value in pairs}


def _served_environ(env: dict[str, str]) -> tuple[dict[str, str], bool]:
    """The environment of a `rypsok serve` once it answers `initialize`, and its pid kept."""
    process = subprocess.Popen(
        SERVE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    pid = process.pid
    assert process.stdin is not None and process.stdout is not None
    try:
        initialize = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "rypsok-tests", "version": "0"},
            },
        }
        process.stdin.write(json.dumps(initialize).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 0  # answered: past any exec
        return _environ_of(pid), process.pid == pid and process.poll() is None
    finally:
        process.kill()
        process.communicate()


@needs_glibc
@pytest.mark.req("REQ-PERF-003")
def test_serve_runs_under_the_allocator_settings_in_the_same_process() -> None:
    """REQ-PERF-003: `rypsok serve` answers from a process whose environment has ALLOCATOR."""
    environ, same_pid = _served_environ(_without_malloc(child_env()))
    assert same_pid
    assert {name: environ.get(name) for name in ALLOCATOR} == dict(ALLOCATOR)


@needs_glibc
@pytest.mark.req("REQ-PERF-003")
def test_an_operators_own_malloc_setting_is_kept_and_nothing_added() -> None:
    """REQ-PERF-003: any MALLOC_ setting of the operator wins; serve adds none of its own."""
    env = {**_without_malloc(child_env()), "MALLOC_ARENA_MAX": "4"}
    environ, _ = _served_environ(env)
    assert environ["MALLOC_ARENA_MAX"] == "4"
    assert not {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} & environ.keys()


@pytest.mark.req("REQ-PERF-003")
@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["rypsok", "serve", "--transport", "http"], {}, GLIBC_LINUX),
        (["rypsok", "check"], {}, False),
        (["rypsok", "--version"], {}, False),
        (["rypsok", "serve"], {"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}, False),
        (["rypsok", "serve"], {"MALLOC_TOP_PAD_": "0"}, False),
    ],
)
def test_only_serve_without_settings_starts_again(
    argv: list[str], environ: dict[str, str], expected: bool
) -> None:
    """REQ-PERF-003: check and --version hold no pages; set tunables are the operator's."""
    assert wants_allocator(argv, environ) is expected


ROOT = pathlib.Path(__file__).resolve().parent.parent


def _image_env() -> dict[str, str]:
    """The container image's environment lines (tools/image.py, `ENV = [...]`)."""
    source = (ROOT / "tools" / "image.py").read_text(encoding="utf-8")
    block = source.split("\nENV = [", 1)[1].split("\n]", 1)[0]
    lines = [line.strip().rstrip(",").strip('"') for line in block.splitlines()]
    pairs = (line.partition("=") for line in lines if line and not line.startswith("#"))
    return {name: value for name, _, value in pairs}


def _unit_env() -> dict[str, str]:
    """The `Environment=` assignments of the documented systemd unit."""
    unit = ROOT / "docs" / "book" / "examples" / "cluster" / "rypsok@.service"
    found: dict[str, str] = {}
    for line in unit.read_text(encoding="utf-8").splitlines():
        if line.startswith("Environment="):
            for assignment in line.removeprefix("Environment=").split():
                name, _, value = assignment.partition("=")
                found[name] = value
    return found


@pytest.mark.req("REQ-PERF-003")
@pytest.mark.parametrize("where", [_image_env, _unit_env], ids=["image", "systemd unit"])
def test_the_image_and_the_unit_set_the_same_allocator_settings(
    where: Callable[[], dict[str, str]],
) -> None:
    """REQ-PERF-003: the shipped environments set ALLOCATOR, so serve never starts twice."""
    environ = where()
    assert {name: environ.get(name) for name in ALLOCATOR} == dict(ALLOCATOR)
    assert not wants_allocator(["rypsok", "serve"], environ)
