"""Helpers for the HTTP transport tests: real processes, real sockets on 127.0.0.1, ports the OS picks."""

from __future__ import annotations

import re
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.proxy.conftest import ROOT, environment, params, record, upstream_command  # noqa: F401 (fixture)

HTTP_UPSTREAM = str(Path(__file__).with_name("http_upstream_server.py"))
START_TIMEOUT = 20.0
LISTENING = re.compile(rb"listening on (http://[^ ]+)")
SESSIONLESS_VERSION = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": SESSIONLESS_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}


class Proc:
    """A child process whose stderr is drained (and kept) in the background."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.stderr = b""
        self.stdout = b""

    async def drain(self, stream: Any, attr: str) -> None:
        try:
            async for chunk in stream:
                setattr(self, attr, getattr(self, attr) + chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def wait_for(self, pattern: re.Pattern, attr: str) -> re.Match:
        with anyio.fail_after(START_TIMEOUT):
            while not (match := pattern.search(getattr(self, attr))):
                if self.process.returncode is not None:
                    raise RuntimeError(f"process exited early: {self.stderr.decode(errors='replace')}")
                await anyio.sleep(0.02)
        return match


@asynccontextmanager
async def spawn(command: list[str], env: dict[str, str]):
    process = await anyio.open_process(command, env=env, cwd=str(ROOT))
    proc = Proc(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(proc.drain, process.stderr, "stderr")
            tg.start_soon(proc.drain, process.stdout, "stdout")
            try:
                yield proc
            finally:
                with anyio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.terminate()
                    with anyio.move_on_after(10):
                        await process.wait()
                    if process.returncode is None:
                        process.kill()
                        await process.wait()
                tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()


@asynccontextmanager
async def http_upstream(record: Path, **env: str):
    """The recording test server over HTTP; yields its base URL (http://127.0.0.1:PORT, https with UPSTREAM_TLS_CERT)."""
    async with spawn([sys.executable, HTTP_UPSTREAM], environment(record, **env)) as proc:
        match = await proc.wait_for(re.compile(rb"PORT (\d+)"), "stdout")
        yield f"{'https' if 'UPSTREAM_TLS_CERT' in env else 'http'}://127.0.0.1:{int(match.group(1))}"


def gate_args(upstream: str | None) -> list[str]:
    """Upstream options: None → the stdio test server as COMMAND; a URL → --upstream URL."""
    return ["--", *upstream_command()] if upstream is None else ["--upstream", upstream]


@asynccontextmanager
async def http_gate(record: Path, kind: str, upstream: str | None, *options: str, **env: str):
    """The gate listening on sse:// or http:// 127.0.0.1:0; yields (endpoint URL, Proc)."""
    command = [sys.executable, "-m", "proxy", "--listen", f"{kind}://127.0.0.1:0", *options, *gate_args(upstream)]
    async with spawn(command, environment(record, **env)) as proc:
        match = await proc.wait_for(LISTENING, "stderr")
        yield match.group(1).decode(), proc


def upstream_url(base: str, kind: str) -> str:
    return f"{base}/sse" if kind == "sse" else f"{base}/mcp"


@asynccontextmanager
async def client_for(kind: str, target: Any, record: Path | None = None, token: str | None = None,
                     mode: str = "legacy", **kwargs: Any):
    """An SDK Client over stdio (target: the gate command), SSE or Streamable HTTP (target: the URL)."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    if kind == "stdio":
        assert record is not None
        async with Client(params(target, environment(record)), mode=mode, cache=None, **kwargs) as client:
            yield client
    elif kind == "sse":
        async with Client(sse_client(target, headers=headers), mode=mode, cache=None, **kwargs) as client:
            yield client
    else:
        async with create_mcp_http_client(headers=headers) as http:
            async with Client(streamable_http_client(target, http_client=http), mode=mode, cache=None,
                              **kwargs) as client:
                yield client


def sse_messages(text: str) -> list[dict]:
    """The JSON-RPC messages of an SSE body."""
    import json

    out = []
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:].strip()))
    return out


def answer_messages(reply: Any) -> list[dict]:
    """The JSON-RPC messages of a request POST's answer, one JSON body or an SSE stream."""
    if reply.headers.get("content-type", "").startswith("application/json"):
        return [reply.json()]
    assert reply.headers.get("content-type", "").startswith("text/event-stream"), reply.headers
    return sse_messages(reply.text)


def raw_client(**headers: str) -> httpx2.AsyncClient:
    base = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    return httpx2.AsyncClient(headers={**base, **headers}, timeout=httpx2.Timeout(20.0))


def wait_for_records(predicate, timeout: float = 10.0) -> bool:
    from tests.proxy.conftest import wait_until

    return wait_until(predicate, timeout=timeout)


async def eventually(predicate, timeout: float = 10.0, interval: float = 0.02) -> bool:
    """wait_until without blocking the event loop (the stderr drains keep running)."""
    with anyio.move_on_after(timeout):
        while not predicate():
            await anyio.sleep(interval)
    return bool(predicate())


def sessionless_request(request_id: Any, method: str,
                        params: dict[str, Any] | None = None) -> tuple[dict, dict[str, str]]:
    """A self-contained 2026-07-28 request: its body and the routing headers that must agree with it."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {**(params or {}), "_meta": ENVELOPE}}
    headers = {"mcp-protocol-version": SESSIONLESS_VERSION, "mcp-method": method}
    if method == "tools/call":
        headers["mcp-name"] = body["params"]["name"]
    return body, headers
