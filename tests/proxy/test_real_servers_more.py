"""More real published MCP servers behind the stdio gate, end to end.

Each server is the one pinned in scripts/catalog_servers.json (the same package
and version whose catalog is in fixtures/catalogs/), installed on demand into
.cache/ by scripts/capture_catalog.py and started with its manifest arguments
in a fresh scratch directory:

- @modelcontextprotocol/server-memory (npm), contract dialect;
- @modelcontextprotocol/server-everything (npm), contract dialect;
- mcp-server-time (PyPI) under ``--dialect extended`` (its pydantic schemas
  carry ``title``, unsupported by the contract dialect: see test_real_servers.py);
- mcp-server-git (PyPI) under ``--dialect extended``, on a fresh git repository.

For every server: the listing through the gate equals the direct listing; valid
calls are answered by the real server (the test checks what it returned); invalid
calls are refused by the gate with structuredContent {kind, keyword, ...}. That a
refused call never reached the server is shown twice where possible: by a side
effect that did not happen (no entity in the memory graph, no git branch), and,
for every server, by tests/proxy/tee_upstream.py, which sits between the gate and
the server and records every line the server was sent: its tools/call requests
are exactly the valid calls.

When a registry cannot be reached (or node/npm/git is missing), the test is
skipped and the reason is printed, never counted as passed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import stdio_client

from tests.support import servers
from tests.proxy.conftest import ROOT, params, proxy_command, refusal

TEE = str(Path(__file__).with_name("tee_upstream.py"))


async def _tools(client: Client) -> list[dict]:
    result = await client.list_tools()
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]


class Gated:
    """The gate in front of a real server, with the tap's record of what the server was sent."""

    def __init__(self, client: Client, record: Path, stderr: Path) -> None:
        self.client = client
        self.record = record
        self.stderr = stderr

    def forwarded_calls(self) -> list[dict[str, Any]]:
        """The tools/call params the real server received, in order."""
        lines = self.record.read_text().splitlines() if self.record.exists() else []
        messages = [json.loads(line) for line in lines if line.strip()]
        return [m["params"] for m in messages if m.get("method") == "tools/call"]


@asynccontextmanager
async def gated(launch: Any, tmp_path: Path, *options: str) -> AsyncIterator[tuple[list[dict], Gated]]:
    """Yield (direct listing, Gated) for ``launch``: listed once directly, then served through the gate."""
    async with Client(launch.stdio_parameters(), cache=None) as client:
        direct = await _tools(client)
    env = {**os.environ, **launch.env}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    record = tmp_path / "server-stdin.jsonl"
    upstream = [sys.executable, TEE, str(record), "--", *launch.argv()]
    command = proxy_command(*options, "--cwd", launch.cwd, upstream=upstream)
    errlog = tmp_path / "proxy-stderr.txt"
    with errlog.open("w") as err:
        async with Client(stdio_client(params(command, env), errlog=err), cache=None) as client:
            yield direct, Gated(client, record, errlog)


def _refused(result: Any, keyword: str, instance_path: str) -> None:
    assert result.is_error, result
    detail = refusal(result)
    assert detail["kind"] == "validation", detail
    assert detail["keyword"] == keyword, detail
    assert detail["instancePath"] == instance_path, detail
    assert "was not called" in result.content[0].text


async def test_memory_server_behind_the_proxy(tmp_path: Path) -> None:
    launch = servers.launch("server-memory", tmp_path / "work")
    memory_file = Path(launch.env["MEMORY_FILE_PATH"])
    ada = {"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}
    async with gated(launch, tmp_path) as (direct, gate):
        assert len(direct) == 9
        assert await _tools(gate.client) == direct

        result = await gate.client.call_tool("create_entities", {"entities": [ada]})
        assert not result.is_error, result
        assert json.loads(result.content[0].text) == [ada]  # the real server's answer: what it created

        ghost = {"name": "Ghost", "entityType": "person"}  # no observations
        _refused(await gate.client.call_tool("create_entities", {"entities": [ghost]}), "required", "/entities/0")
        ghost_typed = {**ghost, "observations": "not an array"}
        _refused(await gate.client.call_tool("create_entities", {"entities": [ghost_typed]}), "type", "/entities/0/observations")
        _refused(await gate.client.call_tool("search_nodes", {"query": 7}), "type", "/query")

        result = await gate.client.call_tool("read_graph", {})
        assert not result.is_error, result
        graph = json.loads(result.content[0].text)
        assert graph == {"entities": [ada], "relations": []}  # no Ghost: the refused creations never arrived
        forwarded = gate.forwarded_calls()
    assert "Ghost" not in memory_file.read_text() and "Ada" in memory_file.read_text()
    assert [(c["name"], c.get("arguments")) for c in forwarded] == [
        ("create_entities", {"entities": [ada]}),
        ("read_graph", {}),
    ]


async def test_everything_server_behind_the_proxy(tmp_path: Path) -> None:
    launch = servers.launch("server-everything", tmp_path / "work")
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with gated(launch, tmp_path) as (direct, gate):
        assert len(direct) == 13
        assert await _tools(gate.client) == direct

        result = await gate.client.call_tool("echo", {"message": "hello through the gate"})
        assert not result.is_error and result.content[0].text == "Echo: hello through the gate"
        result = await gate.client.call_tool("get-sum", {"a": 2, "b": 3.5})
        assert not result.is_error and result.content[0].text == "The sum of 2 and 3.5 is 5.5."
        result = await gate.client.call_tool("get-structured-content", {"location": "Chicago"})
        assert not result.is_error and set(result.structured_content) == {"temperature", "conditions", "humidity"}
        result = await gate.client.call_tool(
            "trigger-long-running-operation", {"duration": 0.2, "steps": 2}, progress_callback=on_progress
        )
        assert not result.is_error and "completed" in result.content[0].text
        assert progress == [1, 2]  # the real server's progress notifications came back through the gate
        progress.clear()

        _refused(await gate.client.call_tool("echo", {}), "required", "")
        _refused(await gate.client.call_tool("get-sum", {"a": "2", "b": 3}), "type", "/a")
        _refused(await gate.client.call_tool("get-structured-content", {"location": "Paris"}), "enum", "/location")
        result = await gate.client.call_tool(
            "trigger-long-running-operation", {"duration": "0.2", "steps": 2}, progress_callback=on_progress
        )
        _refused(result, "type", "/duration")
        assert progress == []  # the refused operation never started
        forwarded = gate.forwarded_calls()
    assert [c["name"] for c in forwarded] == ["echo", "get-sum", "get-structured-content", "trigger-long-running-operation"]
    assert forwarded[3]["arguments"] == {"duration": 0.2, "steps": 2}


async def test_time_server_extended_dialect_behind_the_proxy(tmp_path: Path) -> None:
    launch = servers.launch("mcp-server-time", tmp_path / "work")
    async with gated(launch, tmp_path, "--dialect", "extended") as (direct, gate):
        assert sorted(t["name"] for t in direct) == ["convert_time", "get_current_time"]
        assert await _tools(gate.client) == direct

        result = await gate.client.call_tool("get_current_time", {"timezone": "UTC"})
        assert not result.is_error, result
        now = json.loads(result.content[0].text)
        assert now["timezone"] == "UTC" and now["datetime"].endswith("+00:00") and now["is_dst"] is False
        arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        result = await gate.client.call_tool("convert_time", arguments)
        assert not result.is_error, result
        converted = json.loads(result.content[0].text)
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
        assert converted["time_difference"] == "+9.0h"

        _refused(await gate.client.call_tool("get_current_time", {"timezone": 5}), "type", "/timezone")
        _refused(await gate.client.call_tool("convert_time", {"source_timezone": "UTC", "time": "12:00"}), "required", "")
        forwarded = gate.forwarded_calls()
    assert [(c["name"], c.get("arguments")) for c in forwarded] == [
        ("get_current_time", {"timezone": "UTC"}),
        ("convert_time", arguments),
    ]
    assert "2 tools listed, 0 unsupported (dialect extended)" in gate.stderr.read_text()


def _branches(repo: Path) -> set[str]:
    done = subprocess.run(
        ["git", "-C", str(repo), "for-each-ref", "--format=%(refname:short)", "refs/heads"],
        capture_output=True, text=True, check=True,
    )
    return set(done.stdout.split())


async def test_git_server_extended_dialect_behind_the_proxy(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        servers.skip("git is not installed")
    launch = servers.launch("mcp-server-git", tmp_path / "work")
    repo = Path(launch.cwd) / "repo"  # made by launch_spec for the manifest's {git_repo}
    assert (repo / ".git").is_dir()
    async with gated(launch, tmp_path, "--dialect", "extended") as (direct, gate):
        assert len(direct) == 12
        assert await _tools(gate.client) == direct

        result = await gate.client.call_tool("git_log", {"repo_path": str(repo), "max_count": 1})
        assert not result.is_error and "Message: init" in result.content[0].text
        result = await gate.client.call_tool("git_create_branch", {"repo_path": str(repo), "branch_name": "feature"})
        assert not result.is_error and "Created branch 'feature'" in result.content[0].text

        refused = {"repo_path": str(repo), "branch_name": "refused", "base_branch": 3}
        _refused(await gate.client.call_tool("git_create_branch", refused), "anyOf", "/base_branch")
        _refused(await gate.client.call_tool("git_log", {"repo_path": str(repo), "max_count": "1"}), "type", "/max_count")
        _refused(await gate.client.call_tool("git_add", {"repo_path": str(repo), "files": []}), "minItems", "/files")
        _refused(await gate.client.call_tool("git_checkout", {"repo_path": str(repo)}), "required", "")
        forwarded = gate.forwarded_calls()
    branches = _branches(repo)
    assert "feature" in branches and "refused" not in branches and len(branches) == 2
    assert [c["name"] for c in forwarded] == ["git_log", "git_create_branch"]
    assert "12 tools listed, 0 unsupported (dialect extended)" in gate.stderr.read_text()
