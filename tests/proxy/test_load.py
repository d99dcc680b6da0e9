"""Load: many concurrent calls, valid and invalid interleaved, each answered exactly once.

The gate answers invalid calls itself and forwards valid ones, so under load
two pipelines race for the client's output. What must hold anyway: no reply
lost, none duplicated, none sent to the wrong id ("7" and 7 are different
requests), no invalid call recorded by the upstream, and every valid call
executed exactly once. Both over one stdio session (500 calls in flight) and
over 20 Streamable HTTP sessions of 25 concurrent calls each.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2

from tests.proxy.wire_gates import (
    INITIALIZE,
    INITIALIZED,
    PROTOCOL_VERSION,
    HttpGate,
    StdioGate,
    http_messages,
    recorded_lines,
)

STDIO_CALLS = 500
HTTP_SESSIONS = 20
HTTP_CALLS_PER_SESSION = 25
TIME_LIMIT = 60.0


def call_for(request_id: Any, tag: str, index: int) -> tuple[dict, bool]:
    """A tools/call, every third one invalid (three kinds of invalid, rotating)."""
    path = f"/safe/load/{tag}"
    if index % 3 == 0:
        arguments, valid = [{"path": f"/etc/{tag}"}, {"path": path, "mode": "w"}, {}][index // 3 % 3], False
    else:
        arguments, valid = {"path": path}, True
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "read", "arguments": arguments}}
    return message, valid


def key(request_id: Any) -> tuple[str, Any]:
    return type(request_id).__name__, request_id


def executed_calls(record: Path) -> list[dict]:
    out = []
    for line in recorded_lines(record):
        message = json.loads(line)
        if message.get("method") == "tools/call":
            out.append(message)
    return out


def check_outcome(sent: dict[tuple, tuple[dict, bool]], replies: list[dict], record: Path) -> None:
    got: dict[tuple, list[dict]] = {}
    for reply in replies:
        got.setdefault(key(reply.get("id")), []).append(reply)
    lost = [k for k in sent if k not in got]
    duplicated = {k: len(v) for k, v in got.items() if len(v) > 1}
    stray = [k for k in got if k not in sent]
    assert not lost, f"{len(lost)} replies lost, e.g. {lost[:5]}"
    assert not duplicated, f"duplicated replies: {list(duplicated.items())[:5]}"
    assert not stray, f"replies to ids never sent: {stray[:5]}"
    for k, (message, valid) in sent.items():
        (reply,) = got[k]
        if valid:
            text = reply["result"]["content"][0]["text"]
            assert json.loads(text)["arguments"] == message["params"]["arguments"], (message, reply)
            assert not reply["result"].get("isError"), reply
        else:
            assert reply.get("result", {}).get("isError") is True or "error" in reply, (message, reply)
    executed = [(c["params"]["arguments"].get("path"), json.dumps(c["params"]["arguments"], sort_keys=True))
                for c in executed_calls(record)]
    expected_valid = sorted(m["params"]["arguments"]["path"] for m, valid in sent.values() if valid)
    invalid_seen = [args for path, args in executed if not (isinstance(path, str) and path.startswith("/safe/"))
                    or json.loads(args).keys() != {"path"}]
    assert not invalid_seen, f"invalid calls reached the upstream: {invalid_seen[:5]}"
    executed_paths = sorted(path for path, _ in executed if isinstance(path, str) and path.startswith("/safe/load/"))
    assert executed_paths == expected_valid, (
        f"valid calls executed {len(executed_paths)} times for {len(expected_valid)} calls")


def test_500_concurrent_mixed_calls_on_one_stdio_session_are_each_answered_once(tmp_path: Path) -> None:
    record = tmp_path / "upstream.jsonl"
    gate = StdioGate(record).start()
    try:
        sent: dict[tuple, tuple[dict, bool]] = {}
        lines = []
        for i in range(STDIO_CALLS):
            # Ids n and "n" both occur: distinct requests that must not share a reply.
            request_id: Any = i // 2 if i % 2 == 0 else str(i // 2)
            message, valid = call_for(request_id, f"stdio-{type(request_id).__name__}-{request_id}", i)
            sent[key(request_id)] = (message, valid)
            lines.append(json.dumps(message).encode())
        started = time.monotonic()
        # One write: all 500 are in flight before the first answer is read
        # (a reader thread drains the gate's output meanwhile, so no pipe deadlock).
        gate.process.stdin.write(b"\n".join(lines) + b"\n")
        gate.process.stdin.flush()
        replies = gate.collect_until(lambda out: len(out) >= STDIO_CALLS, TIME_LIMIT)
        elapsed = time.monotonic() - started
        # Anything extra (a duplicate) would arrive before the answer to a final ping.
        gate.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        replies += gate.collect_until(lambda out: any(m.get("id") == "after" for m in out), 10)
        replies = [m for m in replies if m.get("id") != "after"]
        assert elapsed < TIME_LIMIT, elapsed
        check_outcome(sent, replies, record)
    finally:
        gate.close()


async def _open_session(client: httpx2.AsyncClient, url: str) -> str:
    response = await client.post(url, content=json.dumps(INITIALIZE).encode())
    assert response.status_code == 200, response.text
    session = response.headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "mcp-protocol-version": PROTOCOL_VERSION}
    assert (await client.post(url, content=json.dumps(INITIALIZED).encode(), headers=headers)).status_code == 202
    return session


async def test_20_http_sessions_of_25_concurrent_mixed_calls_are_each_answered_once(tmp_path: Path) -> None:
    record = tmp_path / "upstream.jsonl"
    gate = HttpGate(record)  # started, listening; the sessions are opened below
    try:
        limits = httpx2.Limits(max_connections=HTTP_SESSIONS * HTTP_CALLS_PER_SESSION)
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(TIME_LIMIT), limits=limits, headers={
                "accept": "application/json, text/event-stream", "content-type": "application/json"}) as client:
            sessions: list[str] = [""] * HTTP_SESSIONS

            async def open_one(n: int) -> None:
                sessions[n] = await _open_session(client, gate.url)

            async with anyio.create_task_group() as tg:
                for n in range(HTTP_SESSIONS):
                    tg.start_soon(open_one, n)

            sent: dict[tuple, tuple[dict, bool]] = {}
            replies: list[dict] = []
            statuses: list[int] = []

            async def post(session: str, message: dict) -> None:
                response = await client.post(gate.url, content=json.dumps(message).encode(), headers={
                    "mcp-session-id": session, "mcp-protocol-version": PROTOCOL_VERSION})
                statuses.append(response.status_code)
                replies.extend(http_messages(response))

            started = time.monotonic()
            with anyio.fail_after(TIME_LIMIT):
                async with anyio.create_task_group() as tg:
                    for n, session in enumerate(sessions):
                        for i in range(HTTP_CALLS_PER_SESSION):
                            # Per session ids repeat across sessions; make them globally
                            # distinct so one table can check all, int and string alike.
                            request_id: Any = n * 1000 + i if i % 2 == 0 else f"{n}-{i}"
                            message, valid = call_for(request_id, f"http-{n}-{i}", i)
                            sent[key(request_id)] = (message, valid)
                            tg.start_soon(post, session, message)
            elapsed = time.monotonic() - started
        assert all(status == 200 for status in statuses), sorted(set(statuses))
        assert elapsed < TIME_LIMIT, elapsed
        check_outcome(sent, replies, record)
    finally:
        gate.close()
