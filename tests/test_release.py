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
import importlib.metadata
import importlib.util
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import anyio
import pytest
import yaml
from packaging.requirements import Requirement

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


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"rypsok_tool_{name}", ROOT / "tools" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


IMAGE = _tool("image")
DIST_TOOL = _tool("dist")
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def _release_workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return document


@pytest.mark.req("REQ-DEP-005")
def test_the_release_workflow_builds_each_architecture_on_its_own_machine() -> None:
    """REQ-DEP-005: by hand or on a tag without `v`, amd64 on an x86_64 runner and arm64 on an
    aarch64 one (ubuntu-24.04-arm), each with the bundle of its machine; each builds the image
    twice and compares, starts it, checks SHA256SUMS and uploads dist/ with both."""
    workflow = _release_workflow()
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads `on` as True
    assert isinstance(triggers, dict) and set(triggers) == {"workflow_dispatch", "push"}
    (tag_pattern,) = triggers["push"]["tags"]
    assert set(triggers["push"]) == {"tags"} and not tag_pattern.startswith("v")
    job = workflow["jobs"]["image"]
    runners = {entry["arch"]: entry for entry in job["strategy"]["matrix"]["include"]}
    assert {arch: entry["os"] for arch, entry in runners.items()} == {
        "amd64": "ubuntu-24.04",
        "arm64": "ubuntu-24.04-arm",
    }
    for arch, entry in runners.items():
        # The bundle's machine is the image's machine: the names of the two tools agree.
        assert DIST_TOOL.MACHINE_OF_PLATFORM[entry["platform"]] == IMAGE.MACHINE[arch]
    runs = [step.get("run", "") for step in job["steps"]]
    order = [
        "make dist PLATFORM=${{ matrix.platform }}",
        "make image-repro ARCH=${{ matrix.arch }}",
        "make image-check ARCH=${{ matrix.arch }}",
        "sha256sum -c SHA256SUMS",
    ]
    found = [next(i for i, run in enumerate(runs) if wanted in run) for wanted in order]
    assert found == sorted(found), runs
    upload = job["steps"][-1]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "dist/" and upload["with"]["if-no-files-found"] == "error"


@pytest.mark.req("REQ-DEP-005")
@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_make_image_repro_builds_twice_for_the_architecture_asked(arch: str) -> None:
    """REQ-DEP-005: `make image-repro ARCH=…` runs the two-build comparison for that machine
    and passes the snapshot mirror on (shown by `make -n`, which builds nothing)."""
    shown = subprocess.run(
        ["make", "-n", "image-repro", f"ARCH={arch}", "MIRROR=http://mirror.test/debian"],  # noqa: S607
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert f"tools/image.py --check-reproducible --arch {arch}" in shown, shown
    assert '--mirror "http://mirror.test/debian"' in shown, shown


def _rootfs_tar(path: pathlib.Path, files: dict[str, bytes], mtime: int) -> pathlib.Path:
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as rootfs:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            rootfs.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.req("REQ-DEP-005")
def test_the_image_archive_of_one_root_file_system_is_byte_equal_across_builds(
    tmp_path: pathlib.Path,
) -> None:
    """REQ-DEP-005: the OCI layout around a root file system (layer, config, manifest, index,
    the archive's own entries) depends on the root and SOURCE_DATE_EPOCH only: written twice,
    seconds apart, it is byte-equal; the comparison names a path whose time differs."""
    files = {"./etc/passwd": b"rypsok:x:10001:10001::/nonexistent:/usr/sbin/nologin\n"}
    rootfs = _rootfs_tar(tmp_path / "rootfs.tar", files, mtime=1_700_000_000)
    first, second = tmp_path / "first.tar", tmp_path / "second.tar"
    IMAGE.write_archive(rootfs, "arm64", "1700000000", first)
    time.sleep(1.1)  # the layout's files get other times on disk; the archive must not show it
    IMAGE.write_archive(rootfs, "arm64", "1700000000", second)
    assert first.read_bytes() == second.read_bytes()
    assert IMAGE.differing_members(first, second) == []
    with tarfile.open(first) as packed:
        index = json.loads(packed.extractfile("index.json").read())  # type: ignore[union-attr]
        assert {m.mtime for m in packed.getmembers()} == {1_700_000_000}
    assert index["manifests"][0]["platform"] == {"architecture": "arm64", "os": "linux"}
    later = _rootfs_tar(tmp_path / "later.tar", files, mtime=1_700_000_001)
    IMAGE.write_archive(later, "arm64", "1700000000", second)
    assert IMAGE.differing_members(first, second) == ["./etc/passwd"]


@pytest.mark.req("REQ-DEP-005")
def test_the_image_bytecode_records_no_time_and_host_files_are_emptied() -> None:
    """REQ-DEP-005: what would differ between two builds of the root is made fixed: pip writes
    no bytecode, compileall writes unchecked-hash bytecode, the build host's resolv.conf and
    hostname are emptied."""
    hooks = IMAGE._customize_hooks(pathlib.Path("/bundle"))
    install = next(h for h in hooks if " install " in h)
    assert "--no-compile" in install
    assert any("compileall" in h and "--invalidation-mode unchecked-hash" in h for h in hooks)
    assert any('"$1/etc/resolv.conf"' in h and '"$1/etc/hostname"' in h for h in hooks)


@pytest.mark.req("REQ-DEP-005", "REQ-DEP-001")
def test_the_run_lock_pins_what_the_oldest_supported_python_needs() -> None:
    """REQ-DEP-005: the offline bundle installs on every Python the wheel admits: each
    dependency that rypsok or a pinned package declares for Python 3.11.0 (requires-python's
    floor) is pinned in run.lock, also when the lock was frozen on a later 3.11 (redis needs
    async-timeout below 3.11.3, and Debian 12's Python, the image's, is 3.11.2)."""
    lock = {}
    for line in (ROOT / "requirements" / "run.lock").read_text(encoding="utf-8").splitlines():
        name, version = line.split(";")[0].strip().split("==")
        lock[_normalized(name)] = version
    oldest = {"python_version": "3.11", "python_full_version": "3.11.0", "extra": ""}
    missing = []
    for name in ["rypsok", *lock]:
        try:
            declared = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # pinned only for another Python than the gate's: its own needs are in lock
        for text in declared:
            needed = Requirement(text)
            applies = needed.marker is None or needed.marker.evaluate(oldest)
            if applies and _normalized(needed.name) not in lock:
                missing.append(f"{name} needs {needed}")
    assert missing == [], missing
