"""GET /healthz on the HTTP listeners (proxy/listen/health.py), with real processes.

Reachable upstream → 200 without the bearer token; the upstream gone → 503
with a fixed reason that names no host, port or command; still behind the
Host check; no child started and nothing sent upstream by a probe.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import anyio
import httpx2
import pytest

from proxy.listen import health
from proxy.session import UpstreamSpec
from tests.proxy.conftest import records
from tests.proxy_http.conftest import http_gate, http_upstream

TOKEN = "s3cret-health"


def base(endpoint: str) -> str:
    return endpoint.rsplit("/", 1)[0]


async def probe(url: str, method: str = "GET", **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(10.0)) as http:
        return await http.request(method, f"{url}/healthz", headers=headers)


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_reachable_url_upstream_is_ok_without_the_token_and_down_when_it_goes(
        record: Path, kind: str) -> None:
    with anyio.fail_after(60):
        async with http_upstream(record) as upstream_base:
            upstream = f"{upstream_base}/mcp"
            port = upstream_base.rsplit(":", 1)[1]
            async with http_gate(record, kind, upstream, "--auth-token-env", "GATE_TOKEN",
                                 GATE_TOKEN=TOKEN) as (endpoint, proc):
                url = base(endpoint)
                ok = await probe(url)
                assert ok.status_code == 200, ok.text
                assert ok.json() == {"status": "ok", "upstream": "reachable"}
                assert ok.headers["content-type"] == "application/json"
                assert ok.headers["cache-control"] == "no-store"
                # The probe skipped the token only: every other path still wants it.
                async with httpx2.AsyncClient() as http:
                    assert (await http.get(f"{url}/metrics")).status_code == 401
                # The Host check still applies (DNS rebinding), before anything else.
                assert (await probe(url, host="evil.example")).status_code == 421
                assert (await probe(url, "POST")).status_code == 405
                head = await probe(url, "HEAD")
                assert head.status_code == 200 and head.content == b""
                # Probes open no MCP session: the upstream saw no request at all.
                assert records(record, "post") == []
                await stop_upstream(record)
                await anyio.sleep(health.CACHE_SECONDS + 0.1)
                down = await probe(url)
                assert down.status_code == 503
                assert down.json() == {"status": "unavailable", "upstream": "connection refused"}
                assert port not in down.text and "127.0.0.1" not in down.text
                assert TOKEN not in proc.stderr.decode()


async def stop_upstream(record: Path) -> None:
    """SIGTERM the recording upstream (its pid is in its start record) and wait until its port is closed."""
    import signal

    pid = records(record, "start")[0]["pid"]
    os.kill(pid, signal.SIGTERM)
    from tests.proxy.conftest import pid_alive

    with anyio.fail_after(15):
        while pid_alive(pid):
            await anyio.sleep(0.05)


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_stdio_upstream_is_ok_when_its_command_resolves_and_no_child_is_started(
        record: Path, kind: str) -> None:
    with anyio.fail_after(60):
        async with http_gate(record, kind, None) as (endpoint, _):
            for _ in range(3):
                ok = await probe(base(endpoint))
                assert ok.status_code == 200 and ok.json()["upstream"] == "reachable"
    assert records(record, "start") == []  # the test server (the stdio COMMAND) never ran


async def test_a_stdio_command_that_does_not_resolve_is_unavailable(record: Path, tmp_path: Path) -> None:
    missing = "mcp-schema-gate-no-such-server-" + tmp_path.name
    command = [sys.executable, "-m", "proxy", "--listen", "http://127.0.0.1:0", "--", missing, "--flag"]
    from tests.proxy.conftest import environment
    from tests.proxy_http.conftest import LISTENING, spawn

    with anyio.fail_after(60):
        async with spawn(command, environment(record)) as proc:
            endpoint = (await proc.wait_for(LISTENING, "stderr")).group(1).decode()
            down = await probe(base(endpoint))
            assert down.status_code == 503
            assert down.json() == {"status": "unavailable", "upstream": "command not found on PATH"}
            assert missing not in down.text


async def test_an_unreachable_url_upstream_reports_a_fixed_reason() -> None:
    spec = UpstreamSpec(url=f"http://user:pw@127.0.0.1:{closed_port()}/mcp?key=k")
    assert await health.upstream_reason(spec) == "connection refused"


def test_reasons_name_no_detail() -> None:
    refused = ConnectionRefusedError(111, "Connect call failed ('10.0.0.7', 8443)")
    assert health._connect_reason(refused) == "connection refused"
    grouped = OSError("All connection attempts failed")
    grouped.__cause__ = ExceptionGroup("attempts", [refused])
    assert health._connect_reason(grouped) == "connection refused"
    assert health._connect_reason(OSError(113, "No route to host 10.0.0.7")) == "connect failed"
    assert health._connect_reason(TimeoutError()) == "connect timed out"
    assert health._connect_reason(socket.gaierror(-2, "Name or service not known")) == "host name not resolved"


def test_a_stdio_command_by_path_is_checked_relative_to_its_cwd(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    assert health.command_reason(UpstreamSpec(command=["./server.sh"], cwd=str(tmp_path))) == "command not found"
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    assert health.command_reason(UpstreamSpec(command=["./server.sh"], cwd=str(tmp_path))) is None
    assert health.command_reason(UpstreamSpec(command=[str(script)])) is None
    assert health.command_reason(UpstreamSpec(command=[sys.executable, "x.py"])) is None
