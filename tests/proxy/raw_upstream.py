"""A line-level fake MCP server: shows exactly which bytes the proxy forwards, in both directions.

`raw/echo` answers with the request line exactly as received; `raw/emit`
first writes a hand-crafted notification line (unknown members, 1e400, odd
key order) and then answers.
"""

import json
import sys

CRAFTED = '{"method":"notifications/custom","params":{"z":1,"big":1e400,"a":[1.0,2.50]},"jsonrpc":"2.0","extra":true}'


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        method, request_id = message["method"], message["id"]
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "0"}}
        elif method == "tools/list":
            schema = {"type": "object", "properties": {"text": {"type": "string", "minLength": 1}}}
            result = {"tools": [{"name": "echo", "inputSchema": schema}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": line.rstrip("\n")}]}
        elif method == "raw/echo":
            result = {"line": line.rstrip("\n")}
        elif method == "raw/emit":
            sys.stdout.write(CRAFTED + "\n")
            result = {}
        else:
            result = {}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
