id rypsok > /dev/null 2>&1 || sudo useradd --system --no-create-home --shell /usr/sbin/nologin rypsok
sudo install -d -m 0750 /etc/rypsok/keys
for caller in kitchen-assistant operator prometheus; do
  python3 -c "import secrets; print(secrets.token_urlsafe(32))" \
    | sudo tee "/etc/rypsok/keys/$caller" > /dev/null
done
sudo chown -R rypsok: /etc/rypsok/keys       # the user the service runs as
sudo chmod -R u=rX,go= /etc/rypsok/keys   # the folder 0500, each key 0400
# Prometheus reads its own copy of its key
sudo install -m 0400 -o prometheus /etc/rypsok/keys/prometheus /etc/prometheus/rypsok.key
sudo -u rypsok "$(command -v rypsok)" check --config /etc/rypsok/rypsok.toml   # as the service user
