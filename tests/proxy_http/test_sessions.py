"""Many client sessions at once, each with its own upstream child; a session's end ends its child."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.proxy.conftest import calls, pid_alive, records, wait_until
from tests.proxy_http.conftest import client_for, eventually, http_gate, http_upstream, upstream_url

SESSIONS = 20


def alive(pids: list[int]) -> int:
    return sum(1 for pid in pids if pid_alive(pid))


async def test_twenty_concurrent_sessions_without_cross_talk(record: Path) -> None:
    progress: list[list[float]] = [[] for _ in range(SESSIONS)]
    logs: list[list[Any]] = [[] for _ in range(SESSIONS)]
    results: dict[int, list[str]] = {i: [] for i in range(SESSIONS)}
    opened = [anyio.Event() for _ in range(SESSIONS)]
    worked = [anyio.Event() for _ in range(SESSIONS)]
    go = anyio.Event()
    close = [anyio.Event() for _ in range(SESSIONS)]
    probe: dict[int, str] = {}

    async def session(i: int, url: str) -> None:
        """One client session in its own task (its context must be left in the task that entered it)."""
        steps = 1 + i % 4

        async def on_log(params: Any) -> None:
            logs[i].append(params.data)

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress[i].append(value)

        async with client_for("http", url, logging_callback=on_log) as client:
            opened[i].set()
            await go.wait()
            for k in range(3):
                results[i].append((await client.call_tool("echo", {"text": f"s{i}-{k}"})).content[0].text)
                await anyio.sleep(0)
                if k == 1:
                    await client.call_tool("slow", {"steps": steps}, progress_callback=on_progress)
                bad = await client.call_tool("echo", {"text": ""})
                assert bad.is_error
            worked[i].set()
            await close[i].wait()
            if i == 1:
                probe[i] = (await client.call_tool("echo", {"text": "still here"})).content[0].text
        # leaving the context DELETEs the session

    async with http_gate(record, "http", None, "--quiet") as (url, proc):
        with anyio.fail_after(90):
            async with anyio.create_task_group() as tg:
                for i in range(SESSIONS):
                    tg.start_soon(session, i, url)
                for event in opened:
                    await event.wait()
                assert wait_until(lambda: len(records(record, "start")) == SESSIONS, timeout=30)
                pids = [r["pid"] for r in records(record, "start")]
                assert alive(pids) == SESSIONS
                go.set()  # every session works at once, calls interleaved
                for event in worked:
                    await event.wait()
                for i in range(SESSIONS):
                    assert results[i] == [f"s{i}-{k}" for k in range(3)]
                    assert progress[i] == list(range(1, 2 + i % 4))
                # logs travel on each session's own GET stream; none may be foreign
                assert wait_until(lambda: all(len(logs[i]) >= 1 + i % 4 for i in range(SESSIONS)), timeout=10)
                await anyio.sleep(0.2)
                assert [len(entries) for entries in logs] == [1 + i % 4 for i in range(SESSIONS)]
                # closing one session (DELETE) ends exactly one upstream child
                close[0].set()
                await anyio.to_thread.run_sync(lambda: wait_until(lambda: alive(pids) == SESSIONS - 1, timeout=15))
                await anyio.sleep(0.3)
                assert alive(pids) == SESSIONS - 1
                for event in close[1:]:
                    event.set()
            assert probe[1] == "still here"  # the others kept working
            # every session closed: every child gone, the gate itself still up
            assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: alive(pids) == 0, timeout=20))
            assert proc.process.returncode is None
    assert len([c for c in calls(record) if c["name"] == "echo"]) == SESSIONS * 3 + 1


@pytest.mark.parametrize("kind", ["sse", "http"])
async def test_client_gone_or_idle_ends_the_upstream_child(record: Path, kind: str) -> None:
    """SSE: the client drops its connection. Streamable HTTP: the client never DELETEs, the idle timeout fires."""
    async with http_gate(record, kind, None, "--idle-timeout", "1") as (url, proc):
        if kind == "http":
            from tests.proxy_http.conftest import raw_client
            from tests.proxy_http.test_streams import open_raw_session

            async with raw_client() as http:
                await open_raw_session(http, url)  # and walk away without DELETE
        else:
            async with client_for(kind, url) as client:
                assert (await client.call_tool("echo", {"text": "bye"})).content[0].text == "bye"
        assert wait_until(lambda: len(records(record, "start")) == 1, timeout=15)
        pid = records(record, "start")[0]["pid"]
        assert wait_until(lambda: not pid_alive(pid), timeout=15)
        if kind == "http":
            assert await eventually(lambda: b"idle for 1.0s, closed" in proc.stderr, timeout=5), proc.stderr


@pytest.mark.parametrize("listen", ["sse", "http", "idle"])
async def test_a_session_end_deletes_its_streamable_http_upstream_session(record: Path, listen: str) -> None:
    """The client leaves (SSE: drops the stream; http: DELETE; idle: walks away) -> the gate DELETEs upstream."""
    kind = "http" if listen == "idle" else listen
    async with http_upstream(record) as base, http_gate(record, kind, upstream_url(base, "http"),
                                                         "--idle-timeout", "1") as (url, proc):
        if listen == "idle":
            from tests.proxy_http.conftest import raw_client
            from tests.proxy_http.test_streams import open_raw_session

            async with raw_client() as http:
                await open_raw_session(http, url)
        else:
            async with client_for(kind, url) as client:
                assert (await client.call_tool("echo", {"text": "x"})).content[0].text == "x"
        assert await eventually(lambda: len(records(record, "delete")) == 1, timeout=15), proc.stderr
    (delete,) = records(record, "delete")
    assert delete["session"] and delete["status"] in (200, 204), delete
    assert len(records(record, "delete")) == 1  # exactly one: the gate ends each upstream session once


@pytest.mark.parametrize("upstream_kind", ["sse", "http"])
async def test_an_unreachable_upstream_is_reported_to_the_client(record: Path, upstream_kind: str) -> None:
    import socket

    from mcp.shared.exceptions import MCPError

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/{'sse' if upstream_kind == 'sse' else 'mcp'}"
    async with http_gate(record, "http", url) as (gate_url, proc):
        with anyio.fail_after(20), pytest.raises(BaseException) as caught:
            async with client_for("http", gate_url):
                pass
        error = caught.value
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        assert isinstance(error, MCPError), repr(error)
        assert "unreachable" in str(error) or "cannot be reached" in str(error), str(error)
        # the gate itself keeps serving
        assert proc.process.returncode is None


@pytest.mark.parametrize("kind", ["sse", "http"])
async def test_sigterm_closes_live_sessions_and_their_children(record: Path, kind: str) -> None:
    import signal

    async with http_gate(record, kind, None) as (url, proc):
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                connected = anyio.Event()

                async def hold_session() -> None:
                    try:
                        async with client_for(kind, url) as client:
                            await client.call_tool("echo", {"text": "live"})
                            connected.set()
                            await anyio.sleep_forever()
                    except BaseException:  # the gate goes away under the client
                        pass

                tg.start_soon(hold_session)
                await connected.wait()
                pid = records(record, "start")[0]["pid"]
                assert pid_alive(pid)
                proc.process.send_signal(signal.SIGTERM)
                assert await proc.process.wait() == 128 + signal.SIGTERM
                assert await eventually(lambda: not pid_alive(pid), timeout=10)
                tg.cancel_scope.cancel()
        assert b"closing every session" in proc.stderr
