"""What a new user sees: one clear sentence per failure, documented exit statuses, no tracebacks."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.proxy.conftest import ROOT, environment, upstream_command

DEMO = [sys.executable, str(ROOT / "fixtures" / "demo" / "server.py")]
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})


def run(*args: str, stdin: str = "", record: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = environment(record) if record is not None else None
    return subprocess.run([sys.executable, "-m", "proxy", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


def one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr and "ExceptionGroup" not in stderr, stderr
    return lines[-1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_help_opens_with_what_the_gate_does_for_any_server() -> None:
    done = run("--help")
    assert done.returncode == 0
    first = done.stdout.strip().splitlines()[0]
    assert "gatekeeper for MCP tool calls" in first
    assert "--upstream URL" in done.stdout and "--drain-timeout" in done.stdout


def test_a_missing_double_dash_is_understood_and_the_explicit_form_is_shown(record: Path) -> None:
    done = run("--quiet", *upstream_command(), stdin=INIT + "\n", record=record)
    assert json.loads(done.stdout.splitlines()[0])["result"]["serverInfo"]
    assert f"mcp-schema-gate --quiet -- {' '.join(upstream_command())}" in done.stderr


def test_an_unknown_option_before_the_command_is_still_an_error(record: Path) -> None:
    done = run("--no-such-option", *upstream_command(), record=record)
    assert done.returncode == 2 and "--no-such-option" in done.stderr


def test_a_command_that_cannot_start_says_so_in_one_sentence(record: Path) -> None:
    done = run("--", "/no/such/server-binary", stdin=INIT + "\n", record=record)
    assert done.returncode == 127
    line = one_sentence(done.stderr)
    assert "cannot start '/no/such/server-binary'" in line and "check the command" in line
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["id"] == 0 and "cannot be reached" in reply["error"]["message"]  # the client is told too


def test_an_unreachable_upstream_url_exits_non_zero_with_one_sentence(record: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    done = run("--upstream", url, stdin=INIT + "\n", record=record)
    assert done.returncode == 69, (done.returncode, done.stderr)
    line = one_sentence(done.stderr)
    assert "cannot be reached" in line and "check the URL" in line
    reply = json.loads(done.stdout.splitlines()[0])
    assert reply["id"] == 0 and "error" in reply  # the client is told why, too


@pytest.mark.parametrize("target", ["command", "url"])
def test_check_of_a_server_that_cannot_be_listed_is_one_sentence_and_exit_69(record: Path, target: str) -> None:
    if target == "command":
        done = run("check", "--", sys.executable, "-c", "import sys; sys.exit(3)", record=record)
    else:
        done = run("check", "--upstream", f"http://127.0.0.1:{free_port()}/mcp", record=record)
    assert done.returncode == 69, done.stderr
    line = one_sentence(done.stderr)
    assert line.startswith("mcp-schema-gate check: could not list the tools of ") and "check that" in line


def test_check_says_when_the_extended_dialect_would_help() -> None:
    done = run("check", "--catalog", str(ROOT / "fixtures" / "catalogs" / "mcp-server-time.json"))
    assert done.returncode == 1
    assert "2 tools: 0 supported, 2 unsupported" in done.stdout
    assert "2 of the unsupported would be supported with --dialect extended" in done.stdout


def test_the_startup_summary_counts_in_words_and_points_to_extended(record: Path) -> None:
    initialized = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {  # waits for the listing
        "name": "create_todo", "arguments": {"title": "x"}}})
    done = run("--", *DEMO, stdin="\n".join([INIT, initialized, call]) + "\n", record=record)
    assert "2 tools listed, 1 unsupported (dialect contract)" in done.stderr
    assert "1 of the 1 unsupported would be supported with --dialect extended" in done.stderr
