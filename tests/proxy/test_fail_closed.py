"""Fail closed beyond the wire rule: stale and duplicate schemas, and every request answered however the gate ends.

The wire rule itself (parser differentials) is tests/proxy/test_wire_differential.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.proxy.conftest import ROOT, calls, environment, proxy_command, raw_proxy, records


def is_reply_to(request_id):
    return lambda m: "method" not in m and m.get("id") == request_id


async def test_calls_sent_while_a_relisting_is_pending_use_the_new_schema(record: Path) -> None:
    """After list_changed tightens a schema, no call is checked against the superseded one."""
    async with raw_proxy(record, UPSTREAM_LIST_DELAY="1.5") as session:
        await session.initialize()
        assert (await session.request(1, "tools/call", {"name": "mutable", "arguments": {"x": 1}}))["result"]
        await session.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "flip"}})
        await anyio.sleep(0.5)  # the upstream has flipped and announced it; the gate's relisting takes 1.5 s
        for n in range(20):
            await session.send({"jsonrpc": "2.0", "id": f"c{n}", "method": "tools/call",
                                "params": {"name": "mutable", "arguments": {"x": 1}}})
        replies = {}
        with anyio.fail_after(20):
            while len(replies) < 21:
                message = await session.receive()
                if "id" in message and "method" not in message:
                    replies[message["id"]] = message
        for n in range(20):
            reply = replies[f"c{n}"]
            assert reply["result"]["isError"] is True, reply  # x must now be a string
            assert reply["result"]["structuredContent"]["keyword"] == "type"
    assert [c["arguments"] for c in calls(record) if c["name"] == "mutable"] == [{"x": 1}]  # only the first


async def test_a_tool_listed_twice_with_different_schemas_is_unsupported(record: Path) -> None:
    async with raw_proxy(record, UPSTREAM_DUPLICATE="1") as session:
        await session.initialize()
        for request_id, arguments in ((1, {"text": "hi"}), (2, {"text": "hi", "extra": 1})):
            reply = await session.request(request_id, "tools/call", {"name": "echo", "arguments": arguments})
            detail = reply["result"]["structuredContent"]
            assert detail["kind"] == "unsupported_capability", detail
            assert "more than once" in reply["result"]["content"][0]["text"]
    assert [c for c in calls(record) if c["name"] == "echo"] == []


async def test_unknown_tools_called_one_at_a_time_cost_one_listing(record: Path) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        for n in range(40):
            reply = await session.request(n + 1, "tools/call", {"name": f"nope-{n}", "arguments": {}})
            assert reply["error"]["code"] == -32602
    # The startup listing, and at most one more per refresh interval for the whole run.
    assert len(records(record, "list")) <= 3, records(record, "list")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_answers_every_call_in_flight_once_and_stops_the_server(record: Path, signum: int) -> None:
    async with raw_proxy(record) as session:
        await session.initialize()
        for request_id in ("a", 7):
            await session.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                                "params": {"name": "slow", "arguments": {"steps": 1000}}})
        with anyio.fail_after(10):
            while len(calls(record)) < 2:
                await anyio.sleep(0.02)
        session.process.send_signal(signum)
        answers: list[dict] = []
        with anyio.fail_after(15):
            try:
                while True:
                    message = await session.receive()
                    if "id" in message and "method" not in message:
                        answers.append(message)
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
        with anyio.fail_after(15):
            status = await session.process.wait()
    assert sorted(str(a["id"]) for a in answers) == ["7", "a"]  # each exactly once
    assert all(a["error"]["code"] == -32603 and "shutting down" in a["error"]["message"] for a in answers)
    assert status == 128 + signum
    lines = [line for line in session.stderr.decode().splitlines() if "received signal" in line]
    assert len(lines) == 1 and signal.Signals(signum).name in lines[0]


async def test_the_drain_timeout_answers_a_hanging_call_before_the_gate_exits(record: Path) -> None:
    async with raw_proxy(record, "--drain-timeout", "1") as session:
        await session.initialize()
        await session.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                            "params": {"name": "slow", "arguments": {"steps": 1000}}})
        with anyio.fail_after(10):
            while not calls(record):
                await anyio.sleep(0.02)
        await session.process.stdin.aclose()
        with anyio.fail_after(10):
            reply, _ = await session.receive_until(is_reply_to(5))  # after the call's progress notifications
            status = await session.process.wait()
    assert reply["id"] == 5 and reply["error"]["code"] == -32603
    assert "after the client closed its input" in reply["error"]["message"]
    assert status == 0
    assert b"1 request(s) still unanswered 1 s after the client closed its input" in session.stderr


async def test_a_request_method_sent_as_a_notification_is_dropped_and_audited(record: Path, tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    async with raw_proxy(record, "--audit-log", str(audit)) as session:
        await session.initialize()
        await session.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add",
                                                                                 "arguments": {"a": 1, "b": 2}}})
        reply = await session.request(1, "ping")  # everything before it has been handled
        assert reply["result"] == {}
    assert calls(record) == []
    assert b"dropped a tools/call sent as a notification" in session.stderr
    entries = [line for line in audit.read_text().splitlines() if "notification_request" in line]
    assert len(entries) == 1 and '"tool": "add"' in entries[0]


def test_a_stdin_of_dev_null_ends_cleanly_without_a_traceback(record: Path) -> None:
    with open(os.devnull, "rb") as devnull:
        done = subprocess.run(proxy_command(), stdin=devnull, capture_output=True, env=environment(record),
                              cwd=ROOT, timeout=30)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
