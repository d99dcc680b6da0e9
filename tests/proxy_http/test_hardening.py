"""The HTTP listener under hostile or careless use: no 500s, no unauthenticated exposure, no idle piles, slow calls kept alive."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import ROOT, calls, environment, upstream_command
from tests.proxy_http.conftest import http_gate, raw_client

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


async def open_session(http, url: str) -> dict[str, str]:
    reply = await http.post(url, content=json.dumps(INIT))
    assert reply.status_code == 200, reply.text
    headers = {"mcp-session-id": reply.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    await http.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                    headers=headers)
    return headers


async def test_a_get_with_an_unknown_last_event_id_is_a_clear_400_not_a_500(record: Path) -> None:
    async with http_gate(record, "http", None) as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        for last_event_id in ("7", "nope:3", ""):
            reply = await http.get(url, headers={**headers, "accept": "text/event-stream",
                                                 "last-event-id": last_event_id})
            assert reply.status_code == 400, reply.text
            assert "Last-Event-ID" in reply.json()["error"]["message"]


async def test_a_slow_call_s_stream_is_resumed_after_the_connection_drops(record: Path) -> None:
    """The client loses the POST's stream after the priming event and GETs the rest with Last-Event-ID."""
    async with http_gate(record, "http", None) as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        body = json.dumps({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                           "params": {"name": "slow", "arguments": {"steps": 50}}})  # 2.5 s
        event_id = None
        async with http.stream("POST", url, content=body, headers=headers) as reply:
            async for line in reply.aiter_lines():
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                    break  # and drop the connection
        assert event_id is not None and event_id.endswith(":0")  # the priming event
        resumed = await http.get(url, headers={**headers, "accept": "text/event-stream",
                                               "last-event-id": event_id})
        assert resumed.status_code == 200, resumed.text
        messages = [json.loads(line[5:]) for line in resumed.text.splitlines()
                    if line.startswith("data:") and line[5:].strip()]
        assert messages[-1]["id"] == "long" and "slow done" in messages[-1]["result"]["content"][0]["text"]
        again = await http.get(url, headers={**headers, "accept": "text/event-stream", "last-event-id": event_id})
        assert [json.loads(line[5:]) for line in again.text.splitlines()
                if line.startswith("data:") and line[5:].strip()] == messages  # replayed whole, once more


async def test_hostile_frames_over_http_get_400_with_their_id_and_never_reach_the_upstream(record: Path) -> None:
    async with http_gate(record, "http", None) as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        frames = [
            ('{"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"x"},"method":"tools/call",'
             '"params":{"name":"echo","arguments":{"text":""}}}', "e"),
            ('{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"}},'
             '"method":"ping"}', "d"),
            ('{"jsonrpc":"2.0","id":"v","method":"tools/call","params":{"name":"echo","arguments":{"text":"ok"},'
             '"Arguments":{"text":""}}}', "v"),
            ('{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"echo","arguments":{"text":""}}}', 1.0),
        ]
        for body, request_id in frames:
            reply = await http.post(url, content=body, headers=headers)
            assert reply.status_code == 400, (body, reply.text)
            error = reply.json()
            assert error["id"] == request_id and error["error"]["code"] == -32600, (body, error)
    assert calls(record) == []


def test_listening_beyond_loopback_needs_a_token_or_an_explicit_opt_out(record: Path) -> None:
    command = [sys.executable, "-m", "proxy", "--listen", "http://0.0.0.0:0", "--", *upstream_command()]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=environment(record), timeout=30)
    assert done.returncode == 2
    assert "--auth-token" in done.stderr and "--allow-unauthenticated" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def first_stderr_line(record: Path, *options: str) -> str:
    """Start the gate with `options` in front of the test server; its first stderr line (then stop it)."""
    command = [sys.executable, "-m", "proxy", *options, "--", *upstream_command()]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, cwd=ROOT, env=environment(record))
    try:
        return process.stderr.readline().decode()
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_allow_unauthenticated_starts_on_a_wildcard_address(record: Path) -> None:
    line = first_stderr_line(record, "--listen", "http://0.0.0.0:0", "--allow-unauthenticated")
    assert "listening on http://0.0.0.0:" in line, line


async def test_a_connection_that_sends_no_headers_is_closed_after_the_header_timeout(record: Path) -> None:
    async with http_gate(record, "http", None, "--header-timeout", "1") as (url, _):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
            sock.settimeout(10)
            started = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the gate
            assert time.monotonic() - started < 5


async def test_the_header_timeout_counts_from_each_response_so_a_busy_keep_alive_connection_stays_open(
        record: Path) -> None:
    # One timer serves every request of a connection (LazyDeadline): it must not close the connection
    # at a deadline that a later response moved on, and must still close it once the client goes quiet.
    async with http_gate(record, "http", None, "--header-timeout", "1") as (url, _):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(10)
            reader = sock.makefile("rb")
            for _ in range(6):  # 2.4 s of requests, 0.4 s apart: well past the 1 s timeout in all
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                status = reader.readline()
                assert status.startswith(b"HTTP/1.1 200"), status
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                reader.read(length)
                answered = time.monotonic()
                await anyio.sleep(0.4)
            assert reader.read(1) == b""  # then quiet: closed by the gate
            assert 0.9 <= time.monotonic() - answered < 5


async def test_request_headers_past_16_kib_are_refused_and_a_request_just_under_is_served(record: Path) -> None:
    async with http_gate(record, "http", None) as (url, _):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            for _ in range(17):  # 17 KiB of headers, trickled, and no end to them
                sock.sendall(b"X-Filler: " + b"a" * 1012 + b"\r\n")
                await anyio.sleep(0.01)
            sock.settimeout(10)
            answer = b""
            while chunk := sock.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
            assert b"too large" in answer
        async with raw_client() as http:
            reply = await http.post(url, content=json.dumps(INIT), headers={"x-filler": "a" * 12 * 1024})
        assert reply.status_code == 200, reply.text


async def test_connections_beyond_the_cap_get_503(record: Path) -> None:
    async with http_gate(record, "http", None, "--max-connections", "2") as (url, _):
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        try:
            await anyio.sleep(0.3)
            async with raw_client() as http:
                reply = await http.post(url, content=json.dumps(INIT))
            assert reply.status_code == 503, reply.text
        finally:
            for sock in held:
                sock.close()


async def test_a_slow_call_gets_its_headers_within_a_second_and_then_its_reply(record: Path) -> None:
    async with http_gate(record, "http", None) as (url, _), raw_client() as http:
        headers = await open_session(http, url)
        body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                           "params": {"name": "slow", "arguments": {"steps": 120}}})  # 6 s, no progress token
        started = time.monotonic()
        async with http.stream("POST", url, content=body, headers=headers) as reply:
            headers_after = time.monotonic() - started
            assert reply.headers["content-type"].startswith("text/event-stream")
            text = (await reply.aread()).decode()
        assert headers_after < 1.5, headers_after
        # an empty data line is the priming event that makes the stream resumable
        messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        assert messages[-1]["id"] == 9 and "slow done" in messages[-1]["result"]["content"][0]["text"]
        assert ": waiting for the reply" in text and "\nid: " in "\n" + text


@pytest.mark.parametrize("value", ["http://127.0.0.1:0/mcp", "http://127.0.0.1:0/"])
def test_listen_takes_the_form_the_gate_prints(record: Path, value: str) -> None:
    line = first_stderr_line(record, "--listen", value)
    assert "listening on http://127.0.0.1:" in line, line
