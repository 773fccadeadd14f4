apt-get install -y mmdebstrap umoci
make dist image image-check                                # amd64, on an x86_64 machine
make dist image PLATFORM=manylinux2014_aarch64 ARCH=arm64  # arm64, on an aarch64 runner
