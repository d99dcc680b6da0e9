#!/usr/bin/env bash
# The main job on a built-in default: mcp-schema-gate in front of the bundled demo
# server (fixtures/demo/server.py), driven by a client made of printf. Call 2 is
# accepted and answered by the server; call 3 (an extra property) and call 4 (a
# tool whose schema is outside the subset) are answered by the gate itself.
# stdout: the JSON-RPC replies; stderr: the gate's startup summary.
set -euo pipefail
cd "$(dirname "$0")/.."
printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"0"}}}' \
  '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_todo","arguments":{"title":"buy milk"}}}' \
  '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_todo","arguments":{"title":"buy milk","due":"today"}}}' \
  '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"convert_time","arguments":{"time":"12:00"}}}' \
| .venv/bin/mcp-schema-gate -- .venv/bin/python fixtures/demo/server.py
