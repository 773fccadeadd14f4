# The HMAC key names and seals what rypsok keeps in Redis: treat it like a password.
python3 -c "import secrets; print(secrets.token_urlsafe(32))" \
  | sudo tee /etc/rypsok/redis-hmac-key > /dev/null
sudo chown rypsok: /etc/rypsok/redis-hmac-key
sudo chmod 0400 /etc/rypsok/redis-hmac-key
# The URL is a secret too (it may carry a password): the service's environment holds it.
echo 'RYPSOK_REDIS_URL=unix:///run/redis/redis-server.sock?db=0' \
  | sudo tee /etc/rypsok/redis.env > /dev/null
sudo chmod 0400 /etc/rypsok/redis.env
