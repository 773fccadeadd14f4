apt-get install -y mmdebstrap umoci
# amd64, on an x86_64 machine: build, build again and compare the bytes, start it
make dist image-repro image-check
# arm64, on an aarch64 machine (the release workflow's ubuntu-24.04-arm runner)
make dist image-repro image-check PLATFORM=manylinux2014_aarch64 ARCH=arm64
# the same bytes on a later day: the Debian packages as they were on the release's day
# (snapshot.list: deb lines of Debian's snapshot archive for that day, for bookworm,
# bookworm-updates and bookworm-security)
make image-repro MIRROR="$PWD/snapshot.list"
(cd dist && sha256sum -c SHA256SUMS)
