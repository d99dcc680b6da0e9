"""The TypeScript SDK client accepts the gate's `--check-output strict` replacement without throwing.

The upstream is the recording test server with UPSTREAM_OUTPUTS=1 (tests/proxy/upstream_server.py):
`shaped` declares an outputSchema ({total: integer >= 0}, required) and its argument picks a
conforming (`good`), violating (`bad`: total -1) or missing (`missing`: no structuredContent)
result. The client is tests/support/ts_client.mjs on node 22 (tests/support/node.py; skipped
with the reason printed when npm cannot be reached, a failure under REQUIRE_NODE=1).

- Directly, the TypeScript SDK client THROWS on the violating result (McpError -32602 "Structured
  content does not match the tool's output schema") and on the missing one (McpError -32600 "... has
  an output schema but did not return structured content"): it validates structuredContent against the listed outputSchema. This is the control
  that shows the test would catch a replacement the client cannot take.
- Through the gate with `--check-output strict`, the same calls come back as tool results with
  isError: true and the gate's explanation, and the client does not throw; a conforming result
  still arrives unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proxy.conftest import UPSTREAM, calls
from tests.support.node import NodeTools, node_tools

CALL_TIMEOUT = 90
PLAN = [
    {"name": "shaped", "arguments": {"result": "good"}},
    {"name": "shaped", "arguments": {"result": "bad"}},
    {"name": "shaped", "arguments": {"result": "missing"}},
]


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


def ts_client(tools: NodeTools, command: list[str], record: Path) -> dict:
    spec = {"stdio": {"command": command[0], "args": command[1:],
                      "env": {"UPSTREAM_OUTPUTS": "1", "UPSTREAM_RECORD": str(record)}},
            "calls": PLAN}
    done = subprocess.run([*tools.ts_client, json.dumps(spec)], env=tools.env(), capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)
    assert done.returncode == 0 and done.stdout.strip(), f"ts_client exited {done.returncode}: {done.stderr[-3000:]}"
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["fatal"] is None, f"the TypeScript client failed: {output['fatal']}\n{done.stderr[-3000:]}"
    output["stderr"] = done.stderr
    return output


def test_direct_ts_client_throws_on_a_violating_result(tools: NodeTools, record: Path) -> None:
    output = ts_client(tools, [sys.executable, UPSTREAM], record)
    good, bad, missing = output["calls"]
    assert "thrown" not in good, good
    assert good["result"]["structuredContent"] == {"total": 3}
    for call in (bad, missing):
        assert "thrown" in call, f"the TypeScript client accepted a non-conforming result: {call}"
        assert call["thrown"]["name"] == "McpError", call["thrown"]
    assert bad["thrown"]["code"] == -32602, bad["thrown"]
    assert "does not match the tool's output schema" in bad["thrown"]["message"]
    assert missing["thrown"]["code"] == -32600, missing["thrown"]
    assert "has an output schema but did not return structured content" in missing["thrown"]["message"]
    assert [c["name"] for c in calls(record)] == ["shaped"] * 3


def test_ts_client_takes_the_strict_replacement_without_throwing(tools: NodeTools, record: Path) -> None:
    gate = [sys.executable, "-m", "proxy", "--check-output", "strict", "--", sys.executable, UPSTREAM]
    output = ts_client(tools, gate, record)
    good, bad, missing = output["calls"]
    problems = [f"{c['arguments']['result']}: the TypeScript client THREW {c['thrown']}"
                for c in output["calls"] if "thrown" in c]
    assert not problems, "\n".join(problems)
    assert good["result"] == {"content": [{"type": "text", "text": "shaped good"}], "isError": False,
                              "structuredContent": {"total": 3}}
    for call, keyword in ((bad, "minimum"), (missing, "structuredContent")):
        result = call["result"]
        assert result["isError"] is True, result
        assert result["structuredContent"] is None, result
        text = result["content"][0]["text"]
        assert "does not conform to the tool's outputSchema" in text and "withheld" in text, text
        assert keyword in text, text
    assert "/total" in bad["result"]["content"][0]["text"]
    assert [c["name"] for c in calls(record)] == ["shaped"] * 3  # the server ran every call
    assert "replaced with an error result" in output["stderr"]
