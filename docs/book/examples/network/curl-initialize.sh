curl -sS http://127.0.0.1:8750/mcp \
  -H "Authorization: Bearer $(cat /run/secrets/rypsok-key-research)" \
  -H "Content-Type: application/json" \
  -H "Accept: application/json, text/event-stream" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
