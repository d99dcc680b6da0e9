"""A line-level fake MCP server that records every raw line it receives.

Each line read from stdin is appended, byte for byte (base64), to the file
named by RECORDING_UPSTREAM_FILE together with this process's pid, *before*
the line is answered: a client that has seen the answer knows the line is on
disk. The server answers what Python's json.loads reads (last member wins),
which is only one of the readings a real server might take; the tests judge
the recorded bytes with every reader in tests/proxy/json_readers.py.

Tools (inside the schema dialect the gate enforces):
  read  {"path": string matching ^/safe/}, path required, nothing else allowed
  note  {"text": at most 8 letters a-z, "kind": "memo" or "todo"}, other members allowed
        (open, so a member that only a case-insensitive reader maps onto "text" or
        "kind" passes the gate's exact reading)
"""

from __future__ import annotations

import base64
import json
import os
import sys

READ_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string", "pattern": "^/safe/"}},
    "required": ["path"],
    "additionalProperties": False,
}
NOTE_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string", "pattern": "^[a-z]{0,8}$"}, "kind": {"enum": ["memo", "todo"]}},
}
TOOLS = [
    {"name": "read", "description": "read a file under /safe/", "inputSchema": READ_SCHEMA},
    {"name": "note", "description": "keep a short note", "inputSchema": NOTE_SCHEMA},
]


def record(handle, line: bytes) -> None:
    handle.write(json.dumps({"pid": os.getpid(), "b64": base64.b64encode(line).decode()}) + "\n")
    handle.flush()


def answer(message: dict) -> dict | None:
    method, request_id = message.get("method"), message.get("id")
    if not isinstance(method, str) or "id" not in message:
        return None  # a notification or a response: nothing to say
    if method == "initialize":
        result = {"protocolVersion": message.get("params", {}).get("protocolVersion", "2025-11-25"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "recording", "version": "0"}}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        text = json.dumps({"executed": params.get("name"), "arguments": params.get("arguments")})
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def main() -> None:
    path = os.environ["RECORDING_UPSTREAM_FILE"]
    with open(path, "a", encoding="utf-8") as handle:
        for line in sys.stdin.buffer:
            record(handle, line.rstrip(b"\n"))
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                continue
            reply = answer(message) if isinstance(message, dict) else None
            if reply is not None:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
