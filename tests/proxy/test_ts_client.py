"""Real outside clients in front of the gate: the TypeScript SDK's Client and the MCP Inspector CLI.

Both run on node 22 installed by tests/support/node.py into .cache/node22/ (skipped with the
reason printed when the npm registry cannot be reached; a failure under REQUIRE_NODE=1). The
upstream is @modelcontextprotocol/server-filesystem on a temporary directory, the gate between
them over stdio and over Streamable HTTP (`--listen http://127.0.0.1:0`). Expected:

- the listing through the gate equals the listing the client gets from the server directly;
- a valid call is answered by the server;
- an invalid call reaches the client as a tool result with isError: true and the gate's
  explanation, and the client does not throw. The TypeScript SDK validates structuredContent
  against the tool's outputSchema (server-filesystem declares one for every tool) and throws
  McpError -32602 "Structured content does not match the tool's output schema" when a result
  does not match it: a refusal whose structuredContent is the gate's problem object
  {kind, instancePath, ...} trips that.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.node import NodeTools, node_tools, require_inspector
from tests.support.processes import LISTENING, no_process_mentions, started

CALL_TIMEOUT = 90


@pytest.fixture(scope="module")
def tools() -> NodeTools:
    return node_tools()


@pytest.fixture
def root(tmp_path: Path):
    root = tmp_path / "fs-root"
    root.mkdir()
    (root / "note.txt").write_text("hello from a real server\n")
    yield root
    left = no_process_mentions(str(root))
    assert not left, f"processes outlived the test: {left}"


def gate_stdio(tools: NodeTools, root: Path) -> list[str]:
    return [sys.executable, "-m", "proxy", "--", *tools.filesystem_server, str(root)]


def gate_http(tools: NodeTools, root: Path) -> list[str]:
    return [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--", *tools.filesystem_server, str(root)]


def ts_client(tools: NodeTools, target: list[str] | str, calls: list[dict]) -> dict:
    """Run tests/support/ts_client.mjs against a stdio command or a URL; its one JSON document."""
    spec: dict = {"url": target} if isinstance(target, str) else {"stdio": {"command": target[0], "args": target[1:]}}
    spec["calls"] = calls
    done = subprocess.run([*tools.ts_client, json.dumps(spec)], env=tools.env(), capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)
    assert done.returncode == 0 and done.stdout.strip(), f"ts_client exited {done.returncode}: {done.stderr[-3000:]}"
    output = json.loads(done.stdout.strip().splitlines()[-1])
    assert output["fatal"] is None, f"the TypeScript client failed: {output['fatal']}\n{done.stderr[-3000:]}"
    return output


def invalid_calls(root: Path) -> list[dict]:
    """Each one invalid against server-filesystem's real inputSchema (fixtures/catalogs/server-filesystem.json)."""
    return [
        {"name": "read_text_file", "arguments": {"path": 42}},  # path: {"type": "string"}
        {"name": "write_file", "arguments": {"path": str(root / "refused.txt")}},  # required: ["path", "content"]
        {"name": "list_directory_with_sizes", "arguments": {"path": str(root), "sortBy": "colour"}},  # enum
    ]


def valid_calls(root: Path) -> list[dict]:
    return [
        {"name": "read_text_file", "arguments": {"path": str(root / "note.txt")}},
        {"name": "list_directory", "arguments": {"path": str(root)}},
    ]


def check_valid(calls: list[dict]) -> None:
    read, listing = calls
    assert "thrown" not in read, f"the TypeScript client threw on a valid call: {read['thrown']}"
    assert read["result"]["isError"] is False
    assert read["result"]["content"][0]["text"] == "hello from a real server\n"  # answered by the real server
    assert "thrown" not in listing, f"the TypeScript client threw on a valid call: {listing['thrown']}"
    assert "note.txt" in listing["result"]["content"][0]["text"]


def check_refused(calls: list[dict], root: Path) -> None:
    problems = []
    for call in calls:
        label = f"{call['name']}({json.dumps(call['arguments'])})"
        if "thrown" in call:
            problems.append(f"{label}: the TypeScript client THREW {call['thrown']['name']} "
                            f"{call['thrown']['code']}: {call['thrown']['message']}")
            continue
        result = call["result"]
        text = " ".join(c.get("text", "") for c in result["content"] or [])
        if result["isError"] is not True or "was not called" not in text or call["name"] not in text:
            problems.append(f"{label}: expected isError and the gate's explanation, got {json.dumps(result)[:500]}")
    assert not problems, "invalid calls through the gate:\n" + "\n".join(problems)
    assert not (root / "refused.txt").exists(), "a refused write reached the server"


@pytest.fixture(scope="module")
def direct_listing(tools: NodeTools, tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("direct") / "fs-root"
    root.mkdir()
    listing = ts_client(tools, [*tools.filesystem_server, str(root)], [])["tools"]
    assert len(listing) >= 10
    assert all("outputSchema" in tool for tool in listing)  # what makes the TS client validate results
    assert not no_process_mentions(str(root))
    return listing


def test_ts_client_direct_invalid_call_is_a_tool_error(tools, root) -> None:
    """The control: without the gate the server itself answers isError, and the client does not throw."""
    output = ts_client(tools, [*tools.filesystem_server, str(root)], invalid_calls(root)[:1])
    (call,) = output["calls"]
    assert "thrown" not in call, call["thrown"]
    assert call["result"]["isError"] is True
    assert call["result"]["structuredContent"] is None  # an error result without structuredContent is not checked


def test_ts_client_stdio_listing_and_valid_call(tools, root, direct_listing) -> None:
    output = ts_client(tools, gate_stdio(tools, root), valid_calls(root))
    assert output["tools"] == direct_listing
    check_valid(output["calls"])


def test_ts_client_stdio_invalid_call_is_a_tool_error(tools, root) -> None:
    output = ts_client(tools, gate_stdio(tools, root), invalid_calls(root))
    check_refused(output["calls"], root)


def test_ts_client_http_listing_and_valid_call(tools, root, direct_listing) -> None:
    with started(gate_http(tools, root), tools.env(), LISTENING) as (match, gate):
        output = ts_client(tools, match.group(1), valid_calls(root))
    assert output["tools"] == direct_listing
    check_valid(output["calls"])
    assert output.get("terminate") is None, output["terminate"]  # the DELETE was accepted


def test_ts_client_http_invalid_call_is_a_tool_error(tools, root) -> None:
    with started(gate_http(tools, root), tools.env(), LISTENING) as (match, gate):
        output = ts_client(tools, match.group(1), invalid_calls(root))
    check_refused(output["calls"], root)


def inspector(tools: NodeTools, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*require_inspector(tools), *args], env=tools.env(), capture_output=True, text=True,
                          timeout=CALL_TIMEOUT)


def test_inspector_cli_through_the_gate(tools, root) -> None:
    """The Inspector CLI (TypeScript SDK 1.x inside): listing, a valid call and a refused one, over HTTP and stdio.

    The stdio gate is started through `sh -c` because the Inspector splits its own argv at the
    first `--`, which the gate's command line needs.
    """
    require_inspector(tools)
    direct = inspector(tools, *tools.filesystem_server, str(root), "--method", "tools/list")
    assert direct.returncode == 0, direct.stderr
    direct_tools = json.loads(direct.stdout)["tools"]
    stdio = ["sh", "-c", "exec " + shlex.join(gate_stdio(tools, root))]
    problems = []
    with started(gate_http(tools, root), tools.env(), LISTENING) as (match, gate):
        for label, target in (("http", [match.group(1), "--transport", "http"]), ("stdio", stdio)):
            listed = inspector(tools, *target, "--method", "tools/list")
            assert listed.returncode == 0, f"{label}: {listed.stderr}"
            assert json.loads(listed.stdout)["tools"] == direct_tools, label

            valid = inspector(tools, *target, "--method", "tools/call", "--tool-name", "read_text_file",
                              "--tool-arg", f"path={root / 'note.txt'}")
            assert valid.returncode == 0, f"{label}: {valid.stderr}"
            assert json.loads(valid.stdout)["content"][0]["text"] == "hello from a real server\n"

            refused = inspector(tools, *target, "--method", "tools/call", "--tool-name", "read_text_file",
                                "--tool-arg", "path=42")
            if refused.returncode != 0:
                problems.append(f"{label}: the Inspector failed (exit {refused.returncode}): "
                                f"{(refused.stderr or refused.stdout).strip()}")
                continue
            result = json.loads(refused.stdout)
            text = " ".join(c.get("text", "") for c in result["content"])
            if result.get("isError") is not True or "was not called" not in text:
                problems.append(f"{label}: expected isError and the gate's explanation, got {refused.stdout[:500]}")
    assert not problems, "a refused call through the Inspector CLI:\n" + "\n".join(problems)
