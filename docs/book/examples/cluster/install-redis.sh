sudo apt-get install redis-server
sudo install -m 0640 -o redis -g redis rypsok-redis.conf /etc/redis/redis.conf
sudo usermod -aG redis rypsok            # lets the rypsok user open the socket
sudo systemctl restart redis-server
redis-cli -s /run/redis/redis-server.sock ping   # answers PONG
