"""Build the OCI image archive from the release wheel (`make image`), and start it (`--check`).

    python tools/image.py [--arch amd64|arm64] [--mirror URL] # dist/rypsok-<version>-oci-<arch>.tar
    python tools/image.py --check-reproducible [--arch amd64]  # build twice, compare the bytes
    python tools/image.py --check [--arch amd64]

No container daemon and no base image from a registry: `mmdebstrap` (a Debian
package, run as root) makes a minimal Debian root file system from Debian
packages, the offline bundle of `make dist` is installed into /opt/rypsok in
it, and the OCI image layout (one layer, a config, a manifest, an index) is
written here with tarfile and JSON and packed as one archive, which is then
added to dist/SHA256SUMS. The image runs `rypsok serve --transport http` as
uid 10001, reads /etc/rypsok/rypsok.toml and secrets mounted under
/run/secrets, and writes nothing to its root file system (bytecode is
compiled at build time and PYTHONDONTWRITEBYTECODE is set).

The archive is byte-reproducible: with the same SOURCE_DATE_EPOCH (default: the
last commit's time), the same bundle and the same mirror content, two builds give
the same bytes. mmdebstrap sorts the root's tar, clamps its times to the epoch and
removes its logs, caches and machine id; the hooks below install without pip's
bytecode, compile hash-checked bytecode instead, drop pip and empty the build
host's resolv.conf and hostname; the layout's own files are packed in sorted order
with fixed times and owners. `--mirror` takes a mirror frozen at one date (a
snapshot of the Debian archive) for builds on different days. `--check-reproducible`
runs the build, then a second one in a fresh folder, and names the paths of the
root file system that differ when the bytes do.

`--check` unpacks the archive with umoci (a Debian package; an independent
reader of the layout), starts the image's entrypoint under chroot as the
image's user with a loopback configuration and a key, calls it over HTTP
(initialize with the key: 200 and rypsok's server info; without a key: 401),
stops it with SIGTERM and checks that no file of the root file system changed.
arm64 is built the same way on an aarch64 machine, as the release workflow
(.github/workflows/release.yml) does on GitHub's ubuntu-24.04-arm runner:
`make dist PLATFORM=manylinux2014_aarch64 && make image-repro image-check ARCH=arm64`.
None of this is in `make test`: it needs root, mmdebstrap and minutes per build.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import dist  # the sibling tool: SHA256SUMS and the build's epoch

ROOT = dist.ROOT
DIST = ROOT / "dist"
SUITE = "bookworm"  # its python3 is 3.11, the Python of the offline bundle
PYTHON_VERSION = "3.11"
MACHINE = {"amd64": "linux-x86_64", "arm64": "linux-aarch64"}
UID = 10001
CONFIG_PATH = "/etc/rypsok/rypsok.toml"
ENTRYPOINT = ["/opt/rypsok/bin/rypsok", "serve", "--transport", "http", "--config", CONFIG_PATH]
ENV = [
    "PATH=/opt/rypsok/bin:/usr/local/bin:/usr/bin:/bin",
    "PYTHONDONTWRITEBYTECODE=1",
    "PYTHONUNBUFFERED=1",
    "HOME=/nonexistent",
    # glibc's malloc settings of rypsok.entry.ALLOCATOR, set here so serve needs no second
    # start (docs/performance.md §13.2; tests/test_entry.py checks they are the same).
    "MALLOC_ARENA_MAX=2",
    "MALLOC_MMAP_THRESHOLD_=65536",
    "MALLOC_TRIM_THRESHOLD_=131072",
]
MEDIA = {
    "index": "application/vnd.oci.image.index.v1+json",
    "manifest": "application/vnd.oci.image.manifest.v1+json",
    "config": "application/vnd.oci.image.config.v1+json",
    "layer": "application/vnd.oci.image.layer.v1.tar+gzip",
}


def version() -> str:
    namespace: dict[str, Any] = {}
    exec((ROOT / "src" / "rypsok" / "__init__.py").read_text(encoding="utf-8"), namespace)  # noqa: S102 (our own file)
    return str(namespace["__version__"])


def archive_path(arch: str) -> pathlib.Path:
    return DIST / f"rypsok-{version()}-oci-{arch}.tar"


def _customize_hooks(bundle: pathlib.Path) -> list[str]:
    """Shell run by mmdebstrap with "$1" the new root; it mounts /dev and /proc for chroot."""
    passwd = f"rypsok:x:{UID}:{UID}:rypsok:/nonexistent:/usr/sbin/nologin"
    # env -i: the builder's PIP_* settings stay outside the image
    pip = 'chroot "$1" env -i PATH=/usr/bin:/bin PYTHONDONTWRITEBYTECODE=1 /opt/rypsok/bin/pip'
    steps = [
        f'mkdir -p "$1/tmp/bundle" && cp {bundle}/*.whl "$1/tmp/bundle/"',
        'chroot "$1" python3 -m venv /opt/rypsok',
        # --no-compile: pip's bytecode would record the sources' install time
        f"{pip} install --quiet --no-index --no-compile --disable-pip-version-check "
        "--find-links /tmp/bundle rypsok",
        # pip and setuptools came with the venv; rypsok needs neither at run time
        f"{pip} uninstall --quiet --yes pip setuptools",
        # unchecked-hash bytecode holds no time and stays valid when the packer clamps the
        # sources' times to SOURCE_DATE_EPOCH (timestamp bytecode would be stale); -f replaces
        # any bytecode an import wrote during the build; a fixed hash seed, because the order
        # of a frozenset of strings in the bytecode follows the string hashes
        'chroot "$1" env -i PATH=/usr/bin:/bin PYTHONHASHSEED=0 /opt/rypsok/bin/python '
        "-m compileall -q -f --invalidation-mode unchecked-hash /opt/rypsok",
        'rm -rf "$1/tmp/bundle" "$1/root/.cache"',
        f"echo '{passwd}' >> \"$1/etc/passwd\" && echo 'rypsok:x:{UID}:' >> \"$1/etc/group\"",
        'mkdir -p "$1/etc/rypsok" "$1/run/secrets"',
        'rm -rf "$1/var/cache/apt/"* "$1/var/lib/apt/lists/"* "$1/usr/share/doc/"* '
        '"$1/usr/share/man/"* "$1/var/log/"*',
        # mmdebstrap copies these from the build host; a container runtime mounts its own
        ': > "$1/etc/resolv.conf" && : > "$1/etc/hostname"',
    ]
    return [f"--customize-hook={step}" for step in steps]


def build_rootfs_tar(arch: str, work: pathlib.Path, epoch: str, mirror: str) -> pathlib.Path:
    """The root file system as a tar, made by mmdebstrap (reproducible with SOURCE_DATE_EPOCH)."""
    bundle = DIST / f"offline-{MACHINE[arch]}-py{PYTHON_VERSION}"
    if not any(bundle.glob("rypsok-*.whl")):
        raise SystemExit(f"image: {bundle} has no rypsok wheel: run `make dist` first")
    rootfs = work / "rootfs.tar"
    # With no mirror, mmdebstrap's default: Debian's main, updates and security suites as of
    # today. A mirror (a URL, a "deb ..." line or a sources.list file) frozen at one date, as
    # Debian's snapshot archive is, gives the same packages on any later day; its Release
    # files are past their Valid-Until by then.
    frozen = ['--aptopt=Acquire::Check-Valid-Until "false"'] if mirror else []
    subprocess.run(  # noqa: S603 (fixed arguments)
        ["mmdebstrap", "--quiet", "--variant=essential", f"--architectures={arch}",  # noqa: S607
         "--include=python3,python3-venv,ca-certificates", *frozen, *_customize_hooks(bundle),
         SUITE, str(rootfs), *([mirror] if mirror else [])],
        check=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": epoch},
    )  # fmt: skip
    return rootfs


def _blob(layout: pathlib.Path, data: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def image_config(arch: str, diff_id: str, epoch: str) -> dict[str, Any]:
    created = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).isoformat()
    return {
        "created": created.replace("+00:00", "Z"),
        "architecture": arch,
        "os": "linux",
        "config": {
            "User": f"{UID}:{UID}",
            "Entrypoint": ENTRYPOINT,
            "Env": ENV,
            "WorkingDir": "/",
            "ExposedPorts": {"8750/tcp": {}},
            "StopSignal": "SIGTERM",
            "Labels": {
                "org.opencontainers.image.title": "rypsok",
                "org.opencontainers.image.version": version(),
                "org.opencontainers.image.licenses": "Apache-2.0",
                "org.opencontainers.image.source": "https://github.com/rypsok/rypsok",
            },
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created.replace("+00:00", "Z"), "created_by": "tools/image.py"}],
    }


def write_archive(rootfs: pathlib.Path, arch: str, epoch: str, out: pathlib.Path) -> None:
    """The OCI image layout of one layer, packed as a tar with fixed order and times."""
    with tempfile.TemporaryDirectory() as tmp:
        layout = pathlib.Path(tmp)
        (layout / "blobs" / "sha256").mkdir(parents=True)
        raw = rootfs.read_bytes()
        layer = _blob(layout, gzip.compress(raw, compresslevel=6, mtime=0))
        diff_id = f"sha256:{hashlib.sha256(raw).hexdigest()}"
        config = _blob(layout, _json(image_config(arch, diff_id, epoch)))
        manifest = {
            "schemaVersion": 2,
            "mediaType": MEDIA["manifest"],
            "config": {"mediaType": MEDIA["config"], **config},
            "layers": [{"mediaType": MEDIA["layer"], **layer}],
        }
        manifest_blob = _blob(layout, _json(manifest))
        index = {
            "schemaVersion": 2,
            "mediaType": MEDIA["index"],
            "manifests": [{
                "mediaType": MEDIA["manifest"], **manifest_blob,
                "platform": {"architecture": arch, "os": "linux"},
                "annotations": {"org.opencontainers.image.ref.name": version()},
            }],
        }  # fmt: skip
        (layout / "index.json").write_bytes(_json(index))
        (layout / "oci-layout").write_bytes(_json({"imageLayoutVersion": "1.0.0"}))
        with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as archive:
            for path in sorted(layout.rglob("*")):
                info = archive.gettarinfo(str(path), path.relative_to(layout).as_posix())
                info.mtime, info.uid, info.gid, info.uname, info.gname = int(epoch), 0, 0, "", ""
                info.mode = 0o755 if path.is_dir() else 0o644
                with path.open("rb") if path.is_file() else io.BytesIO() as handle:
                    archive.addfile(info, handle if path.is_file() else None)


def _json(value: object) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def build_archive(arch: str, epoch: str, mirror: str, out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory(prefix="rypsok-image-") as tmp:
        rootfs = build_rootfs_tar(arch, pathlib.Path(tmp), epoch, mirror)
        write_archive(rootfs, arch, epoch, out)


def build(arch: str, mirror: str) -> int:
    epoch = dist.source_date_epoch()
    out = archive_path(arch)
    build_archive(arch, epoch, mirror, out)
    dist.write_sha256sums(DIST)
    sys.stderr.write(f"image: {out} ({out.stat().st_size // 1024} KiB), listed in SHA256SUMS\n")
    return 0


# -- reproducibility: build twice, compare the bytes -------------------------------------------


def _layer_members(archive: pathlib.Path) -> dict[str, tuple[object, ...]]:
    """Each member of the image's one layer: its metadata and the digest of its content."""
    with tarfile.open(archive) as packed:

        def read(name: str) -> bytes:
            member = packed.extractfile(name)
            assert member is not None, name  # noqa: S101 (our own layout)
            return member.read()

        def blob(digest: str) -> bytes:
            return read("blobs/sha256/" + digest.removeprefix("sha256:"))

        manifest = json.loads(blob(json.loads(read("index.json"))["manifests"][0]["digest"]))
        layer = gzip.decompress(blob(manifest["layers"][0]["digest"]))
    members: dict[str, tuple[object, ...]] = {}
    with tarfile.open(fileobj=io.BytesIO(layer)) as rootfs:
        for info in rootfs:
            content = rootfs.extractfile(info) if info.isfile() else None
            digest = hashlib.sha256(content.read()).hexdigest() if content else info.linkname
            members[info.name] = (info.type, info.mode, info.uid, info.gid, info.mtime, digest)
    return members


def differing_members(first: pathlib.Path, second: pathlib.Path) -> list[str]:
    """The layer's paths whose content or metadata differ, or that only one archive has."""
    a, b = _layer_members(first), _layer_members(second)
    return sorted(name for name in a.keys() | b.keys() if a.get(name) != b.get(name))


def check_reproducible(arch: str, mirror: str) -> int:
    """`make image`, then a second build in a fresh folder; 0 when the two are byte-equal."""
    epoch = dist.source_date_epoch()
    build(arch, mirror)
    first = archive_path(arch)
    with tempfile.TemporaryDirectory(prefix="rypsok-image-again-") as tmp:
        second = pathlib.Path(tmp) / first.name
        build_archive(arch, epoch, mirror, second)
        if first.read_bytes() == second.read_bytes():
            digest = hashlib.sha256(first.read_bytes()).hexdigest()
            sys.stderr.write(
                f"image: reproducible (SOURCE_DATE_EPOCH={epoch}): two builds of {first.name} "
                f"are byte-equal, sha256 {digest}\n"
            )
            return 0
        differing = differing_members(first, second)
    shown = ", ".join(differing[:20]) or "only the layout around the layer"
    sys.stderr.write(
        f"image: not reproducible (SOURCE_DATE_EPOCH={epoch}): {len(differing)} paths of "
        f"the root file system differ between two builds: {shown}\n"
    )
    return 1


# -- the check: unpack, start under chroot, call over HTTP -------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _tree_state(rootfs: pathlib.Path, skip: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """Every file's size and mtime, except the mounted configuration and secrets."""
    state = {}
    for path in rootfs.rglob("*"):
        relative = "/" + path.relative_to(rootfs).as_posix()
        if path.is_symlink() or relative.startswith(skip) or relative.startswith(("/proc", "/dev")):
            continue
        info = path.stat()
        state[relative] = (info.st_size, info.st_mtime_ns)
    return state


def _post(url: str, key: str | None, body: dict[str, Any]) -> tuple[int, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=_json(body), headers=headers, method="POST")  # noqa: S310 (loopback)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"image check: the entrypoint exited with {process.returncode}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit("image check: nothing listened in time")


def check(arch: str) -> int:
    archive = archive_path(arch)
    with tempfile.TemporaryDirectory(prefix="rypsok-image-check-") as tmp:
        work = pathlib.Path(tmp)
        (work / "layout").mkdir()
        with tarfile.open(archive) as packed:
            packed.extractall(work / "layout", filter="tar")
        subprocess.run(  # noqa: S603
            ["umoci", "unpack", "--image", f"{work / 'layout'}:{version()}", str(work / "bundle")],  # noqa: S607
            check=True,
        )
        rootfs = work / "bundle" / "rootfs"
        config = json.loads((work / "bundle" / "config.json").read_text(encoding="utf-8"))
        process_spec = config["process"]
        port, key = _free_port(), secrets.token_urlsafe(32)
        # What a container runtime would mount: the configuration and the key file.
        for mount_point in ("run/secrets", "etc/rypsok"):  # mkdir, as a runtime's mounts do
            (rootfs / mount_point).mkdir(parents=True, exist_ok=True)
        (rootfs / "run" / "secrets" / "rypsok-key").write_text(key + "\n", encoding="utf-8")
        (rootfs / CONFIG_PATH.lstrip("/")).write_text(
            "schema_version = 1\n[http]\n"
            f'host = "127.0.0.1"\nport = {port}\n'
            '[[http.keys]]\ncaller = "image-check"\nkey = { file = "/run/secrets/rypsok-key" }\n',
            encoding="utf-8",
        )
        os.chown(rootfs / "run" / "secrets" / "rypsok-key", UID, UID)
        before = _tree_state(rootfs, ("/etc/rypsok", "/run/secrets"))
        user = process_spec["user"]
        command = [
            shutil.which("chroot") or "/usr/sbin/chroot",  # found on the host's PATH
            f"--userspec={user['uid']}:{user['gid']}",
            str(rootfs),
            *process_spec["args"],
        ]
        env = dict(item.split("=", 1) for item in process_spec["env"])
        server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # noqa: S603
        try:
            _wait_listening(port, server, timeout_s=60)
            url = f"http://127.0.0.1:{port}/mcp"
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "image-check", "version": "1"}}}  # fmt: skip
            refused, _ = _post(url, None, initialize)
            status, body = _post(url, key, initialize)
        finally:
            server.send_signal(signal.SIGTERM)
            _, stderr = server.communicate(timeout=30)
        after = _tree_state(rootfs, ("/etc/rypsok", "/run/secrets"))
    changed = sorted(set(before.items()) ^ set(after.items()))
    problems = []
    if refused != 401:
        problems.append(f"a request without a key got {refused}, not 401")
    if status != 200 or '"name":"rypsok"' not in body.replace(" ", ""):
        problems.append(f"initialize with the key got {status}: {body[:300]}")
    if changed:
        problems.append(f"the root file system changed: {changed[:5]}")
    if key in stderr.decode(errors="replace"):
        problems.append("the key appeared in the log")
    for problem in problems:
        sys.stderr.write(f"image check: {problem}\n")
    if not problems:
        sys.stderr.write(
            f"image check: {archive.name} started under chroot as uid {user['uid']}, answered "
            "initialize with a key (200) and refused one without (401); root fs unchanged\n"
        )
    return 1 if problems else 0


def _post_when_up(
    url: str, body: dict[str, Any], run: subprocess.Popen[bytes], timeout_s: float
) -> tuple[int, str]:
    """_post without a key, retried while the container starts (its image is copied first)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if run.poll() is not None:
            _, err = run.communicate()
            raise SystemExit(f"image podman check: run-image.sh exited with {run.returncode}:\n"
                             f"{err.decode(errors='replace')[-2000:]}")  # fmt: skip
        try:
            return _post(url, None, body)
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def check_podman(arch: str) -> int:
    """The book's podman command (examples/image/run-image.sh), run as shown in a folder with the
    archive, SHA256SUMS, the book's image configuration and a key; then called over loopback."""
    if shutil.which("podman") is None:
        raise SystemExit("image podman check: needs podman (apt-get install podman) and root")
    archive, examples = archive_path(arch), ROOT / "docs" / "book" / "examples"
    with tempfile.TemporaryDirectory(prefix="rypsok-image-podman-") as tmp:
        work, key = pathlib.Path(tmp), secrets.token_urlsafe(32)
        (work / archive.name).symlink_to(archive)
        shutil.copy(DIST / "SHA256SUMS", work)  # the script's first line verifies the archive
        shutil.copy(examples / "configs" / "image.toml", work / "rypsok.toml")
        (work / "rypsok-key").write_text(key + "\n", encoding="utf-8")
        os.chown(work / "rypsok-key", UID, UID)  # readable by the image's user only
        # its own process group: SIGTERM reaches podman, which passes it to the container
        run = subprocess.Popen(  # noqa: S603
            ["bash", "-euo", "pipefail", str(examples / "image" / "run-image.sh")],  # noqa: S607
            cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        try:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "image-podman-check", "version": "1"}}}  # fmt: skip
            url = "http://127.0.0.1:8750/mcp"  # the port run-image.sh publishes
            refused, _ = _post_when_up(url, initialize, run, timeout_s=180)
            wrong, _ = _post(url, secrets.token_urlsafe(32), initialize)
            status, body = _post(url, key, initialize)
        finally:
            os.killpg(run.pid, signal.SIGTERM)
            out, err = run.communicate(timeout=60)
    logs = (out + err).decode(errors="replace")
    problems = []
    if (refused, wrong) != (401, 401):
        problems.append(f"requests without a key and with a wrong one got {refused}, {wrong}")
    if status != 200 or '"name":"rypsok"' not in body.replace(" ", ""):
        problems.append(f"initialize with the key got {status}: {body[:300]}")
    if key in logs:
        problems.append("the key appeared in the log")
    for problem in problems:
        sys.stderr.write(f"image podman check: {problem}\n{logs[-2000:]}\n")
    if not problems:
        sys.stderr.write(
            f"image podman check: run-image.sh started {archive.name} under podman; initialize "
            "with the key answered 200, without a key and with a wrong one 401; stopped by SIGTERM"
            "\n"
        )
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=tuple(MACHINE), default="amd64")
    parser.add_argument(
        "--mirror", default="", help="a Debian mirror: URL, deb line or sources.list file"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="start the built archive and call it")
    mode.add_argument("--check-reproducible", action="store_true", help="build twice, compare")
    mode.add_argument("--check-podman", action="store_true", help="run the book's podman command")
    args = parser.parse_args(argv)
    if args.check:
        return check(args.arch)
    if args.check_podman:
        return check_podman(args.arch)
    if shutil.which("mmdebstrap") is None:
        raise SystemExit("image: needs mmdebstrap (apt-get install mmdebstrap) and root")
    if args.check_reproducible:
        return check_reproducible(args.arch, args.mirror)
    return build(args.arch, args.mirror)


if __name__ == "__main__":
    sys.exit(main())
