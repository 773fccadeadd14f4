apt-get install -y mmdebstrap
make dist image                                            # amd64, on an x86_64 machine
make dist image PLATFORM=manylinux2014_aarch64 ARCH=arm64  # arm64, on an aarch64 runner
