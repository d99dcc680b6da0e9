"""The command line: --help, `check --catalog`, `check -- COMMAND`, --json and exit statuses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proxy import cli
from tests.proxy.conftest import ROOT, calls, environment, raw_proxy, upstream_command

TOOLS = [
    {"name": "good", "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}},
    {"name": "with_title", "inputSchema": {"type": "object", "title": "T", "properties": {}}},
    {"name": "with_ref", "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/x"}}}},
]


def run(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "proxy", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=timeout
    )


def test_help_documents_every_option_with_an_example_client_config() -> None:
    done = run("--help")
    assert done.returncode == 0
    for option in ("--reject-as", "--audit-log", "--audit-arguments", "--dialect", "--cwd", "--quiet", "check"):
        assert option in done.stdout
    config = json.loads(re.search(r"^\{.*?^\}", done.stdout, re.S | re.M).group(0))
    server = config["mcpServers"]["filesystem"]
    assert server["command"] == "mcp-schema-gate" and "--" in server["args"]
    assert run("check", "--help").returncode == 0


def test_console_script_is_declared() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    assert 'mcp-schema-gate = "proxy.cli:main"' in text


def test_missing_command_is_a_usage_error() -> None:
    done = run()
    assert done.returncode == 2 and "COMMAND" in done.stderr


@pytest.mark.parametrize(
    "document",
    [
        {"server": "demo", "package": "demo", "version": "1", "registry": "npm", "protocolVersion": "2025-11-25",
         "tools": TOOLS},
        {"tools": TOOLS},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": TOOLS}},
    ],
    ids=["fixture", "bare-result", "jsonrpc-response"],
)
def test_check_catalog_reports_each_tool(tmp_path: Path, document: dict) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(document))
    done = run("check", "--catalog", str(path))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert re.search(r"good\s+supported", done.stdout)
    assert any("with_title" in line and "title at /title" in line and "unsupported_capability" in line for line in lines)
    assert any("with_ref" in line and "$ref at /properties/a/$ref" in line for line in lines)
    assert "3 tools: 1 supported, 2 unsupported" in done.stdout

    done = run("check", "--json", "--catalog", str(path))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["summary"] == {"total": 3, "supported": 1, "unsupported": 2}
    rows = {row["name"]: row for row in report["tools"]}
    assert rows["good"] == {"name": "good", "supported": True, "outputSchema": "none"}
    assert rows["with_title"]["error"]["keyword"] == "title"
    assert rows["with_title"]["error"]["schemaPath"] == "/title"
    assert set(rows["with_ref"]["error"]) == {"kind", "instancePath", "schemaPath", "keyword", "message"}


def test_check_catalog_all_supported_exits_zero(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tools": TOOLS[:1]}))
    assert run("check", "--catalog", str(path)).returncode == 0


def test_check_dialect_is_passed_to_the_validator(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tools": TOOLS[:1]}))
    assert run("check", "--dialect", "extended", "--catalog", str(path)).returncode == 0
    assert run("check", "--dialect", "bogus", "--catalog", str(path)).returncode == 2


def test_check_rejects_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text('{"not": "a catalog"}')
    done = run("check", "--catalog", str(path))
    assert done.returncode == 2 and "tools" in done.stderr
    assert run("check").returncode == 2


def test_check_command_lists_every_page_of_a_live_server(tmp_path: Path) -> None:
    env = environment(tmp_path / "record.jsonl", page_size=4)
    done = run("check", "--json", "--", *upstream_command(), env=env)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"] == {"total": 11, "supported": 10, "unsupported": 1}
    (bad,) = [row for row in report["tools"] if not row["supported"]]
    assert bad["name"] == "titled" and bad["error"]["keyword"] == "title"


def test_check_says_which_dialect_judged_each_tool(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tools": TOOLS}))
    contract = run("check", "--catalog", str(path))
    assert contract.returncode == 1 and "(dialect contract)" in contract.stdout
    extended = run("check", "--json", "--dialect", "extended", "--catalog", str(path))
    doc = json.loads(extended.stdout)
    assert doc["dialect"] == "extended"
    # title is an annotation there; the dangling local $ref is still refused (malformed)
    assert {t["name"]: t["supported"] for t in doc["tools"]} == {"good": True, "with_title": True, "with_ref": False}


def test_check_survives_a_reader_that_leaves(tmp_path: Path) -> None:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tools": TOOLS * 200}))
    done = subprocess.run(f"{sys.executable} -m proxy check --json --catalog {path} | head -c 10",
                          shell=True, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


@pytest.mark.parametrize("listen", ["stdio", "sse://127.0.0.1:0"])
def test_json_response_outside_streamable_http_listening_is_a_usage_error(listen: str) -> None:
    done = run("--listen", listen, "--json-response", "--", *upstream_command())
    assert done.returncode == 2 and "--json-response applies to --listen http://" in done.stderr
    assert "--json-response" in run("--help").stdout


@pytest.mark.parametrize(("choice", "uvloop_loaded"), [("auto", True), ("uvloop", True), ("asyncio", False)])
async def test_event_loop_choice_decides_whether_uvloop_runs_and_calls_are_answered_either_way(
        record: Path, choice: str, uvloop_loaded: bool) -> None:
    async with raw_proxy(record, "--event-loop", choice) as session:
        await session.initialize()
        reply = await session.request(1, "tools/call", {"name": "mutable", "arguments": {"x": 1}})
        assert reply["result"]["isError"] is False, reply
        refused = await session.request(2, "tools/call", {"name": "mutable", "arguments": {"x": "one"}})
        assert refused["result"]["isError"] is True, refused
        maps = Path(f"/proc/{session.process.pid}/maps").read_text()
        assert ("uvloop" in maps) is uvloop_loaded, f"--event-loop {choice}: uvloop loaded is not {uvloop_loaded}"
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}]


def test_event_loop_uvloop_without_uvloop_installed_is_a_usage_error_that_says_what_to_do(monkeypatch) -> None:
    monkeypatch.setattr(cli.importlib.util, "find_spec", lambda name: None)
    assert cli._loop_options("auto") == {} and cli._loop_options("asyncio") == {}
    with pytest.raises(cli.UsageError, match="uvloop is not installed here; install it .* or use --event-loop asyncio"):
        cli._loop_options("uvloop")
