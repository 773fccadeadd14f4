"""Build the release files (`make dist`): wheel, sdist, offline bundle, SHA256SUMS.

    python tools/dist.py [--out dist] [--platform manylinux2014_x86_64] [--python 3.11]
    python tools/dist.py --check-reproducible

The wheel and the sdist come from the standard build frontend (`python -m
build`) run without isolation, so the backend is the setuptools pinned in
requirements/dev.lock and nothing is downloaded for the build. Both are
reproducible: the timestamps come from SOURCE_DATE_EPOCH (the last commit's
time when unset) and the sdist is re-packed with sorted members, fixed owners
and a fixed gzip header, because setuptools stores the files' own times and
owners in it. `--check-reproducible` builds twice and compares the bytes.

The offline bundle is the wheel plus a wheel of every pin in
requirements/run.lock for one platform and Python version, for operators
without a package registry:

    pip install --no-index --find-links offline-linux-x86_64-py3.11 rypsok

SHA256SUMS lists every file under the output folder, in `sha256sum -c` form.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUN_LOCK = ROOT / "requirements" / "run.lock"
# The bundle's folder names the operating system and machine an operator reads on the box.
MACHINE_OF_PLATFORM = {
    "manylinux2014_x86_64": "linux-x86_64",
    "manylinux2014_aarch64": "linux-aarch64",
}


def source_date_epoch() -> str:
    """SOURCE_DATE_EPOCH as given, else the last commit's time, else 1980-01-01."""
    given = os.environ.get("SOURCE_DATE_EPOCH")
    if given:
        return given
    try:
        commit_time = subprocess.run(
            ["git", "log", "-1", "--format=%ct"],  # noqa: S607 (git from PATH, as a developer runs it)
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit_time = ""
    return commit_time or "315532800"


def build_wheel_and_sdist(out: pathlib.Path, epoch: str) -> tuple[pathlib.Path, pathlib.Path]:
    """`python -m build` into `out`: the sdist, then the wheel built from that sdist."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch}
    subprocess.run(  # noqa: S603 (our own interpreter and fixed arguments)
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        env=env,
        check=True,
        stdout=sys.stderr,  # the build's chatter is diagnostics
    )
    (sdist,) = out.glob("rypsok-*.tar.gz")
    (wheel,) = out.glob("rypsok-*.whl")
    normalize_sdist(sdist, int(epoch))
    return wheel, sdist


def normalize_sdist(sdist: pathlib.Path, epoch: int) -> None:
    """Re-pack the sdist so that equal sources give equal bytes."""
    with tarfile.open(sdist, "r:gz") as source:
        members = sorted(source.getmembers(), key=lambda m: m.name)
        payload = {m.name: source.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as target:
        for member in members:
            member.mtime = epoch
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            member.mode = 0o755 if member.isdir() or member.mode & 0o111 else 0o644
            member.pax_headers = {}
            data = payload.get(member.name)
            target.addfile(member, io.BytesIO(data) if data is not None else None)
    with (
        sdist.open("wb") as handle,
        gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0, compresslevel=9) as packed,
    ):
        packed.write(raw.getvalue())


def _target_environments(platform: str, python_version: str) -> list[dict[str, str]]:
    """Marker environments of the bundle's machine: its Python's first and a late patch release."""
    machine = platform.split("_", 1)[1]  # manylinux2014_aarch64 -> aarch64
    fixed = {
        "python_version": python_version,
        "platform_machine": machine,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    return [{**fixed, "python_full_version": f"{python_version}.{patch}"} for patch in (0, 99)]


def bundle_pins(lock: pathlib.Path, platform: str, python_version: str) -> list[str]:
    """The lock's pins that some Python of the bundle's version needs, without their markers.

    pip decides a pin's marker by the Python that runs pip, not by --python-version; and a
    lock frozen on one patch release keeps the pins of the others only by their markers
    (redis needs async-timeout below 3.11.3, and Debian 12's Python is 3.11.2).
    """
    from packaging.markers import Marker  # noqa: PLC0415 (in the dev lock, which make dist uses)

    environments = _target_environments(platform, python_version)
    pins = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        pin, _, marker = (part.strip() for part in line.partition(";"))
        if pin and (not marker or any(Marker(marker).evaluate(e) for e in environments)):
            pins.append(pin)
    return pins


def download_bundle(
    wheel: pathlib.Path, out: pathlib.Path, platform: str, python_version: str
) -> pathlib.Path:
    """The wheel plus a binary wheel of every runtime pin, for one platform."""
    machine = MACHINE_OF_PLATFORM.get(platform, platform)
    bundle = out / f"offline-{machine}-py{python_version}"
    bundle.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        pins = pathlib.Path(tmp) / "pins.txt"
        pins.write_text("\n".join(bundle_pins(RUN_LOCK, platform, python_version)) + "\n")
        subprocess.run(  # noqa: S603 (our own interpreter and fixed arguments)
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-deps", "--only-binary=:all:", "--platform", platform,
             "--python-version", python_version, "--implementation", "cp",
             "-r", str(pins), "--dest", str(bundle)],
            check=True,
            stdout=sys.stderr,
        )  # fmt: skip
    shutil.copy2(wheel, bundle / wheel.name)
    return bundle


def write_sha256sums(out: pathlib.Path) -> pathlib.Path:
    sums = out / "SHA256SUMS"
    lines = []
    for path in sorted(p for p in out.rglob("*") if p.is_file() and p != sums):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{digest}  {path.relative_to(out).as_posix()}\n")
    sums.write_text("".join(lines), encoding="utf-8")
    return sums


def check_reproducible(epoch: str) -> int:
    """Build twice in fresh folders; 0 when the wheels and the sdists are byte-equal."""
    with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
        built = [build_wheel_and_sdist(pathlib.Path(d), epoch) for d in (first, second)]
        differing = [
            a.name
            for a, b in zip(built[0], built[1], strict=True)
            if a.read_bytes() != b.read_bytes()
        ]
    if differing:
        sys.stderr.write(f"dist: not reproducible: {', '.join(differing)} differ between builds\n")
        return 1
    sys.stderr.write(
        f"dist: reproducible (SOURCE_DATE_EPOCH={epoch}): {built[0][0].name}, {built[0][1].name}\n"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "dist")
    parser.add_argument("--platform", default="manylinux2014_x86_64")
    parser.add_argument(
        "--python", dest="python_version", default="{}.{}".format(*sys.version_info[:2])
    )
    parser.add_argument("--no-bundle", action="store_true", help="wheel and sdist only")
    parser.add_argument("--check-reproducible", action="store_true")
    args = parser.parse_args(argv)
    epoch = source_date_epoch()
    if args.check_reproducible:
        return check_reproducible(epoch)
    out: pathlib.Path = args.out
    for stale in out.glob("rypsok-*"):
        stale.unlink()
    out.mkdir(parents=True, exist_ok=True)
    wheel, _ = build_wheel_and_sdist(out, epoch)
    if not args.no_bundle:
        bundle = download_bundle(wheel, out, args.platform, args.python_version)
        for stale in bundle.glob("rypsok-*.whl"):
            if stale.name != wheel.name:
                stale.unlink()
    sums = write_sha256sums(out)
    sys.stderr.write(f"dist: {sums} lists {len(sums.read_text().splitlines())} files\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
