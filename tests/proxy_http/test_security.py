"""Refusals on the listening side: each one a clear HTTP status with a JSON-RPC error body."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import calls
from tests.proxy_http.conftest import client_for, http_gate, raw_client

TOKEN = "s3cret-token"
INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})


def refused(reply, status: int, words: str) -> None:
    assert reply.status_code == status, (reply.status_code, reply.text)
    body = reply.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    assert words in body["error"]["message"], body


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_refusals(record: Path, kind: str) -> None:
    async with http_gate(record, kind, None, "--auth-token-env", "GATE_TOKEN", "--max-body-bytes", "2048",
                         GATE_TOKEN=TOKEN) as (url, proc):
        post_url = url if kind == "http" else url.replace("/sse", "/messages/?session_id=0")
        auth = {"authorization": f"Bearer {TOKEN}"}
        async with raw_client() as http:
            # missing or wrong token
            refused(await http.post(post_url, content=INIT), 401, "Bearer")
            refused(await http.post(post_url, content=INIT, headers={"authorization": "Bearer nope"}), 401, "Bearer")
            refused(await http.get(url, headers={"accept": "text/event-stream"}), 401, "Bearer")
            # DNS rebinding: a foreign Origin or Host
            refused(await http.post(post_url, content=INIT, headers={**auth, "origin": "http://evil.example"}),
                    403, "Origin")
            refused(await http.post(post_url, content=INIT, headers={**auth, "host": "evil.example:80"}), 421, "Host")
            # oversized body
            big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"text": "x" * 4096}}})
            reply = await http.post(post_url, content=big, headers=auth)
            assert reply.status_code == 413, reply.text
            if kind == "http":  # a loopback Origin with the token is served
                ok = await http.post(url, content=INIT, headers={**auth, "origin": "http://127.0.0.1:1234"})
                assert ok.status_code == 200, ok.text
                await http.delete(url, headers={**auth, "mcp-session-id": ok.headers["mcp-session-id"]})
        # the SDK client with the token works end to end
        async with client_for(kind, url, token=TOKEN) as client:
            assert (await client.call_tool("echo", {"text": "authorized"})).content[0].text == "authorized"
    assert [c["arguments"] for c in calls(record)] == [{"text": "authorized"}]
    assert TOKEN.encode() not in proc.stderr


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_streamed_body_past_the_limit_is_refused_413_and_one_just_under_is_served(
        record: Path, kind: str) -> None:
    """Chunked, with no Content-Length to refuse it by: the limit holds on the bytes as they arrive."""
    async with http_gate(record, kind, None, "--max-body-bytes", "2048") as (url, _):
        async with client_for(kind, url) as client:  # an open session, so a served body reaches the upstream
            assert (await client.call_tool("echo", {"text": "open"})).content[0].text == "open"
        post_url = url
        headers: dict[str, str] = {}
        if kind == "http":
            async with raw_client() as http:
                opened = await http.post(url, content=INIT)
                assert opened.status_code == 200, opened.text
                headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
                await http.post(url, headers=headers,
                                content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

        def call(text: str) -> bytes:
            return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                               "params": {"name": "echo", "arguments": {"text": text}}}).encode()

        async def chunked(body: bytes):
            for start in range(0, len(body), 512):
                yield body[start:start + 512]

        if kind == "http":
            async with raw_client() as http:
                big = await http.post(post_url, content=chunked(call("x" * 4096)), headers=headers)
                assert big.status_code == 413, big.text
                assert "too large" in big.text
                small = await http.post(post_url, content=chunked(call("y" * 1800)), headers=headers)
                assert small.status_code == 200, small.text
                assert small.json()["result"]["content"][0]["text"] == "y" * 1800
        else:
            async with raw_client() as http:  # the POST is refused before any session lookup
                big = await http.post(url.replace("/sse", "/messages/?session_id=0"),
                                      content=chunked(call("x" * 4096)))
                assert big.status_code == 413, big.text
    assert not any(c["arguments"].get("text", "").startswith("x") for c in calls(record))


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_session_limit(record: Path, kind: str) -> None:
    async with http_gate(record, kind, None, "--max-sessions", "1") as (url, _):
        async with client_for(kind, url) as client:
            assert (await client.call_tool("echo", {"text": "first"})).content[0].text == "first"
            async with raw_client() as http:
                if kind == "http":
                    refused(await http.post(url, content=INIT), 503, "Too many open sessions")
                else:
                    refused(await http.get(url, headers={"accept": "text/event-stream"}), 503, "Too many open sessions")
        # once the first session has ended (its upstream child shut down), there is room for another
        for _ in range(100):
            try:
                async with client_for(kind, url) as client:
                    assert (await client.call_tool("echo", {"text": "second"})).content[0].text == "second"
                break
            except BaseException as exc:  # noqa: BLE001 - only the refusal is retried
                leaf = exc
                while isinstance(leaf, BaseExceptionGroup):
                    leaf = leaf.exceptions[0]
                if "503" not in str(leaf) and "Too many open sessions" not in str(leaf):
                    raise
                await anyio.sleep(0.1)
        else:
            pytest.fail("no room for a new session after the first one ended")
