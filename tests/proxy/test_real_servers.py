"""Real published MCP servers behind the proxy, installed by the test itself into .cache/.

@modelcontextprotocol/server-filesystem (npm) has schemas inside the contract:
listing, a valid call answered by the real server, an invalid call refused by
the gate. mcp-server-time (PyPI) has pydantic schemas with `title`, outside the
contract: every call is refused as unsupported_capability and the startup
summary says why. When a registry cannot be reached, the tests are skipped and
the reason is printed, never counted as passed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.proxy.conftest import ROOT, params, proxy_command, refusal

CACHE = Path(os.environ.get("MCP_SCHEMA_GATE_TEST_CACHE", ROOT / ".cache" / "real-servers"))
FILESYSTEM = ("@modelcontextprotocol/server-filesystem", "2026.8.31")  # the version fixtures/catalogs captured
TIME = ("mcp-server-time", "2026.10.19")


def _skip(reason: str) -> None:
    print(f"SKIPPED real-server test: {reason}", file=sys.stderr)
    pytest.skip(reason)


def _install(what: str, marker: Path, steps: list[list[str]]) -> None:
    if marker.exists():
        return
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600, cwd=ROOT)
        except (OSError, subprocess.TimeoutExpired) as exc:
            _skip(f"could not install {what}: {exc}")
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            _skip(f"could not install {what} (registry unreachable?): {' | '.join(tail)}")
    marker.write_text("installed\n")


@pytest.fixture(scope="module")
def filesystem_server() -> list[str]:
    if shutil.which("npm") is None or shutil.which("node") is None:
        _skip("node/npm are not installed")
    prefix = CACHE / "npm"
    prefix.mkdir(parents=True, exist_ok=True)
    package = f"{FILESYSTEM[0]}@{FILESYSTEM[1]}"
    _install(package, prefix / f".installed-{FILESYSTEM[1]}", [
        ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--loglevel=error", package]
    ])
    return ["node", str(prefix / "node_modules" / ".bin" / "mcp-server-filesystem")]


@pytest.fixture(scope="module")
def time_server() -> list[str]:
    venv = CACHE / "time-venv"
    _install(f"{TIME[0]}=={TIME[1]}", venv / f".installed-{TIME[1]}", [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{TIME[0]}=={TIME[1]}"],
    ])
    return [str(venv / "bin" / "mcp-server-time")]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


async def _tools(client: Client) -> list[dict]:
    result = await client.list_tools()
    return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in result.tools]


async def test_filesystem_server_behind_the_proxy(filesystem_server: list[str], tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.txt").write_text("hello from a real server\n")
    upstream = [*filesystem_server, str(root)]
    async with Client(params(upstream, _env()), cache=None) as client:
        direct = await _tools(client)
    async with Client(params(proxy_command(upstream=upstream), _env()), cache=None) as client:
        assert await _tools(client) == direct
        assert len(direct) >= 10

        result = await client.call_tool("read_text_file", {"path": str(root / "note.txt")})
        assert not result.is_error
        assert result.content[0].text == "hello from a real server\n"  # answered by the real server

        result = await client.call_tool("read_text_file", {"path": 42})
        assert result.is_error and refusal(result)["kind"] == "validation"
        assert refusal(result)["instancePath"] == "/path"
        result = await client.call_tool("write_file", {"path": str(root / "x.txt")})
        assert result.is_error and refusal(result)["keyword"] == "required"
    assert not (root / "x.txt").exists()  # the refused write never reached the server


async def test_time_server_every_call_is_unsupported(time_server: list[str], tmp_path: Path) -> None:
    errlog = tmp_path / "proxy-stderr.txt"
    with errlog.open("w") as err:
        transport = stdio_client(params(proxy_command(upstream=time_server), _env()), errlog=err)
        async with Client(transport, cache=None) as client:
            names = [t["name"] for t in await _tools(client)]
            assert sorted(names) == ["convert_time", "get_current_time"]
            for name, arguments in (
                ("get_current_time", {"timezone": "UTC"}),
                ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"}),
            ):
                result = await client.call_tool(name, arguments)
                assert result.is_error
                assert refusal(result)["kind"] == "unsupported_capability"
                assert refusal(result)["keyword"] == "title"
    summary = errlog.read_text()
    assert "2 tools listed, 2 unsupported" in summary
    assert "get_current_time: unsupported_capability: title at /title" in summary
