"""Operator control end to end: a lock file pins tool definitions, a policy file allows, denies, hides and tightens.

The pure parts (containment, lock classes, policy parsing) have their own
tests (tests/validator/test_containment.py, test_lock.py, test_policy.py);
these run the gate as a process in front of the recording test server, whose
`flip` tool widens `mutable`'s schema (an integer becomes a string) and sends
list_changed, and whose `reveal` tool makes a `hidden` tool appear.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from proxy.core.catalog import Catalog
from proxy.core.gate import Gate
from proxy.core.operator import OperatorControl
from proxy.core.policy import Policy
from tests.proxy.conftest import ROOT, calls, environment, raw_proxy, upstream_command
from tests.proxy_http.conftest import http_gate, raw_client


def cli(*args: str, record: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "proxy", *args], capture_output=True, text=True, cwd=ROOT,
                          env=environment(record), timeout=120)


@pytest.fixture
def lock_file(record: Path, tmp_path: Path) -> Path:
    done = cli("lock", "--", *upstream_command(), record=record)
    assert done.returncode == 0, done.stderr
    path = tmp_path / "tools.lock.json"
    path.write_text(done.stdout)
    assert "pinned 11 tools" in done.stderr
    return path


def detail(reply: dict) -> dict:
    assert reply["result"]["isError"] is True, reply
    return reply["result"]["structuredContent"]


async def test_lock_refuses_a_widened_and_an_added_tool_over_stdio(record: Path, tmp_path: Path,
                                                                   lock_file: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with raw_proxy(record, "--lock", str(lock_file), "--audit-log", str(audit)) as session:
        await session.initialize()
        assert "result" in await session.request(1, "tools/call", {"name": "mutable", "arguments": {"x": 1}})
        await session.request(2, "tools/call", {"name": "flip", "arguments": {}})  # integer -> string: widened
        refused = detail(await session.request(3, "tools/call", {"name": "mutable", "arguments": {"x": "one"}}))
        assert (refused["kind"], refused["source"], refused["keyword"]) == ("changed_definition", "lock", "widened")
        assert refused["schemaPath"].startswith("/inputSchema")
        await session.request(4, "tools/call", {"name": "reveal", "arguments": {}})
        added = detail(await session.request(5, "tools/call", {"name": "hidden", "arguments": {"n": 1}}))
        assert (added["kind"], added["keyword"]) == ("changed_definition", "added")
        assert "result" in await session.request(6, "tools/call", {"name": "echo", "arguments": {"text": "ok"}})
    assert [c["name"] for c in calls(record)] == ["mutable", "flip", "reveal", "echo"]
    assert b"mutable: widened (refused: widened at /inputSchema" in session.stderr
    rules = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(r["tool"], r["kind"], r["rule"], r["source"]) for r in rules] == [
        ("mutable", "changed_definition", "widened", "lock"), ("hidden", "changed_definition", "added", "lock")]


async def test_refuse_changes_decides_which_classes_are_refused(record: Path, lock_file: Path) -> None:
    async with raw_proxy(record, "--lock", str(lock_file), "--refuse-changes", "added") as session:
        await session.initialize()
        await session.request(1, "tools/call", {"name": "flip", "arguments": {}})
        reply = await session.request(2, "tools/call", {"name": "mutable", "arguments": {"x": "one"}})
        assert reply["result"].get("isError") is not True, reply  # widened, but only `added` is refused
    assert [c["name"] for c in calls(record)] == ["flip", "mutable"]


async def test_lock_refuses_a_widened_tool_over_streamable_http(record: Path, lock_file: Path) -> None:
    async with http_gate(record, "http", None, "--lock", str(lock_file)) as (url, _), raw_client() as http:
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
        reply = await http.post(url, content=json.dumps(init))
        headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                        headers=headers)

        async def call(request_id: int, name: str, arguments: dict) -> dict:
            body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}
            answer = await http.post(url, content=json.dumps(body), headers=headers)
            messages = [answer.json()] if answer.headers["content-type"].startswith("application/json") else [
                json.loads(line[5:]) for line in answer.text.splitlines() if line.startswith("data:") and line[5:].strip()]
            return next(m for m in messages if m.get("id") == request_id)

        await call(1, "flip", {})
        refused = detail(await call(2, "mutable", {"x": "one"}))
        assert (refused["kind"], refused["keyword"]) == ("changed_definition", "widened")
    assert [c["name"] for c in calls(record)] == ["flip"]


def test_check_lock_exit_status_follows_the_refused_classes(record: Path, tmp_path: Path) -> None:
    catalog = json.loads((ROOT / "fixtures" / "catalogs" / "server-filesystem.json").read_text())
    original = tmp_path / "catalog.json"
    original.write_text(json.dumps(catalog))
    lock = tmp_path / "fs.lock.json"
    done = cli("lock", "--catalog", str(original), record=record)
    assert done.returncode == 0
    lock.write_text(done.stdout)
    assert cli("check", "--lock", str(lock), "--catalog", str(original), record=record).returncode == 0

    narrowed = json.loads(json.dumps(catalog))
    read = next(t for t in narrowed["tools"] if t["name"] == "read_text_file")
    read["inputSchema"]["properties"]["path"]["pattern"] = "^/workspace/"  # a new constraint: narrowed
    path = tmp_path / "narrowed.json"
    path.write_text(json.dumps(narrowed))
    done = cli("check", "--lock", str(lock), "--catalog", str(path), record=record)
    assert done.returncode == 0, done.stdout
    assert "lock: read_text_file: narrowed  allowed" in done.stdout
    assert cli("check", "--lock", str(lock), "--refuse-changes", "narrowed", "--catalog", str(path),
               record=record).returncode == 1

    widened = json.loads(json.dumps(catalog))
    write = next(t for t in widened["tools"] if t["name"] == "write_file")
    write["inputSchema"]["required"] = ["path"]  # content no longer required: widened
    path = tmp_path / "widened.json"
    path.write_text(json.dumps(widened))
    done = cli("check", "--json", "--lock", str(lock), "--catalog", str(path), record=record)
    assert done.returncode == 1
    rows = {row["name"]: row for row in json.loads(done.stdout)["lock"]}
    assert rows["write_file"]["kind"] == "widened" and rows["write_file"]["refused"] is True
    assert rows["read_text_file"]["kind"] == "unchanged"


POLICY = """\
version = 1
deny = ["sample", "ask"]
hide = true

[[overlay]]
tools = ["echo"]
schema = { type = "object", properties = { text = { type = "string", pattern = "^[a-z]+$" } } }
"""


async def test_policy_denies_hides_and_tightens(record: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    async with raw_proxy(record, "--policy", str(policy)) as session:
        await session.initialize()
        listing = await session.request(1, "tools/list", {})
        names = [t["name"] for t in listing["result"]["tools"]]
        assert "echo" in names and "sample" not in names and "ask" not in names  # hidden
        denied = detail(await session.request(2, "tools/call", {"name": "sample", "arguments": {"prompt": "x"}}))
        assert (denied["kind"], denied["source"], denied["keyword"]) == ("denied_by_policy", "policy", 'deny "sample"')
        tightened = detail(await session.request(3, "tools/call", {"name": "echo", "arguments": {"text": "Hi!"}}))
        assert (tightened["kind"], tightened["source"], tightened["keyword"]) == ("validation", "policy", "pattern")
        reply = await session.request(4, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert reply["result"]["content"][0]["text"] == "hi"
        server_side = detail(await session.request(5, "tools/call", {"name": "echo", "arguments": {"text": ""}}))
        assert server_side["source"] == "inputSchema"  # the server's own minLength refused first
    assert [c["arguments"] for c in calls(record)] == [{"text": "hi"}]


def test_a_policy_overlay_restricts_server_filesystem_paths_to_a_directory(tmp_path: Path) -> None:
    tools = json.loads((ROOT / "fixtures" / "catalogs" / "server-filesystem.json").read_text())["tools"]
    policy = Policy.from_text(
        '[[overlay]]\ntools = ["read_*", "write_file", "edit_file"]\n'
        'schema = { type = "object", properties = { path = { type = "string", pattern = "^/workspace/" } } }\n',
        "policy.toml")
    catalog = Catalog("contract", OperatorControl(policy=policy))
    catalog.replace(tools)
    gate = Gate()
    assert gate.check({"name": "read_text_file", "arguments": {"path": "/workspace/notes.md"}}, catalog.tools) is None
    refused = gate.check({"name": "read_text_file", "arguments": {"path": "/etc/passwd"}}, catalog.tools)
    assert refused is not None and refused.data["source"] == "policy" and refused.data["keyword"] == "pattern"
    assert refused.data["instancePath"] == "/path"
    # a tool the overlay does not name is untouched
    assert gate.check({"name": "list_directory", "arguments": {"path": "/etc"}}, catalog.tools) is None


def test_a_malformed_policy_is_refused_at_start_naming_the_line(record: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('version = 1\ndeny = ["a"\nhide = true\n')
    done = cli("--policy", str(policy), "--", *upstream_command(), record=record)
    assert done.returncode == 2
    assert "line" in done.stderr and str(policy) in done.stderr and "Traceback" not in done.stderr
    policy.write_text('version = 1\n\n[[overlay]]\ntools = ["echo"]\nschema = 3\n')
    done = cli("--policy", str(policy), "--", *upstream_command(), record=record)
    assert done.returncode == 2 and "line 5" in done.stderr and "schema table" in done.stderr, done.stderr


def test_a_damaged_lock_is_refused_at_start(record: Path, tmp_path: Path, lock_file: Path) -> None:
    document = json.loads(lock_file.read_text())
    document["tools"][0]["description"] = "edited by hand"
    lock_file.write_text(json.dumps(document))
    done = cli("--lock", str(lock_file), "--", *upstream_command(), record=record)
    assert done.returncode == 2 and "digest" in done.stderr and "Traceback" not in done.stderr
