"""Shared helpers for the proxy's end-to-end tests: real processes, real pipes."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = str(Path(__file__).with_name("upstream_server.py"))


def upstream_command() -> list[str]:
    return [sys.executable, UPSTREAM]


def proxy_command(*options: str, upstream: list[str] | None = None) -> list[str]:
    return [sys.executable, "-m", "proxy", *options, "--", *(upstream or upstream_command())]


def environment(record: Path, page_size: int = 0, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(UPSTREAM_RECORD=str(record), UPSTREAM_PAGE_SIZE=str(page_size), **extra)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def params(command: list[str], env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(ROOT))


def records(path: Path, event: str | None = None) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if event is None or r.get("event") == event]


def calls(path: Path) -> list[dict[str, Any]]:
    return records(path, "call")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers signal 0; it is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


@pytest.fixture
def record(tmp_path: Path) -> Path:
    path = tmp_path / "upstream-record.jsonl"
    yield path
    # No orphans: every upstream this test started must be gone by now.
    for start in records(path, "start"):
        pid = start["pid"]
        if not wait_until(lambda pid=pid: not pid_alive(pid), timeout=5):
            os.kill(pid, signal.SIGKILL)
            pytest.fail(f"upstream test server {pid} outlived its test")


class RawSession:
    """The proxy as a subprocess driven with hand-written JSON lines (for what the SDK client cannot send)."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self._buffer = b""
        self.stderr = b""
        self.stderr_done = False

    async def send(self, obj: Any) -> None:
        line = obj if isinstance(obj, (str, bytes)) else json.dumps(obj)
        data = line.encode() if isinstance(line, str) else line
        await self.process.stdin.send(data + b"\n")

    async def receive_line(self, timeout: float = 10.0) -> str:
        with anyio.fail_after(timeout):
            while b"\n" not in self._buffer:
                chunk = await self.process.stdout.receive()
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    async def receive(self, timeout: float = 10.0) -> dict[str, Any]:
        return json.loads(await self.receive_line(timeout))  # stdout carries only protocol messages

    async def receive_until(self, predicate, timeout: float = 10.0) -> tuple[dict, list[dict]]:
        seen = []
        with anyio.fail_after(timeout):
            while True:
                message = await self.receive(timeout)
                if predicate(message):
                    return message, seen
                seen.append(message)

    async def request(self, request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        reply, _ = await self.receive_until(lambda m: "id" in m and "method" not in m and m["id"] == request_id)
        return reply

    async def initialize(self) -> None:
        reply = await self.request(
            0,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        assert "result" in reply, reply
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def _drain_stderr(process, session: RawSession) -> None:
    try:
        async for chunk in process.stderr:
            session.stderr += chunk
    finally:
        session.stderr_done = True


@asynccontextmanager
async def raw_proxy(record: Path, *options: str, page_size: int = 0, upstream: list[str] | None = None, **env: str):
    """async with raw_proxy(record, *options) as session: ... — always reaps the process."""
    command = proxy_command(*options, upstream=upstream)
    process = await anyio.open_process(command, env=environment(record, page_size, **env), cwd=str(ROOT))
    session = RawSession(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_drain_stderr, process, session)
            try:
                yield session
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await process.stdin.aclose()
                    except Exception:
                        pass
                    with anyio.move_on_after(15):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                        await process.wait()
                    with anyio.move_on_after(2):
                        while not session.stderr_done:
                            await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()


def refusal(result: Any) -> dict[str, Any]:
    """The gate's machine-readable refusal in an SDK CallToolResult.

    It always travels in `_meta`; it is also the structuredContent only when
    the tool declares no outputSchema (which it would violate).
    """
    from proxy.core.gate import REFUSAL_META_KEY

    assert result.is_error, result
    detail = (result.meta or {})[REFUSAL_META_KEY]
    if result.structured_content is not None:
        assert result.structured_content == detail
    return detail
