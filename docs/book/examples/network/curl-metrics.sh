curl -s http://127.0.0.1:8750/metrics \
  -H "Authorization: Bearer $(cat /etc/rypsok/keys/prometheus)" | grep rypsok_calls_total
