"""The release files install without a clone and without a registry, and the first tutorial runs.

One session-scoped fixture builds the wheel from this tree (offline, no build
isolation) and lays out what a user downloads: the offline bundle `make dist`
wrote (its rypsok wheel replaced by the fresh one), the tutorial's example
program and host entry. Then the tutorial's own command files run under bash,
exactly as the book shows them, in a fresh home folder: a fresh virtual
environment installed with `--no-index`, the installed `rypsok` command, and
a host-like MCP client over stdio whose searches are answered by local fake
providers that an explicit egress allow rule admits.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from rypsok import __version__
from tests.fakes.provider_server import ProviderServer, Route
from tests.support import ENGINE_PATHS, OK_FIXTURES, child_env, engines_toml

ROOT = pathlib.Path(__file__).resolve().parents[1]
DIST = ROOT / "dist"
FIRST_STEPS = ROOT / "docs" / "book" / "examples" / "first-steps"
HOSTS = ROOT / "docs" / "book" / "examples" / "hosts"
BUNDLE_NAME = re.compile(r"--find-links \./(offline-[\w.-]+)")
INSTALL_TIMEOUT_S = 240
# The first test that asks for the release pays for the build and the install.
pytestmark = pytest.mark.timeout(2 * INSTALL_TIMEOUT_S)


def _run_dist(*args: str) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "dist.py"), *args],
        check=True,
        capture_output=True,
        timeout=INSTALL_TIMEOUT_S,
    )


def _bundle_folder() -> pathlib.Path:
    """The offline bundle `make dist` wrote, under the name the tutorial uses."""
    match = BUNDLE_NAME.search((FIRST_STEPS / "install.sh").read_text(encoding="utf-8"))
    assert match is not None, "install.sh installs from an offline bundle folder"
    bundle = DIST / match.group(1)
    if not bundle.is_dir():
        pytest.fail(f"{bundle} is missing: run `make dist` first (`make test` does)")
    return bundle


@dataclass(frozen=True)
class Release:
    wheel: pathlib.Path
    sdist: pathlib.Path
    work: pathlib.Path  # the user's download folder: bundle, example program, host entry
    home: pathlib.Path
    install: subprocess.CompletedProcess[str]

    def env(self, config: pathlib.Path | None = None) -> dict[str, str]:
        return _user_env(self.home, config)


def _user_env(home: pathlib.Path, config: pathlib.Path | None) -> dict[str, str]:
    """A user's shell: their own home, ~/.local/bin on PATH, not the gate's virtual environment."""
    path = f"{home / '.local' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    env = child_env(config, HOME=str(home), PATH=path)
    env.pop("VIRTUAL_ENV", None)
    return env


@pytest.fixture(scope="session")
def release() -> Iterator[Release]:
    with tempfile.TemporaryDirectory(prefix="rypsok-release-") as tmp:
        top = pathlib.Path(tmp)
        built = top / "built"
        _run_dist("--no-bundle", "--out", str(built))
        (wheel,) = built.glob("rypsok-*.whl")
        (sdist,) = built.glob("rypsok-*.tar.gz")
        work, home = top / "work", top / "home"
        home.mkdir()
        bundle = work / _bundle_folder().name
        shutil.copytree(_bundle_folder(), bundle)
        for old in bundle.glob("rypsok-*.whl"):
            old.unlink()
        shutil.copy2(wheel, bundle / wheel.name)
        shutil.copy2(FIRST_STEPS / "first_search.py", work)
        shutil.copy2(HOSTS / "claude_desktop_config.json", work)
        install = _bash(FIRST_STEPS / "install.sh", work, home)
        yield Release(wheel, sdist, work, home, install)


def _bash(
    script: pathlib.Path, work: pathlib.Path, home: pathlib.Path
) -> subprocess.CompletedProcess[str]:
    """A tutorial's command file as a user runs it, with no configuration (zero-config)."""
    return subprocess.run(
        ["bash", "-euo", "pipefail", str(script)],  # noqa: S607 (a user's bash, from PATH)
        cwd=work,
        env=_user_env(home, None),
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )


@pytest.mark.req("REQ-DEP-005", "REQ-OPS-001", "REQ-DEP-001")
def test_the_wheel_installs_offline_from_the_bundle_and_prints_its_version(
    release: Release,
) -> None:
    """REQ-DEP-005: the wheel installs with --no-index from the bundle; --version prints it."""
    assert release.install.returncode == 0, release.install.stderr[-3000:]
    assert f"rypsok {__version__}\n" in release.install.stdout
    assert release.wheel.name == f"rypsok-{__version__}-py3-none-any.whl"
    installed = release.home / ".local" / "share" / "rypsok" / "bin" / "rypsok"
    assert installed.is_file()
    assert (release.home / ".local" / "bin" / "rypsok").resolve() == installed.resolve()


@pytest.mark.req("REQ-DOC-002", "REQ-DOC-001", "REQ-OPS-003")
def test_the_first_tutorials_check_lists_the_keyless_engines(release: Release) -> None:
    """REQ-DOC-002: install.sh's `rypsok check`, with no configuration, lists active engines."""
    assert "configuration OK" in release.install.stdout
    assert re.search(r"engine wikipedia: active", release.install.stdout), release.install.stdout


@pytest.mark.req("REQ-DOC-002", "REQ-DOC-001", "REQ-DEP-001", "REQ-MCP-001")
async def test_the_first_tutorial_runs_end_to_end_against_fake_providers(
    release: Release, tmp_path: pathlib.Path
) -> None:
    """REQ-DOC-002: try.sh's host-like client starts the installed rypsok over stdio, searches."""
    routes = {path: Route.fixture(e, OK_FIXTURES[e]) for e, path in ENGINE_PATHS.items()}
    async with ProviderServer(routes) as server:
        config = tmp_path / "rypsok.toml"
        config.write_text(engines_toml(server.base_url), encoding="utf-8")
        done = await anyio.run_process(
            ["bash", "-euo", "pipefail", str(FIRST_STEPS / "try.sh")],
            cwd=release.work,
            env=release.env(config),
            check=False,
        )
        asked = [request.path for request in server.requests]
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert out.startswith("tools: web_search, web_fetch, engine_status\n")
    assert "outcome: ok\n" in out
    assert re.search(r"^1\. .+\n   https?://", out, re.MULTILINE), out
    assert asked and set(asked) <= set(ENGINE_PATHS.values()), "every search reached the fakes"


@pytest.mark.req("REQ-DEP-005")
def test_the_bundle_holds_a_wheel_of_every_runtime_pin_and_sha256sums_match() -> None:
    """REQ-DEP-005: each run.lock pin has a wheel in the bundle; SHA256SUMS lists all of dist/."""
    bundle = _bundle_folder()
    held = {_wheel_key(p.name) for p in bundle.glob("*.whl")}
    for line in (ROOT / "requirements" / "run.lock").read_text(encoding="utf-8").splitlines():
        # An environment marker (`; python_version < "3.14"`) is not part of the pin.
        name, version = line.split(";")[0].strip().split("==")
        assert (_normalized(name), version) in held, f"{line} has no wheel in {bundle.name}"
    listed = {}
    for line in (DIST / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
        assert hashlib.sha256((DIST / name).read_bytes()).hexdigest() == digest, name
    on_disk = {p.relative_to(DIST).as_posix() for p in DIST.rglob("*") if p.is_file()}
    assert on_disk - {"SHA256SUMS"} <= set(listed), "a file in dist/ is missing from SHA256SUMS"


@pytest.mark.req("REQ-DEP-005")
def test_wheel_and_sdist_are_reproducible(release: Release, tmp_path: pathlib.Path) -> None:
    """REQ-DEP-005: a second build with the same SOURCE_DATE_EPOCH gives the same bytes."""
    _run_dist("--no-bundle", "--out", str(tmp_path))
    assert (tmp_path / release.wheel.name).read_bytes() == release.wheel.read_bytes()
    assert (tmp_path / release.sdist.name).read_bytes() == release.sdist.read_bytes()


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _wheel_key(filename: str) -> tuple[str, str]:
    name, version = filename.split("-")[:2]
    return _normalized(name), version
