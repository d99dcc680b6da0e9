"""--check-output off|warn|strict in front of real servers whose tools declare an outputSchema.

The servers are the ones pinned in scripts/catalog_servers.json, installed on demand into
.cache/ by scripts/capture_catalog.py and started with their manifest arguments:

- @modelcontextprotocol/server-filesystem (npm): every tool declares an outputSchema;
  list_directory, read_text_file, list_directory_with_sizes and list_allowed_directories
  on the server's scratch directory;
- @modelcontextprotocol/server-everything (npm): its one structured tool,
  get-structured-content;
- mcp-server-time (PyPI) under ``--dialect extended`` (pydantic schemas with ``title``).

Each server is driven twice with the same hand-written JSON-RPC lines: directly, and
through the gate in each mode (with ``--audit-log``). The results must be byte-for-byte
the same JSON as the direct ones (conforming results pass unchanged in every mode), and
nothing may be reported: no output warning on the gate's stderr, no audit line. That the
check was not vacuous is asserted too: every called tool's outputSchema compiles in the
dialect used and the direct structuredContent conforms to it, so `warn` and `strict`
really validated each result.

When a registry cannot be reached (or node/npm is missing), the tests are skipped and the
reason printed, never counted as passed.
"""

from __future__ import annotations

import json
import re
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

import validator
from tests.support import servers
from tests.proxy.conftest import ROOT, RawSession, _drain_stderr

MODES = ("off", "warn", "strict")
TIMEOUT = 90.0


class Session(RawSession):
    async def call(self, request_id: int, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply, _ = await self.receive_until(lambda m: "method" not in m and m.get("id") == request_id, TIMEOUT)
        return reply


@asynccontextmanager
async def process(command: list[str], env: dict[str, str], cwd: str) -> AsyncIterator[Session]:
    """A stdio MCP process (the server itself, or the gate) driven with JSON lines; always reaped."""
    proc = await anyio.open_process(command, env=env, cwd=cwd)
    session = Session(proc)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain_stderr, proc, session)
            try:
                yield session
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await proc.stdin.aclose()
                    except Exception:
                        pass
                    with anyio.move_on_after(15):
                        await proc.wait()
                    if proc.returncode is None:
                        proc.kill()
                        await proc.wait()
                    with anyio.move_on_after(2):
                        while not session.stderr_done:
                            await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()


async def exchange(command: list[str], env: dict[str, str], cwd: str,
                   plan: list[tuple[str, dict]]) -> tuple[list[dict], list[dict], str]:
    """initialize, tools/list, then each call: (listed tools, call results, stderr)."""
    async with process(command, env, cwd) as session:
        init = await session.call(0, "initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "output-evidence", "version": "0"}})
        assert "result" in init, init
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = await session.call(1, "tools/list")
        assert "result" in listed, listed
        results = []
        for i, (name, arguments) in enumerate(plan, start=2):
            reply = await session.call(i, "tools/call", {"name": name, "arguments": arguments})
            assert "result" in reply, reply
            results.append(reply["result"])
    return listed["result"]["tools"], results, session.stderr.decode(errors="replace")


def environment(launch: Any) -> dict[str, str]:
    env = {**os.environ, **launch.env}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    return env


def unchecked_summary(stderr: str) -> set[str]:
    """The tools the gate's startup summary names as having an outputSchema it cannot check."""
    return {line.split("mcp-schema-gate:", 1)[1].split()[0] for line in stderr.splitlines()
            if line.startswith("mcp-schema-gate:   ") and "(outputSchema):" in line}


async def check_server(launch: Any, tmp_path: Path, plan: list[tuple[str, dict]], dialect: str = "contract",
                       unchecked: frozenset[str] = frozenset(), normalise=lambda result: result) -> list[dict]:
    """Direct results, then the gate in each mode: same results, nothing reported. Returns the direct results.

    ``unchecked``: the tools (never called here) whose outputSchema is outside ``dialect``; the
    startup summary of `warn` and `strict` must name exactly those.
    """
    env = environment(launch)
    tools, direct, _ = await exchange(launch.argv(), env, launch.cwd, plan)
    schemas = {t["name"]: t.get("outputSchema") for t in tools}
    for (name, _), result in zip(plan, direct, strict=True):
        assert schemas[name] is not None, f"{launch.name}: {name} declares no outputSchema"
        assert result.get("isError") is not True, f"{launch.name}: {name} failed directly: {result}"
        assert "structuredContent" in result, f"{launch.name}: {name} returned no structuredContent"
        # Not vacuous: the gate can check this schema, and the direct result conforms to it.
        validator.compile(schemas[name], dialect=dialect).validate(result["structuredContent"])
    expected = [normalise(r) for r in direct]
    tmp_path.mkdir(parents=True, exist_ok=True)
    for mode in MODES:
        audit = tmp_path / f"audit-{mode}.jsonl"
        gate = [sys.executable, "-m", "proxy", "--dialect", dialect, "--check-output", mode,
                "--audit-log", str(audit), "--cwd", launch.cwd, "--", *launch.argv()]
        gated_tools, results, stderr = await exchange(gate, env, str(ROOT), plan)
        assert gated_tools == tools, f"{launch.name} [{mode}]: the listing changed through the gate"
        assert [normalise(r) for r in results] == expected, f"{launch.name} [{mode}]: a result changed"
        where = f"{launch.name} [{mode}, {dialect}]"
        assert "does not conform" not in stderr, f"{where}: a result was reported:\n{stderr[-2000:]}"
        for name in {name for name, _ in plan}:
            assert f"outputSchema of tool {name!r} cannot be checked" not in stderr, f"{where}: {stderr[-2000:]}"
        assert unchecked_summary(stderr) == (set() if mode == "off" else set(unchecked)), f"{where}: {stderr}"
        if mode == "off" or not unchecked:
            assert "outputSchema" not in stderr, f"{where}: {stderr[-2000:]}"
        assert not audit.exists() or audit.read_text() == "", f"{launch.name} [{mode}]: {audit.read_text()}"
    return direct


async def test_filesystem_server_results_pass_unchanged(tmp_path: Path) -> None:
    launch = servers.launch("server-filesystem", tmp_path / "work")
    root = Path(launch.cwd)
    (root / "note.txt").write_text("hello from a real server\n")
    (root / "sub").mkdir()
    (root / "sub" / "deep.txt").write_text("deeper\n")
    plan = [
        ("list_directory", {"path": str(root)}),
        ("read_text_file", {"path": str(root / "note.txt")}),
        ("read_text_file", {"path": str(root / "note.txt"), "head": 1}),
        ("list_directory_with_sizes", {"path": str(root), "sortBy": "name"}),
        ("list_allowed_directories", {}),
    ]
    # Under the contract dialect read_media_file's outputSchema (a `const`) cannot be checked: the
    # startup summary says so (its results would be forwarded unchanged); under extended all 14 can.
    direct = await check_server(launch, tmp_path / "contract", plan, unchecked=frozenset({"read_media_file"}))
    again = await check_server(launch, tmp_path / "extended", plan, dialect="extended")
    assert again == direct
    assert direct[1]["structuredContent"] == {"content": "hello from a real server\n"}
    assert "[FILE] note.txt" in direct[0]["structuredContent"]["content"]


async def test_everything_server_structured_content_passes_unchanged(tmp_path: Path) -> None:
    launch = servers.launch("server-everything", tmp_path / "work")
    plan = [("get-structured-content", {"location": city}) for city in ("New York", "Chicago", "Los Angeles")]
    direct = await check_server(launch, tmp_path, plan)
    assert direct[0]["structuredContent"] == {"temperature": 33, "conditions": "Cloudy", "humidity": 82}


DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:\d{2}|Z)?")


def _without_datetimes(result: dict) -> dict:
    """get_current_time answers with the current time: compare everything but the timestamps."""
    return json.loads(DATETIME.sub("<datetime>", json.dumps(result)))


async def test_time_server_results_pass_unchanged_under_extended(tmp_path: Path) -> None:
    """mcp-server-time 2026.10.19 declares an outputSchema for both tools (pydantic: `title`, `$defs`/`$ref`)."""
    launch = servers.launch("mcp-server-time", tmp_path / "work")
    plan = [
        ("get_current_time", {"timezone": "UTC"}),
        ("convert_time", {"source_timezone": "Europe/Paris", "time": "14:00", "target_timezone": "Asia/Tokyo"}),
    ]
    direct = await check_server(launch, tmp_path, plan, dialect="extended", normalise=_without_datetimes)
    assert direct[0]["structuredContent"]["timezone"] == "UTC"
    converted = direct[1]["structuredContent"]
    assert "T14:00:00" in converted["source"]["datetime"] and converted["target"]["timezone"] == "Asia/Tokyo"
