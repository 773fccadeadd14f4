sha256sum -c --ignore-missing SHA256SUMS
podman run --rm --read-only --user 10001 -p 127.0.0.1:8750:8750 \
  -v "$PWD/rypsok.toml:/etc/rypsok/rypsok.toml:ro" \
  -v "$PWD/rypsok-key:/run/secrets/rypsok-key:ro" \
  --memory 512m --cpus 1 --ulimit nofile=4096:4096 --ulimit nproc=1024:1024 \
  oci-archive:rypsok-0.1.0-oci-amd64.tar
